"""models.from_config against hand calculations, one per attention and MLP type."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from helpers import flops, memory, models

LLAMA3_8B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
             "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
             "max_position_embeddings": 8192, "tie_word_embeddings": False}
# DeepSeek-V3's attention and MoE fields (config.json of deepseek-ai/DeepSeek-V3)
DEEPSEEK_V3 = {"model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
               "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
               "num_key_value_heads": 128, "n_routed_experts": 256, "n_shared_experts": 1,
               "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_layer_freq": 1, "kv_lora_rank": 512,
               "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
               "vocab_size": 129280, "max_position_embeddings": 163840, "tie_word_embeddings": False,
               "num_nextn_predict_layers": 1}
GPT_OSS_120B = {"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 36,
                "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 128,
                "num_experts_per_tok": 4, "sliding_window": 128, "vocab_size": 201088,
                "max_position_embeddings": 131072, "tie_word_embeddings": False,
                "layer_types": ["sliding_attention", "full_attention"] * 18}
GEMMA3_27B = {"model_type": "gemma3", "text_config": {
    "model_type": "gemma3_text", "hidden_size": 5376, "intermediate_size": 21504, "num_hidden_layers": 62,
    "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "sliding_window": 1024,
    "sliding_window_pattern": 6, "vocab_size": 262208, "max_position_embeddings": 131072}}


def test_gqa_cache_and_count():
    m = models.from_config(LLAMA3_8B, name="l3")
    # 2 (K, V) x 32 layers x 8 heads x 128 x 2 bytes = 128 KiB per token
    assert memory.kv_cache_per_token(m) == 2 * 32 * 8 * 128 * 2 == 131072
    assert m.n_params == pytest.approx(8.03e9, rel=0.01)  # Meta's model card: 8.03B
    assert not m.tied_embeddings and m.name == "l3"


def test_mla_cache_is_the_latent():
    m = models.from_config(DEEPSEEK_V3)
    assert m.is_mla and m.head_dim == 192
    # (kv_lora_rank + qk_rope_head_dim) values per layer: 61 x 576 x 2 bytes = 70,272 bytes per token
    assert memory.kv_cache_per_token(m) == 61 * (512 + 64) * 2
    # every tensor-parallel GPU keeps the whole latent
    assert memory.kv_share(m, 8) == 1.0
    one = memory.inference(m, weight_dtype="fp8", context_len=4096, tp=8).kv_cache
    assert one == 61 * 576 * 2 * 4096


def test_deepseek_counts_match_the_paper():
    m = models.from_config(DEEPSEEK_V3)
    assert (m.n_dense_layers, m.n_moe_layers, m.n_shared_experts, m.expert_d_ff) == (3, 58, 1, 2048)
    # 671B total, 37B activated (DeepSeek-AI 2024, arXiv:2412.19437, Sec. 4.2); MTP not counted
    assert m.n_params == pytest.approx(671e9, rel=0.01)
    assert m.n_active_params == pytest.approx(37e9, rel=0.03)


def test_sliding_window_caps_the_cache():
    m = models.from_config(GPT_OSS_120B)
    assert (m.sliding_window, m.n_sliding_layers, m.head_dim, m.attention_dim) == (128, 18, 64, 4096)
    per_layer_token = 2 * 8 * 64 * 2
    assert memory.kv_cache_bytes(m, 100) == 36 * 100 * per_layer_token  # inside the window: every layer
    assert memory.kv_cache_bytes(m, 8192) == (18 * 8192 + 18 * 128) * per_layer_token
    assert memory.inference(m, context_len=8192).kv_cache == memory.kv_cache_bytes(m, 8192)
    # 116.83B total, 5.13B active (OpenAI, gpt-oss-120b model card, Table 1), which counts the
    # unembedding but not the embedding lookup
    assert m.n_params == pytest.approx(116.83e9, rel=0.03)
    assert m.n_active_params - m.vocab_size * m.d_model == pytest.approx(5.13e9, rel=0.05)


def test_gemma3_local_global_pattern():
    m = models.from_config(json.dumps(GEMMA3_27B))
    assert (m.n_sliding_layers, m.sliding_window, m.head_dim, m.tied_embeddings) == (52, 1024, 128, True)
    assert memory.kv_cache_bytes(m, 32768) == (10 * 32768 + 52 * 1024) * 2 * 16 * 128 * 2
    assert m.n_params == pytest.approx(27e9, rel=0.03)


def test_attention_pairs_sum_over_chunks():
    m = models.from_config(GPT_OSS_120B)
    whole = m.attention_pairs(0, 5000)
    chunks = sum(m.attention_pairs(k, 1000) for k in range(0, 5000, 1000))
    assert chunks == pytest.approx(whole)
    # a sliding layer sees at most 128 keys: far fewer pairs than the full layers
    assert whole < 36 * 5000**2 / 2 * 0.53
    # without windows the attention FLOPs are Narayanan's 12*L*s*d per token
    dense = models.from_config(LLAMA3_8B)
    assert flops.flops_per_token(dense, seq_len=4096) == pytest.approx(6 * dense.n_active_params + 12 * 32 * 4096 * 4096)


def test_llama4_interleaved_moe_and_chunked_layers():
    cfg = {"model_type": "llama4", "text_config": {
        "model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
        "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
        "num_local_experts": 128, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2,
        "attention_chunk_size": 8192, "vocab_size": 202048, "max_position_embeddings": 1048576,
        "tie_word_embeddings": False}}
    m = models.from_config(cfg)
    assert (m.n_moe_layers, m.n_dense_layers, m.n_shared_experts, m.d_ff, m.expert_d_ff) == (24, 24, 1, 16384, 8192)
    assert (m.n_sliding_layers, m.sliding_window) == (36, 8192)  # every 4th layer has no RoPE and attends globally
    assert m.n_params == pytest.approx(400e9, rel=0.03)  # Meta: 400B total, 17B active
    assert m.n_active_params == pytest.approx(17e9, rel=0.05)


def test_qwen3_moe_and_head_dim():
    cfg = {"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
           "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
           "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
           "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": False}
    m = models.from_config(cfg)
    assert m.attention_dim == 4096 != m.d_model
    assert m.n_params == pytest.approx(30.5e9, rel=0.03)  # Qwen3-30B-A3B model card: 30.5B, 3.3B activated
    assert m.n_active_params == pytest.approx(3.3e9, rel=0.05)


def test_reads_a_path(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA3_8B))
    assert models.from_config(path) == models.from_config(str(path)) == models.from_config(LLAMA3_8B)


@pytest.mark.parametrize("config, message", [
    ({"model_type": "bert", "hidden_size": 768}, r"model_type 'bert' is not one from_config reads; known: llama.*needs "
                                                 r"model_type, hidden_size"),
    ({"hidden_size": 768}, r"model_type None is not one"),
    ({**LLAMA3_8B, "num_hidden_layers": None}, r"config has no 'num_hidden_layers'"),
    ({k: v for k, v in LLAMA3_8B.items() if k != "vocab_size"}, r"config has no 'vocab_size'"),
    ("{not json", r"config is not valid JSON"),
    ("/no/such/config.json", r"could not be read as a config.json"),
    (42, r"config must be a dict, a JSON string or a path"),
    ({**LLAMA3_8B, "num_key_value_heads": 5}, r"n_kv_heads=5 must divide n_heads"),
])
def test_bad_configs_are_named(config, message):
    with pytest.raises(ValueError, match=message):
        models.from_config(config)


def test_numpy_contexts_vectorise():
    m = models.from_config(GPT_OSS_120B)
    contexts = np.array([64, 128, 4096])
    assert list(memory.kv_cache_bytes(m, contexts)) == [memory.kv_cache_bytes(m, int(c)) for c in contexts]


CONFIGS = sorted(p.stem for p in (Path(models.__file__).parent / "data" / "configs").glob("*.json"))


@pytest.mark.parametrize("name", CONFIGS)
def test_presets_round_trip_their_config(name):
    """Every stored config.json is a preset's, and reading it again gives the preset's shape."""
    preset = models.get(name)
    read = models.from_config(Path(models.__file__).parent / "data" / "configs" / f"{name}.json")
    assert replace(read, name=preset.name, display_name=preset.display_name, n_params=preset.n_params,
                   n_active_params=preset.n_active_params, source=preset.source) == preset
    assert read.n_params == pytest.approx(preset.n_params, rel=0.03)


def test_new_presets_are_in_the_catalog():
    expected = {"llama-3.3-70b", "llama-4-scout", "llama-4-maverick", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b",
                "qwen3-235b-a22b", "deepseek-v3", "deepseek-r1", "gpt-oss-20b", "gpt-oss-120b", "gemma-3-27b",
                "mistral-small-3", "kimi-k2"}
    assert expected <= set(CONFIGS) and expected <= set(models.names())
    assert models.get("Qwen3 30B-A3B").is_moe and models.get("deepseek-v3").is_mla
    assert models.get("mistral-7b").sliding_window == 4096  # Mistral 7B v0.1's window, on every layer
