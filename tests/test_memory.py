from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import _data, calibration, gpus, memory, models, validation
from helpers.models import Model
from helpers.units import GB, GiB, KiB, MiB

# --- published formula results --------------------------------------------------------------


@pytest.mark.parametrize("stage,published_gb", [(0, 120), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1(stage, published_gb):
    """Rajbhandari et al. 2019, Fig. 1: 7.5B parameters, Adam (K = 12), 64 GPUs."""
    b = memory.training(7.5e9, dtype="fp16", zero_stage=stage, dp=64)
    assert (b.weights + b.gradients + b.optimizer) / GB == pytest.approx(published_gb, abs=0.05)


def test_korthikanti_activations_per_layer_gpt3():
    """Korthikanti et al. 2022, Eq. 1 for GPT-3 175B (a=96, h=12288, s=2048, b=1): sbh(34 + 5as/h),
    with their setup: dropout, no FlashAttention; Eq. 4 without sequence parallelism."""
    gpt3 = models.get("gpt3-175b")
    s, b, h, a = 2048, 1, 12288, 96
    expected = s * b * h * (34 + 5 * a * s / h)
    paper = dict(dropout=True, flash_attention=False)
    assert memory.activations_per_layer(gpt3, b, s, **paper) == pytest.approx(expected)
    assert memory.activations_per_layer(gpt3, b, s, recompute="selective", **paper) == pytest.approx(34 * s * b * h)
    assert memory.activations_per_layer(gpt3, b, s, recompute="full", **paper) == pytest.approx(2 * s * b * h)
    assert memory.activations_per_layer(gpt3, b, s, tp=8, **paper) == pytest.approx(expected / 8)
    no_sp = memory.layer_activation_bytes(gpt3, b, s, 0, 8, 2, sequence_parallel=False, **paper)
    assert no_sp == pytest.approx(s * b * h * (10 + 24 / 8 + 5 * a * s / (h * 8)))  # Eq. 4


def test_autocast_keeps_norm_inputs_and_softmax_in_fp32_by_hand():
    """GPT-3's layer under fp16 autocast, dropout, no FlashAttention: the two norm inputs (the fp32
    residual stream) take 4 bytes instead of 2, the fp32 softmax output 4 beside the 16-bit copy the
    product with V keeps (2) and the dropout mask (1): sbh(38 + 7as/h); 36 + 6as/h without dropout;
    full recompute keeps the fp32 layer input."""
    gpt3 = models.get("gpt3-175b")
    s, b, h, a = 2048, 1, 12288, 96
    kw = dict(dtype="fp16", amp=True, flash_attention=False)
    assert memory.activations_per_layer(gpt3, b, s, dropout=True, **kw) == pytest.approx(s * b * h * (38 + 7 * a * s / h))
    assert memory.activations_per_layer(gpt3, b, s, **kw) == pytest.approx(s * b * h * (36 + 6 * a * s / h))
    assert memory.activations_per_layer(gpt3, b, s, recompute="full", **kw) == pytest.approx(4 * s * b * h)
    assert memory.training(gpt3, dtype="fp16", amp=True, flash_attention=False, micro_batch_size=1, seq_len=s).activations \
        > memory.training(gpt3, dtype="fp16", flash_attention=False, micro_batch_size=1, seq_len=s).activations


def test_parallel_blocks_keep_one_input_and_its_normalised_copies_by_hand():
    """GPT-J (one norm, parallel attention and MLP) keeps one norm input and one normalised copy
    where the same shape in sequence keeps two of each: 2 + 2 bytes fewer per token and unit of h in
    16 bits, 4 + 2 under autocast (the fp32 norm input); Pythia's block (two norms of one input), 2 (4)."""
    gptj = models.get("gpt-j-6b")
    assert (gptj.block, gptj.norms, models.get("falcon-40b").norms) == ("parallel", (1, 1), (1, 2))
    s, h = 2048, gptj.d_model
    sequential, two_norms = replace(gptj, block="sequential"), replace(gptj, block="parallel two-norm")
    for kw, wide, e in ((dict(), 2, 2), (dict(dtype="fp16", amp=True), 4, 2)):
        parallel = memory.activations_per_layer(gptj, 1, s, **kw)
        assert memory.activations_per_layer(sequential, 1, s, **kw) - parallel == pytest.approx(s * h * (wide + e))
        assert memory.activations_per_layer(sequential, 1, s, **kw) - \
            memory.activations_per_layer(two_norms, 1, s, **kw) == pytest.approx(s * h * wide)


def test_llama_layer_activations_by_hand():
    """Llama 3.1 405B, one layer at 8192 tokens, TP 8 with sequence parallelism, FlashAttention, no
    dropout: norms 2+2, QKV and MLP inputs 2+2, Q 2, K and V 2*2*(8/128), attention output 2,
    SwiGLU input 2*2*f/h, second MLP input 2*f/h (bytes per token and unit of width), plus the fp32
    log-sum-exp of 128 heads."""
    m = models.get("llama-3.1-405b")
    s, h, f = 8192, 16384, 53248
    per = 4 + 4 + 2 + 4 * 8 / 128 + 2 + 4 * f / h + 2 * f / h
    expected = (s * h * per + 4 * 128 * s) / 8
    assert memory.activations_per_layer(m, 1, s, tp=8) == pytest.approx(expected)
    assert memory.activations_per_layer(m, 1, s, tp=8, recompute="selective") == pytest.approx(expected)
    with_scores = memory.activations_per_layer(m, 1, s, tp=8, flash_attention=False)
    assert with_scores == pytest.approx(expected + (2 * 128 * s * s - 4 * 128 * s) / 8)


def test_opt13b_kv_cache():
    """Kwon et al. 2023 (vLLM), Sec. 3: 800 KB per token, 1.6 GB per 2048-token request."""
    per_token = memory.kv_cache_per_token("opt-13b", "fp16")
    assert per_token == 800 * KiB
    assert per_token * 2048 / 2**30 == pytest.approx(1.6, rel=0.03)


def test_gqa_shrinks_kv_cache_by_head_ratio():
    assert memory.kv_cache_per_token("llama-2-70b") * 8 == memory.kv_cache_per_token("llama-65b")


def test_vllm_13b_weights_are_65_percent_of_a100_40gb():
    """Kwon et al. 2023, Fig. 1: a 13B model's weights fill about 65 % of a 40 GB A100."""
    weights = memory.inference("llama-13b").weights
    assert weights / (gpus.get("A100 40GB").memory_gb_vendor * GB) == pytest.approx(0.65, abs=0.01)


def test_bloom_bf16_weights():
    """Hugging Face BLOOM inference blog: 'needs 352GB in bf16 weights (176*2)'."""
    assert memory.inference("bloom-176b").weights / GB == pytest.approx(352, rel=0.005)


BERT = Model(name="bert-base-cased", display_name="BERT base cased", n_params=108_310_272, n_active_params=108_310_272,
             n_layers=12, d_model=768, n_heads=12, n_kv_heads=12, d_ff=3072, vocab_size=28996, context_len=512)


@pytest.mark.parametrize("dtype,weights_mib,adam_total", [("fp32", 418.18, 1.61 * 1024), ("fp16", 206.59, 826.36)])
def test_accelerate_estimate_memory_bert(dtype, weights_mib, adam_total):
    """accelerate estimate-memory for bert-base-cased: weights and 'Training using Adam' (4x weights).

    accelerate's training rule is weights + gradients + two Adam states in the same dtype, i.e. our
    pure (master_weights=False) training; fp32 training is the same in both.
    """
    weights = memory.quantized_weight_bytes(BERT, dtype)
    assert weights / MiB == pytest.approx(weights_mib, rel=0.02)
    b = memory.training(BERT, dtype=dtype, master_weights=False)
    assert (b.weights + b.gradients + b.optimizer) / MiB == pytest.approx(adam_total, rel=0.03)


# --- measured "does it fit" facts (measurements_dev.csv) -------------------------------------


def test_qlora_65b_fits_a_48gb_gpu():
    """Dettmers et al. 2023: QLoRA fine-tunes LLaMA 65B on a single 48 GB GPU (r=64 on all layers)."""
    b = memory.training("llama-65b", method="qlora", lora_rank=64, recompute="full", seq_len=512)
    assert memory.fits(b, gpus.get("RTX A6000"))
    assert not memory.fits(memory.training("llama-65b", method="lora", lora_rank=64, recompute="full", seq_len=512),
                           gpus.get("RTX A6000"))


def test_full_16bit_finetune_of_65b_needs_over_780gb():
    """Dettmers et al. 2023: regular 16-bit fine-tuning of LLaMA 65B needs more than 780 GB."""
    assert memory.training("llama-65b", recompute="full", seq_len=512).total > 780 * GB


def test_nf4_65b_weights_under_the_reported_footprint():
    """QLoRA Table 1 lists 41 GB for Guanaco 65B in 4 bit; the weights alone must be below that."""
    assert 30 * GB < memory.quantized_weight_bytes(models.get("llama-65b"), "nf4") < 41 * GB


# --- measured fine-tuning memory (memory_runs.csv) -------------------------------------------

BERT_LARGE = Model(name="bert-large-uncased", display_name="BERT large", n_params=335_143_938,
                   n_active_params=335_143_938, n_layers=24, d_model=1024, n_heads=16, n_kv_heads=16, d_ff=4096,
                   vocab_size=2, context_len=512)


def test_autocast_keeps_18_bytes_per_parameter():
    """Hugging Face, "Model training anatomy": mixed precision with AdamW needs 18 bytes per parameter
    (6 for the fp32 weights and their fp16 copy, 4 for fp32 gradients, 8 for the two moments); the
    Megatron layout (16-bit weights and gradients, fp32 master and moments) needs 16."""
    amp = memory.training(BERT_LARGE, dtype="fp16", amp=True)
    master = memory.training(BERT_LARGE, dtype="fp16")
    per_param = [(b.weights + b.gradients + b.optimizer) / BERT_LARGE.n_params for b in (amp, master)]
    assert per_param == pytest.approx([18, 16])


def test_measured_fine_tuning_memory_within_15_percent():
    """Nothing is fitted to these rows: median |error| of the GPU figure at most 10 %, 80 % of the rows
    within 15 % (the issue's target), and the estimate never above a measurement by more than 5 %."""
    runs = validation.memory_runs()
    errors = runs["GPU error"]
    assert errors.abs().median() <= 0.10
    assert (errors.abs() <= 0.15).mean() >= 0.8
    assert errors.max() <= 0.05


def test_gradient_checkpointing_rows_are_within_7_percent():
    """With every layer checkpointed the activations are small, so the model states and the CUDA
    context must carry the estimate: the four checkpointed BERT-large runs within 7 %."""
    runs = validation.memory_runs().set_index("id")
    assert runs.loc[["F03", "F05", "F07", "F09"], "GPU error"].abs().max() <= 0.07


def test_offload_moves_the_optimizer_and_its_gradient_copy_to_the_host():
    """ZeRO-Offload (Ren et al. 2021, Sec. 4.1): fp32 master weights, both moments and an fp32 copy of the
    gradients live in host memory: 16 bytes per parameter for mixed-precision AdamW, none left on the GPU.
    The GPU keeps its 16-bit weights; its gradients pass through DeepSpeed's 5e8-element bucket (1 GB in bf16),
    which DeepSpeed allocates whole even for LoRA's few million gradients; Hugging Face's "auto" sizes it
    hidden_size² (4,096² elements for Llama 2 7B)."""
    base = memory.training("llama-2-7b", zero_stage=2)
    off = memory.training("llama-2-7b", zero_stage=2, offload="optimizer")
    n = models.get("llama-2-7b").n_params
    assert off.optimizer == 0 and base.host == 0
    assert off.host / n == pytest.approx(16)
    assert (off.weights, off.activations) == (base.weights, base.activations)
    assert off.gradients == 1e9 and base.gradients == pytest.approx(2 * n)
    lora = memory.training("llama-2-7b", method="lora", zero_stage=2, offload="optimizer")
    assert lora.gradients == 1e9 > 10 * memory.training("llama-2-7b", method="lora").gradients
    auto = memory.training("llama-2-7b", zero_stage=2, offload="optimizer", reduce_bucket_size=4096**2)
    assert auto.gradients == 4096**2 * 2 and auto.total == pytest.approx(off.total - 1e9 + 4096**2 * 2)


def test_zero_offload_trains_13b_on_one_v100():
    """Ren et al. 2021 (ZeRO-Offload, arXiv:2101.06840, abstract and Sec. 6): a 13B model trains on a
    single 32 GB V100, ten times what PyTorch alone fits there. A dense 13B model in fp16 mixed
    precision, one 1,024-token sequence with every layer checkpointed, fits with the optimizer
    offloaded, at about 29 GB, and needs seven times that without."""
    m, v100 = models.dense(13e9), gpus.get("V100-SXM2-32GB")
    kw = dict(dtype="fp16", micro_batch_size=1, seq_len=1024, recompute="full", flash_attention=False)
    off, on = memory.training(m, zero_stage=2, offload="optimizer", **kw), memory.training(m, **kw)
    assert memory.fits(off, v100) and not memory.fits(on, v100)
    assert 27e9 <= off.total <= 31e9 and on.total > 7 * off.total


def test_parameter_offload_leaves_the_live_window_on_the_gpu():
    """ZeRO-3 with parameters offloaded: the host holds the 16-bit weights as well; the GPU keeps at
    most stage3_max_live_parameters (1e9) plus the largest matrix, here 70B parameters in bf16."""
    m = models.get("llama-2-70b")
    off = memory.training(m, zero_stage=3, offload="parameters")
    largest = m.vocab_size * m.d_model
    assert off.weights == pytest.approx((memory.MAX_LIVE_PARAMETERS + largest) * 2)
    assert off.host == pytest.approx(m.n_params * (2 + 16))
    smaller = memory.training(m, zero_stage=3, offload="parameters", max_live_parameters=1e8)
    assert smaller.weights < off.weights and smaller.host == off.host


def test_offload_copies_only_16_bit_gradients_and_splits_the_live_window_by_hand():
    """Gradients already in fp32 (autocast, or fp32 training) are not copied again: AdamW's two fp32
    moments (8 bytes) and the 4-byte gradients make 12 bytes per parameter on the host, and the GPU's
    gradient bucket holds 4-byte values. The live window of parameter offload is split over tensor
    parallelism (half of it on each of 2 GPUs) and
    holds what the GPU keeps per parameter: 6 bytes under autocast (fp32 weights and their bf16 casts)."""
    m, big = models.get("llama-2-7b"), models.get("llama-2-70b")
    for kw in ({"amp": True}, {"dtype": "fp32"}):
        off = memory.training(m, zero_stage=2, offload="optimizer", **kw)
        assert off.host == pytest.approx(12 * m.n_params) and off.gradients == 2e9  # a bucket of fp32 gradients
    window = memory.MAX_LIVE_PARAMETERS + big.vocab_size * big.d_model
    assert memory.training(big, zero_stage=3, offload="parameters", tp=2).weights == pytest.approx(window * 2 / 2)
    assert memory.training(big, zero_stage=3, offload="parameters", amp=True).weights == pytest.approx(window * 6)


def test_precision_tp_and_boundaries_reach_activations_workspace_and_fits_by_hand():
    """fp32 doubles every stored activation but FlashAttention's fp32 log-sum-exp (4 bytes per head and
    token); the serving workspace of Llama 2 7B at 1,024 tokens on 2 GPUs is 1,024 x (4 x 4,096 +
    2 x 11,008 / 2) x 2 bytes (the hidden-size vectors whole on each GPU, the MLP's halves split) plus
    one fp32 row of 32,000 logits, and its overhead the CUDA context and the fitted reserve of the
    group, a fixed part and one per other GPU, each larger where the link has NVLink SHARP (H100 SXM,
    not A100, L40S or H100 NVL), none on one GPU; a breakdown of exactly the memory the GPU reports
    fits; a context of 2**62 tokens (beyond int64 once multiplied by the layers) is counted in floats."""
    m = models.get("llama-2-7b")
    lse = 4 * m.n_heads * 2 * 1024
    bf16 = memory.activations_per_layer(m, 2, 1024)
    assert memory.activations_per_layer(m, 2, 1024, dtype="fp32") == pytest.approx(2 * (bf16 - lse) + lse)
    two = memory.inference(m, context_len=1024, tp=2)
    assert two.activations == pytest.approx(1024 * (4 * 4096 + 2 * 11008 / 2) * 2 + 32000 * 4)
    c = _data.calibrated()
    fixed, per_peer = c["serving/comm_bytes_fixed"], c["serving/comm_bytes_per_peer"]
    assert two.overhead == pytest.approx(memory.RUNTIME_OVERHEAD + fixed + per_peer) and 0.2e9 < per_peer < 2e9
    eight = memory.RUNTIME_OVERHEAD + fixed + 7 * per_peer
    for gpu in (None, "A100", "L40S", "H100 NVL"):  # no NVLink SHARP
        assert memory.inference(m, context_len=1024, tp=8, gpu=gpu).overhead == pytest.approx(eight)
    nvls = c["serving/nvls_bytes_fixed"] + 7 * c["serving/nvls_bytes_per_peer"]
    assert memory.inference(m, context_len=1024, tp=8, gpu="H100").overhead == pytest.approx(eight + nvls) and nvls > 0
    assert memory.inference(m, context_len=1024).overhead == memory.RUNTIME_OVERHEAD
    h100 = gpus.get("H100")
    assert memory.fits(memory.MemoryBreakdown(weights=h100.reported_memory_bytes), h100)
    assert memory.kv_cache_bytes(m, np.array([2**62]))[0] == pytest.approx(2.0**62 * 32 * 2 * 4096 * 2)


def test_offloaded_host_memory_of_the_peft_run():
    """PEFT's bloomz-7b1 LoRA run with DeepSpeed ZeRO-3 offload grows the process by 31.2 GB over the same
    script without it: the offloaded fp32 base (26.3 GiB) must account for at least 80 % of that."""
    row = validation.memory_runs().set_index("id").loc["F11"]
    assert 0.8 <= row["predicted host (GiB)"] / row["measured host (GiB)"] <= 1.0


# --- behaviour -------------------------------------------------------------------------------


def test_mixed_precision_costs_16_bytes_per_parameter_and_pure_bf16_8():
    mixed = memory.training(1e9)
    pure = memory.training(1e9, master_weights=False)
    assert (mixed.weights + mixed.gradients + mixed.optimizer) / 1e9 == pytest.approx(16)
    assert (pure.weights + pure.gradients + pure.optimizer) / 1e9 == pytest.approx(8)
    assert memory.training(1e9, optimizer="adam8bit").optimizer / 1e9 == pytest.approx(4 + 2, rel=0.01)
    assert memory.training(1e9, optimizer="sgd").optimizer / 1e9 == pytest.approx(4 + 4)
    assert memory.training(1e9, optimizer="adafactor").optimizer < memory.training(1e9, optimizer="sgd").optimizer


def test_lora_trains_few_parameters():
    m = models.get("llama-2-7b")
    lora = memory.training(m, method="lora", lora_rank=16)
    assert lora.gradients < 0.01 * memory.training(m).gradients
    assert lora.weights == pytest.approx(m.n_params * 2, rel=0.02)
    qlora = memory.training(m, method="qlora", lora_rank=16)
    assert qlora.weights < 0.35 * lora.weights


def test_tensor_parallel_splits_kv_heads_and_replicates_beyond_them():
    one = memory.inference("llama-2-70b", tp=1)
    eight = memory.inference("llama-2-70b", tp=8)
    sixteen = memory.inference("llama-2-70b", tp=16)
    assert eight.kv_cache == pytest.approx(one.kv_cache / 8)
    assert sixteen.kv_cache == eight.kv_cache  # 8 KV heads cannot be split 16 ways
    assert sixteen.weights == pytest.approx(one.weights / 16)


def test_quantized_formats_keep_embeddings_16bit():
    m = models.get("llama-3-8b")
    int4 = memory.quantized_weight_bytes(m, "int4")
    assert int4 == pytest.approx((m.n_params - m.embedding_params) * 4.25 / 8 + m.embedding_params * 2)


def test_largest_batch_and_context():
    h100 = gpus.get("H100")
    b = memory.max_batch_size("llama-2-7b", h100, context_len=4096)
    assert memory.fits(memory.inference("llama-2-7b", batch_size=b, context_len=4096), h100)
    assert not memory.fits(memory.inference("llama-2-7b", batch_size=b + 1, context_len=4096), h100)
    s = memory.max_context_len("llama-3-8b", h100)
    assert memory.fits(memory.inference("llama-3-8b", context_len=s), h100)
    assert not memory.fits(memory.inference("llama-3-8b", context_len=s + 1), h100)
    assert memory.max_context_len("llama-2-70b", gpus.get("4090")) == 0


def test_fits_table_flags_every_gpu():
    table = memory.fits_table(memory.inference("llama-2-70b", weight_dtype="int4"))
    assert len(table) == len(gpus.names())
    fits = dict(zip(table["GPU"], table["fits"]))
    assert fits["A100-SXM4-80GB"] and fits["RTX-A6000-48GB"] and not fits["RTX-4090-24GB"]


@pytest.mark.parametrize("kwargs,match", [
    ({"dtype": "fp8"}, "dtype='fp8'"), ({"optimizer": "lion"}, "optimizer='lion'"),
    ({"recompute": "some"}, "recompute='some'"), ({"zero_stage": 4}, "zero_stage=4"),
    ({"micro_batch_size": 0}, "micro_batch_size"), ({"seq_len": -5}, "seq_len"),
    ({"tp": 3}, "tp=3 must divide the 32 attention heads"), ({"pp": 64}, "pp=64 exceeds the 32 layers"),
    ({"dp": 1.5}, "dp must be a positive integer"), ({"method": "dora"}, "method='dora'"),
])
def test_training_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        memory.training("llama-2-7b", **kwargs)


def test_inference_rejects_bad_arguments():
    with pytest.raises(ValueError, match="weight_dtype='int3'"):
        memory.inference("llama-2-7b", weight_dtype="int3")
    with pytest.raises(ValueError, match="kv_dtype='nf4'"):
        memory.inference("llama-2-7b", kv_dtype="nf4")
    with pytest.raises(ValueError, match="model must be"):
        memory.inference(None)


# --- properties --------------------------------------------------------------------------------

PRESETS = st.sampled_from(["gpt2-xl", "llama-2-7b", "llama-2-70b", "mixtral-8x7b", "falcon-40b"])
TRAIN = dict(dtype=st.sampled_from(memory.TRAINING_STATE_DTYPES), optimizer=st.sampled_from(memory.OPTIMIZERS),
             method=st.sampled_from(memory.METHODS), recompute=st.sampled_from(memory.RECOMPUTE),
             zero_stage=st.sampled_from(memory.ZERO_STAGES), dp=st.integers(1, 512),
             micro_batch_size=st.integers(1, 32), seq_len=st.integers(1, 32768))


@settings(max_examples=150, deadline=None)
@given(model=PRESETS, grow=st.integers(1, 8), **TRAIN)
def test_training_memory_never_falls_as_batch_or_sequence_grows(model, grow, micro_batch_size, seq_len, **kw):
    base = memory.training(model, micro_batch_size=micro_batch_size, seq_len=seq_len, **kw).total
    assert memory.training(model, micro_batch_size=micro_batch_size * grow, seq_len=seq_len, **kw).total >= base
    assert memory.training(model, micro_batch_size=micro_batch_size, seq_len=seq_len * grow, **kw).total >= base


@settings(max_examples=150, deadline=None)
@given(model=PRESETS, **TRAIN)
def test_recompute_zero_and_dp_never_raise_memory(model, recompute, zero_stage, dp, **kw):
    totals = [memory.training(model, recompute=r, zero_stage=zero_stage, dp=dp, **kw).total for r in memory.RECOMPUTE]
    assert totals == sorted(totals, reverse=True)
    stages = [memory.training(model, recompute=recompute, zero_stage=z, dp=dp, **kw).total for z in memory.ZERO_STAGES]
    assert stages == sorted(stages, reverse=True)
    assert memory.training(model, recompute=recompute, zero_stage=zero_stage, dp=dp * 2, **kw).total <= \
        memory.training(model, recompute=recompute, zero_stage=zero_stage, dp=dp, **kw).total


@settings(max_examples=150, deadline=None)
@given(model=PRESETS, weight_dtype=st.sampled_from(memory.WEIGHT_DTYPES),
       kv_dtype=st.sampled_from(memory.KV_DTYPES), batch_size=st.integers(1, 256), context_len=st.integers(1, 200_000))
def test_inference_memory_grows_with_batch_and_context(model, weight_dtype, kv_dtype, batch_size, context_len):
    kw = dict(weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    base = memory.inference(model, batch_size=batch_size, context_len=context_len, **kw)
    assert base.total > 0 and all(v >= 0 for v in base.as_dict().values())
    assert memory.inference(model, batch_size=batch_size + 1, context_len=context_len, **kw).total >= base.total
    assert memory.inference(model, batch_size=batch_size, context_len=context_len + 1, **kw).total >= base.total


def test_breakdown_total_and_units():
    b = memory.training("llama-2-7b")
    assert b.total == pytest.approx(sum(b.as_dict().values()))
    assert list(b.as_dict()) == list(memory.COMPONENTS)
    assert memory.RUNTIME_OVERHEAD == 1343 * MiB < 2 * GiB


def test_optimizer_states_by_hand():
    """Bytes per parameter of Llama 2 7B's optimizer states with fp32 master weights (4 bytes):
    AdamW two fp32 moments (8 more), SGD one (4), 8-bit Adam two 1-byte moments plus an fp32
    absmax per 2048-element block (2 x (1 + 4/2048)); Adafactor one fp32 row and column vector per
    matrix: per layer q, k, v, o of 4096 x 4096 (8,192 each) and gate, up, down of 4096 x 11,008
    (15,104 each), 32 layers, and the untied embedding and head of 32,000 x 4,096 (36,096 each):
    2,570,752 values."""
    m = models.get("llama-2-7b")
    per_param = {o: memory.training(m, optimizer=o).optimizer / m.n_params for o in ("adamw", "sgd", "adam8bit")}
    assert per_param == pytest.approx({"adamw": 12, "sgd": 8, "adam8bit": 4 + 2 * (1 + 4 / 2048)})
    vectors = 32 * (4 * 8192 + 3 * 15104) + 2 * 36096
    assert vectors == 2_570_752
    assert memory.training(m, optimizer="adafactor").optimizer == pytest.approx(4 * m.n_params + 4 * vectors)


def test_8bit_adam_keeps_two_bytes_and_two_block_scales_per_parameter_by_hand():
    """Pure 16-bit training with 8-bit Adam (no master weights): two 1-byte moments per parameter and,
    per moment, one fp32 absmax per 2048-element block, 2 + 2 x 4 / 2048 bytes per parameter, exactly
    (a block of 2049 would differ in the seventh digit, below pytest.approx's default tolerance)."""
    m = models.get("llama-2-7b")
    state = memory.training(m, optimizer="adam8bit", master_weights=False).optimizer
    assert state == pytest.approx(m.n_params * (2 + 2 * 4 / 2048), rel=1e-12)


def test_logit_activations_grow_with_batch_and_sequence_by_hand():
    """Korthikanti et al.'s Eq. 6 term for the embedding output, final norm and fp32 logits of Llama 2
    7B: 4 x s x b x (h + v) / tp bytes, for 1,024 tokens, 2 sequences and 2 GPUs 4 x 1,024 x 2 x
    (4,096 + 32,000) / 2; twice the sequences, twice the bytes."""
    m = models.get("llama-2-7b")
    assert memory.logit_activation_bytes(m, 2, 1024, 2) == pytest.approx(4 * 1024 * 2 * (4096 + 32000) / 2)
    assert memory.logit_activation_bytes(m, 4, 1024, 2) == pytest.approx(2 * memory.logit_activation_bytes(m, 2, 1024, 2))


def test_an_unfused_loss_holds_four_copies_of_the_logits_by_hand():
    """Hugging Face's causal-LM loss holds four fp32 copies of the logits at its peak (the logits, the
    log-softmax and two gradients), Megatron's fused one one: for Llama 2 7B at 2 x 1,024 tokens on
    one GPU, 3 x 4 x 2,048 x 32,000 bytes more, whatever the rest of the step."""
    kw = dict(micro_batch_size=2, seq_len=1024, recompute="full")
    fused, unfused = (memory.training("llama-2-7b", loss=loss, **kw) for loss in ("fused", "unfused"))
    assert unfused.activations - fused.activations == pytest.approx(3 * 4 * 2048 * 32000)
    assert unfused.total - fused.total == pytest.approx(3 * 4 * 2048 * 32000)
    with pytest.raises(ValueError, match="loss"):
        memory.training("llama-2-7b", loss="chunked")


@pytest.mark.parametrize("recompute", ["full", "selective"])
def test_recompute_holds_the_layer_it_rebuilds_by_hand(recompute):
    """Recomputing rebuilds one layer at a time in the backward pass, which then holds everything it
    would without recompute (Chen et al. 2016, Sec. 4.1): GPT-3 175B on 8 stages at TP 8 (96/8 layers,
    8 micro-batches in flight on the first stage), unfused attention, dropout: 96 layers' kept bytes,
    the one rebuilt layer's difference, and the logits."""
    gpt3 = models.get("gpt3-175b")
    kw = dict(tp=8, flash_attention=False, dropout=True)
    kept = memory.activations_per_layer(gpt3, 1, 2048, recompute=recompute, **kw)
    whole = memory.activations_per_layer(gpt3, 1, 2048, **kw)
    logits = memory.logit_activation_bytes(gpt3, 1, 2048, 8)
    assert memory.activations(gpt3, 1, 2048, recompute=recompute, pp=8, **kw) == pytest.approx(96 * kept + whole - kept + logits)
    assert memory.activations(gpt3, 1, 2048, pp=8, **kw) == pytest.approx(96 * whole + logits)


def test_the_activation_model_matches_what_pytorch_keeps():
    """``benchmarks/probe_memory.py`` measured with PyTorch on the CPU: the bytes autograd saves for a
    BERT-large layer in fp32 (the model's count within 0.1 %), the peak of Hugging Face's causal-LM loss
    in logit copies and the layer gradient checkpointing rebuilds (each within 5 %). Under autocast the
    model counts one 16-bit copy of the attention's input where BERT's separate Q, K and V products
    keep three: it comes out low, by less than 6 %."""
    probe = validation.memory_probe().set_index("id")
    assert abs(probe.loc["P01", "error"]) <= 1e-3
    assert probe.loc[["P03", "P04"], "error"].abs().max() <= 0.05
    assert -0.06 <= probe.loc["P02", "error"] < 0
    # by hand: a layer keeps 64 bytes per token and unit of width plus 4 per score; recompute its 4-byte input
    s, h, a = 512, 1024, 16
    assert probe.loc["P04", "model"] == pytest.approx(1 - 4 * s * h / (64 * s * h + 4 * a * s * s))


def test_adafactor_counts_a_tied_embedding_once_by_hand():
    """GPT-2 XL ties its embedding and output head: Adafactor keeps one row and one column vector for
    that one 50,257 x 1,600 matrix (51,857 values), besides 48 layers of q, k, v, o (1,600 x 1,600:
    3,200 each) and the 1,600 x 6,400 MLP pair (8,000 each): 1,434,257 fp32 values in all."""
    m = models.get("gpt2-xl")
    vectors = 48 * (4 * 3200 + 2 * 8000) + (50257 + 1600)
    assert vectors == 1_434_257
    assert memory.training(m, optimizer="adafactor").optimizer == pytest.approx(4 * m.n_params + 4 * vectors)


@pytest.mark.parametrize("limit", [1, 2, 3, 5, 8, 9])
def test_searches_stop_at_their_limit_exactly(limit):
    """Llama 2 7B on an H100 holds far more than 9 sequences of 4,096 tokens and contexts far longer
    than 9 tokens: each search returns its limit, not a neighbour of it."""
    assert memory.max_batch_size("llama-2-7b", "H100", limit=limit) == limit
    assert memory.max_context_len("llama-2-7b", "H100", limit=limit) == limit


@pytest.mark.parametrize("tp", [2, 4])
def test_searches_over_a_tensor_parallel_group_find_the_last_size_that_fits(tp):
    """Llama 3 70B in FP8 with an FP8 cache over 2 or 4 H100: the largest batch at 8,192 tokens and the
    longest context of 3 (and, in the GPU table, 5) sequences are the last that memory.inference fits."""
    kw = dict(tp=tp, weight_dtype="fp8", kv_dtype="fp8")
    h100 = gpus.get("H100")

    def fits(b, s):
        return memory.fits(memory.inference("llama-3-70b", batch_size=b, context_len=s, gpu=h100, **kw), h100)

    b = memory.max_batch_size("llama-3-70b", h100, context_len=8192, **kw)
    assert b > 1 and fits(b, 8192) and not fits(b + 1, 8192)
    s = memory.max_context_len("llama-3-70b", h100, batch_size=3, **kw)
    assert fits(3, s) and not fits(3, s + 1)
    (longest,) = memory.longest_context_table("llama-3-70b", batch_size=5, gpu_names=["H100"], **kw)[
        "longest context (tokens)"]
    assert fits(5, longest) and not fits(5, longest + 1)


def test_searches_and_training_refuse_impossible_splits():
    """A tensor-parallel group of 3 does not split Llama 2 7B's 32 heads, and ZeRO-2 does not combine
    with pipeline parallelism: each search and memory.training say so instead of answering."""
    with pytest.raises(ValueError, match="tp"):
        memory.max_context_len("llama-2-7b", gpus.get("H100"), tp=3)
    with pytest.raises(ValueError, match="tp"):
        memory.max_batch_size("llama-2-7b", gpus.get("H100"), tp=3)
    with pytest.raises(ValueError, match="zero_stage=2 does not combine with pp=2"):
        memory.training("llama-2-7b", pp=2, zero_stage=2)


def test_searches_find_nothing_when_the_weights_alone_do_not_fit():
    assert memory.max_batch_size("llama-2-70b", "RTX-4090-24GB") == 0
    assert memory.max_context_len("llama-2-70b", "RTX-4090-24GB") == 0


def test_quantized_weights_keep_embeddings_in_16_bits_by_hand():
    """Llama 2 7B (6.74e9 parameters, 2 x 32,000 x 4,096 = 262,144,000 of them in the embedding
    and head): int4 stores the rest at 4.25 bits (4 bits, and an fp16 scale and zero point per 128
    weights: 32 / 128 = 0.25) and fp8 at 1 byte, the embeddings at 2 bytes in both; bf16 stores all at 2."""
    m = models.get("llama-2-7b")
    embeddings = 2 * 32000 * 4096
    assert memory.quantized_weight_bytes(m, "int4") == pytest.approx((6.74e9 - embeddings) * 4.25 / 8 + embeddings * 2)
    assert memory.quantized_weight_bytes(m, "fp8") == pytest.approx(6.74e9 - embeddings + embeddings * 2)
    assert memory.quantized_weight_bytes(m, "bf16") == pytest.approx(2 * 6.74e9)


def test_fits_table_in_decimal_gb_by_hand():
    """An H100's '80 GB' are the 81,559 MiB its driver reports = 85.52 GB usable, an RTX 4090's
    '24 GB' 24,564 MiB = 25.76 GB; Llama 2 7B served in bf16 (1,024-token context) needs its
    breakdown's bytes / 1e9, and the headroom is the difference."""
    need = memory.inference("llama-2-7b")
    table = memory.fits_table(need, ["H100", "RTX-4090-24GB"]).set_index("GPU")
    assert list(table["memory (GB, vendor)"]) == [80, 24]
    exact = dict(rel=1e-12)  # a billion bytes, not 1e9 + 1
    assert list(table["usable (GB)"]) == pytest.approx([81559 * 2**20 / 1e9, 24564 * 2**20 / 1e9], **exact)
    assert list(table["needed (GB)"]) == pytest.approx([need.total / 1e9] * 2, **exact)
    assert list(table["headroom (GB)"]) == pytest.approx([(81559 * 2**20 - need.total) / 1e9,
                                                          (24564 * 2**20 - need.total) / 1e9], **exact)
    assert list(table["fits"]) == [True, True]


@pytest.mark.parametrize("gpu", ["L4", "H100", "RTX-4090-24GB"])
def test_longest_context_and_largest_batch_are_the_last_that_fit(gpu):
    """The longest context fits and one more token does not; likewise the largest batch at 4,096
    tokens; the table reports the same."""
    fits = lambda **k: memory.fits(memory.inference("llama-2-7b", **k), gpu)  # noqa: E731
    longest = memory.max_context_len("llama-2-7b", gpu)
    assert fits(context_len=longest) and not fits(context_len=longest + 1)
    table = memory.longest_context_table("llama-2-7b", gpu_names=[gpu])
    assert table["longest context (tokens)"].tolist() == [longest]
    batch = memory.max_batch_size("llama-2-7b", gpu, context_len=4096)
    assert fits(batch_size=batch, context_len=4096) and not fits(batch_size=batch + 1, context_len=4096)


def test_the_largest_batch_is_never_negative_when_nothing_fits():
    """memory._max_batch solves the linear part for the batch and corrects it; memory that exceeds the
    GPU at a batch of 0 gives 0, at short and long contexts alike, and a linear total its exact answer."""
    for context_len in (128, 4096):
        assert memory._max_batch(lambda b, c: 100.0 + 10.0 * b, 95.0, context_len, 1000) == 0
        assert memory._max_batch(lambda b, c: 100.0 + 10.0 * b, 1000.0, context_len, 1000) == 90


def test_serving_memory_against_static_batch_peaks():
    """The peak memory per GPU of 1,872 TensorRT-LLM 0.9 static batches. Only the communication
    reserve of a tensor-parallel group is fitted (a fixed part and one per other GPU, and NVLS's
    share of each), on the A100 and H100 SXM runs; the 1,117 runs on the H100 NVL, H200, L40 and
    L40S test it: within 4 % in median (measured 2.6 %) and 97 % of them within 15 % (measured
    99.5 %), and for every GPU and GPU count the signed median within 10 % (measured -6.6 %, H100
    NVL on eight, to +5.5 %, L40S on eight). On one GPU, where neither the reserve nor the
    replicated workspace arises, within 3 % in median and 95 % of them within 10 % (measured 2.3 %
    and 97 %)."""
    runs = validation.static_batch_runs()
    error = runs["error memory (GB)"]
    test = runs["memory split"] == "test"
    assert set(runs.loc[~test, "GPU"]) == set(calibration.MEMORY_CALIBRATION_GPUS) and test.sum() == 1117
    assert error[test].abs().median() <= 0.04 and (error[test].abs() <= 0.15).mean() >= 0.97
    by_group = error[test].groupby([runs.loc[test, "GPU"], runs.loc[test, "GPUs"]]).median()
    assert len(by_group) == 16 and by_group.abs().max() <= 0.10
    one = error[runs["GPUs"] == 1].abs()
    assert one.median() <= 0.03 and (one <= 0.10).mean() >= 0.95


def test_context_parallelism_keeps_a_share_of_each_sequence_and_shards_states_with_dp():
    """CP 4 x DP 2: the activations of a quarter of each sequence, the ZeRO-1 optimizer shard of 8 ranks."""
    split = memory.training("llama-2-7b", seq_len=8192, cp=4, dp=2, zero_stage=1)
    assert split.activations == memory.training("llama-2-7b", seq_len=2048).activations
    assert split.optimizer == memory.training("llama-2-7b", seq_len=8192, dp=8, zero_stage=1).optimizer
    with pytest.raises(ValueError, match="cp=4 needs seq_len a multiple of 2 \\* cp = 8 \\(got 2052\\)"):
        memory.training("llama-2-7b", seq_len=2052, cp=4)
