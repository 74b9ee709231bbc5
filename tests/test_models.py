from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import models


@pytest.mark.parametrize("name", models.names())
def test_shape_gives_published_count(name):
    m = models.get(name)
    assert m.params_from_shape() == pytest.approx(m.n_params, rel=0.03)
    # publishers count active parameters with the input embedding (Mixtral) or without it, as a
    # lookup rather than a matrix product (gpt-oss): either convention within 3 %
    active = m.params_from_shape(active=True)
    assert m.n_active_params == pytest.approx(active, rel=0.03) or \
        m.n_active_params == pytest.approx(active - m.vocab_size * m.d_model, rel=0.03)
    assert m.source


def test_presets_cover_reference_models():
    expected = {"gpt2-xl", "gpt3-175b", "gpt-j-6b", "opt-13b", "opt-175b", "bloom-176b", "llama-7b", "llama-13b",
                "llama-33b", "llama-65b", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b",
                "llama-3.1-405b", "mistral-7b", "falcon-40b", "mpt-7b", "qwen2.5-72b", "mixtral-8x7b"}
    assert expected <= set(models.names())


def test_gqa_and_moe():
    llama2 = models.get("llama-2-70b")
    assert (llama2.n_kv_heads, llama2.kv_dim) == (8, 1024)
    mixtral = models.get("mixtral-8x7b")
    assert mixtral.is_moe and mixtral.n_active_params < mixtral.n_params / 3


@pytest.mark.parametrize("alias", ["Llama 2 70B", "LLAMA-2-70B", "llama2 70b"])
def test_aliases(alias):
    assert models.get(alias).name == "llama-2-70b"


def test_unknown_model():
    with pytest.raises(ValueError, match="unknown model 'llama-4-70b'; closest known: .*llama"):
        models.get("llama-4-70b")


def test_block_must_be_a_known_arrangement():
    with pytest.raises(ValueError, match="block=.fused. is not supported; choose one of sequential, parallel, parallel two-norm"):
        replace(models.get("gpt-j-6b"), block="fused")


@given(st.floats(min_value=1e8, max_value=1e13))
def test_dense_shape_matches_any_size(n):
    m = models.dense(n)
    assert m.n_params == n
    assert m.params_from_shape() == pytest.approx(n, rel=0.05)
    assert m.d_model % m.n_heads == 0 and m.n_layers >= 1


@pytest.mark.parametrize("bad", [0, -1, 1e5, 1e14, float("nan"), "7B"])
def test_dense_rejects_bad_sizes(bad):
    with pytest.raises(ValueError, match="n_params"):
        models.dense(bad)


@given(st.floats(min_value=1e8, max_value=1e13))
def test_dense_heads_split_over_eight_gpus(n):
    assert models.dense(n).n_heads % 8 == 0
