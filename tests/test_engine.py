"""The serving engine's start-up budget (vLLM V1's memory profiling), by hand and as properties."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import engine, gpus, memory, models
from helpers.units import GiB, MiB


def test_llama3_70b_fp8_on_two_l40s_by_hand():
    """Each L40S (48 GiB, of which ECC keeps 1/16: nvidia-smi prints 46,068 MiB) may use 90 % of
    what it reports: 40.5 GiB. Its half of the FP8 weights (embeddings and head stay 16-bit), the
    activations of a 2,048-token profile pass (four hidden-size vectors a token whole on each GPU,
    the MLP's two halves split in two) with 256 rows of logits, and the CUDA context leave the KV
    cache, in 16-token blocks of 80 layers x 4 KV heads x 128 x 2 bytes."""
    m, l40s = models.get("llama-3-70b"), gpus.get("L40S")
    b = engine.budget(m, l40s, tp=2, max_model_len=32768, weight_dtype="fp8")
    weights = memory.quantized_weight_bytes(m, "fp8") / 2
    activations = 2048 * (4 * 8192 + 2 * 28672 / 2) * 2 + 256 * 128256 * 4
    cache = 46068 * MiB * 0.9 - weights - activations - memory.RUNTIME_OVERHEAD
    per_token = 2 * 80 * 4 * 128 * 1
    assert b.weights == pytest.approx(weights) and b.activations == pytest.approx(activations)
    assert b.kv_tokens == int(cache // (16 * per_token)) * 16
    assert b.starts and b.max_concurrency == pytest.approx(b.kv_tokens / 32768)
    assert "GPU KV cache size" in b.message
    assert b.slack == pytest.approx(46068 * MiB * 0.1) and b.reserved == pytest.approx(48 * GiB - 46068 * MiB)


def test_vllm_085s_kv_cache_on_four_a10s():
    """vLLM 0.8.5 (V1) logged 'GPU KV cache size: 198,784 tokens' for Qwen3-30B-A3B on 4 x A10 with
    a max_model_len of 8,192 (github.com/vllm-project/vllm/issues/17469), its default 90 % of the
    23,028 MiB an A10 reports. The budget comes within 1 %; on the datasheet's 24 GiB it was 30 % over."""
    b = engine.budget("qwen3-30b-a3b", "A10", tp=4, max_model_len=8192)
    assert b.kv_tokens == pytest.approx(198_784, rel=0.01)
    nominal = engine.budget("qwen3-30b-a3b", dataclasses.replace(gpus.get("A10"), reported_memory_bytes=24 * GiB), tp=4,
                            max_model_len=8192)
    assert nominal.kv_tokens > 1.25 * 198_784


def test_refusal_reads_like_vllms_and_names_what_would_start():
    b = engine.budget("llama-3-70b", "L40S", tp=2, max_model_len=131072, weight_dtype="fp8")
    assert not b.starts
    assert b.message.startswith("To serve at least one request with the model's max seq len (131,072)")
    assert engine.budget("llama-3-70b", "L40S", tp=2, max_model_len=b.longest_max_model_len, weight_dtype="fp8").starts
    assert not engine.budget("llama-3-70b", "L40S", tp=2, max_model_len=b.longest_max_model_len + 1,
                             weight_dtype="fp8").starts
    none = engine.budget("llama-3-70b", "H100", tp=1)
    assert none.kv_tokens == 0 and not none.starts and none.message.startswith("no memory for the KV cache")


def test_large_gpus_profile_a_larger_batch():
    """vLLM's OpenAI server: 8,192 tokens and 1,024 sequences on GPUs of 70 GiB or more except the
    A100, 2,048 and 256 elsewhere (EngineArgs.get_batch_defaults)."""
    assert engine.default_batch(gpus.get("H100")) == (8192, 1024)
    assert engine.default_batch(gpus.get("A100 80GB")) == (2048, 256)
    assert engine.default_batch(gpus.get("L40S")) == (2048, 256)


@settings(max_examples=50, deadline=None)
@given(model=st.sampled_from(["llama-3-8b", "llama-3-70b", "mixtral-8x7b", "llama-2-7b"]),
       gpu=st.sampled_from(["H100-SXM5-80GB", "L40S-48GB", "RTX-4090-24GB", "A100-SXM4-40GB"]),
       tp=st.sampled_from([1, 2, 4, 8]), length=st.integers(1, 200_000), more=st.integers(1, 100_000),
       util=st.floats(0.5, 0.98), dtype=st.sampled_from(["bf16", "fp8", "int4"]))
def test_more_memory_never_hurts_and_longer_never_starts_where_shorter_fails(model, gpu, tp, length, more, util, dtype):
    kw = dict(tp=tp, weight_dtype=dtype)
    b = engine.budget(model, gpu, max_model_len=length, gpu_memory_utilization=util, **kw)
    longer = engine.budget(model, gpu, max_model_len=length + more, gpu_memory_utilization=util, **kw)
    assert not longer.starts or b.starts
    looser = engine.budget(model, gpu, max_model_len=length, gpu_memory_utilization=min(0.99, util + 0.01), **kw)
    assert looser.kv_tokens >= b.kv_tokens and b.kv_tokens % engine.BLOCK_SIZE == 0


@pytest.mark.parametrize("kwargs,match", [
    (dict(max_model_len=0), "max_model_len"), (dict(gpu_memory_utilization=1.5), "gpu_memory_utilization"),
    (dict(tp=3), "tp"), (dict(weight_dtype="q4"), "weight_dtype"), (dict(kv_dtype="int4"), "kv_dtype"),
    (dict(max_num_seqs=0), "max_num_seqs"),
])
def test_bad_input_is_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        engine.budget("llama-3-8b", "H100", **kwargs)
