import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import calibration, compute, gpus, models, planner, validation
from helpers.estimate import Estimate
from helpers.units import DAY, HOUR


def test_gpt3_training_compute():
    """Brown et al. 2020, Table D.1: 3.14e23 FLOP for 174.6B parameters on 300B tokens."""
    assert compute.training_flops(174.6e9, 300e9) == pytest.approx(3.14e23, rel=0.01)


def test_llama31_405b_training_compute():
    """Llama Team 2024, Sec. 3.3: 3.8e25 FLOP for 405B on 15.6T tokens."""
    assert compute.training_flops(models.get("llama-3.1-405b"), 15.6e12) == pytest.approx(3.8e25, rel=0.01)


def test_full_recompute_is_8nd():
    assert compute.training_flops(1e9, 1e9, recompute="full") == pytest.approx(8e18)
    assert compute.training_flops(1e9, 1e9, recompute="selective") == pytest.approx(6e18)


@pytest.mark.parametrize("n_params,tokens,n_gpus,tflops,days", [(175e9, 300e9, 1024, 140, 34), (1e12, 450e9, 3072, 163, 84)])
def test_megatron_training_time_estimates(n_params, tokens, n_gpus, tflops, days):
    """Narayanan et al. 2021, Sec. 5.1: end-to-end time = 8TP / (nX); GPT-3 in 34 days, 1T in 84 days."""
    a100 = gpus.get("A100 80GB")
    t = compute.training_time(n_params, tokens, a100, n_gpus, dtype="fp16", mfu=tflops * 1e12 / a100.peak_flops("fp16"),
                              goodput=1.0, recompute="full")
    assert t.low == t.expected == t.high
    assert t.expected / DAY == pytest.approx(days, rel=0.02)


def test_reported_throughput_reproduces_published_mfu():
    """MosaicML, Megatron-Core and NeMo publish throughput and MFU (or model TFLOP/s) side by side:
    our FLOPs per token turn one into the other (within 10 %). Megatron-Bridge counts otherwise: its
    gpt-oss-120b rows 6 FLOPs per active parameter of the layers' matrices alone (27.3 GFLOP per token,
    within 2 %), without the output layer (3.5) and the attention scores (3.9) that ours include; its
    dense Llama 3 rows the matrices with the output layer and the causal half of the attention scores
    (6 L s d where ours, non-causal as PaLM's count, has 12 L s d), within 3 % (the 26.04.01 tables give
    tokens/s in multiples of 32)."""
    from helpers import _data, calibration
    runs = _data.table("training_runs")

    def nvidia(row):
        return row["tflops_per_gpu"] * 1e12 / row["tokens_per_sec_per_gpu"]
    oss = models.get("gpt-oss-120b")
    layers_only = 6 * sum(i * o * n for i, o, n in oss.matrices(active=True))
    bridge = runs[runs["family"] == "megatron-bridge-gpt-oss"]
    assert len(bridge) == 5 and layers_only == pytest.approx(27.3e9, rel=0.01)
    for _, row in bridge.iterrows():
        assert nvidia(row) == pytest.approx(layers_only, rel=0.02)
    llama = runs[runs["family"] == "megatron-bridge-llama"]
    assert len(llama) >= 9
    for _, row in llama.iterrows():
        m, s = models.get(row["model"]), int(row["seq_len"])
        causal = 6 * (sum(i * o * n for i, o, n in m.matrices(active=True)) + m.d_model * m.vocab_size) + \
            6 * m.n_layers * s * m.attention_dim
        assert nvidia(row) == pytest.approx(causal, rel=0.03), row["run"]
    errors = []
    for _, row in runs[~runs["family"].str.startswith("megatron-bridge")].iterrows():
        if row.notna()["tokens_per_sec_per_gpu"] and (row.notna()["mfu"] or row.notna()["tflops_per_gpu"]):
            implied = calibration.published_throughput(row.drop("tokens_per_sec_per_gpu").reindex(row.index))
            assert implied == pytest.approx(row["tokens_per_sec_per_gpu"], rel=0.10), row["run"]
            errors.append(abs(implied / row["tokens_per_sec_per_gpu"] - 1))
    assert len(errors) >= 20 and sorted(errors)[len(errors) // 2] < 0.02


def test_llama31_405b_gpu_hours_from_reported_throughput():
    """With Table 4's 400 TFLOP/s per GPU, 3.8e25 FLOP takes 26.4M GPU-hours of steady training; the model
    card reports 30.84M, the difference being restarts and downtime (>90 % effective training time,
    Sec. 3.3.4): with the default goodput band the published figure lies inside the estimate."""
    h100 = gpus.get("H100")
    mfu = 400e12 / h100.peak_flops("bf16")
    steady = compute.training_time("llama-3.1-405b", 15.6e12, h100, 16384, mfu=mfu, goodput=1.0)
    assert 0.8 < steady.expected * 16384 / HOUR / 30.84e6 < 0.9
    run = compute.training_time("llama-3.1-405b", 15.6e12, h100, 16384, mfu=mfu)
    assert run.contains(30.84e6 * HOUR / 16384)
    assert run.expected * 16384 / HOUR == pytest.approx(30.84e6, rel=0.06)


def test_training_time_band_orders_and_scales():
    t = compute.training_time("llama-2-7b", 1e12, "H100", 8)
    assert t.low < t.expected < t.high
    t16 = compute.training_time("llama-2-7b", 1e12, "H100", 16)
    # twice the GPUs: a little communication more, or at most 1 % better than twice as fast (ZeRO-3's
    # sharding makes room for a micro-batch twice as large, whose weight gradients run nearer the peak)
    assert t.expected / 2 * 0.99 < t16.expected < t.expected / 1.8
    with pytest.raises(ValueError, match="no 'bf16' rate"):
        compute.training_time("llama-2-7b", 1e12, "V100", 8, dtype="bf16")
    v100 = compute.training_time("llama-2-7b", 1e12, "V100", 8)  # no dtype: fp16 where bf16 is missing
    assert v100 == compute.training_time("llama-2-7b", 1e12, "V100", 8, dtype="fp16")
    with pytest.raises(ValueError, match="mfu is a fraction"):
        compute.training_time("llama-2-7b", 1e12, "H100", 8, mfu=40)


def test_decode_is_memory_bound_at_batch_1():
    """Batch-1 decoding of Llama 2 7B in bf16 on an A100: at most bandwidth / weight bytes tokens/s."""
    a100 = gpus.get("A100 80GB")
    tps = compute.decode_throughput("llama-2-7b", a100, batch_size=1, context_len=1024)
    bound = a100.memory_bandwidth / (models.get("llama-2-7b").n_params * 2)
    assert tps.high <= bound and tps.low > 0.3 * bound
    # batch 64 reads the weights once per step but 64 KV caches: far from 64x, far above 1x
    batched = compute.decode_throughput("llama-2-7b", a100, batch_size=64).expected / tps.expected
    assert 10 < batched < 30


def test_llama33_70b_fp8_decode_on_two_h100():
    """NVIDIA NIM 1.8.0: Llama 3.3 70B FP8, TP2 on H100, 18.58 ms per token at concurrency 1 (5000-token prompt)."""
    tps = compute.decode_throughput("llama-3-70b", "H100", tp=2, context_len=5250, weight_dtype="fp8", kv_dtype="fp8")
    assert tps.contains(1 / 18.58e-3)


@pytest.mark.parametrize("model,gpu,n,prompt,dtype,ms", [
    ("llama-7b", "A100 80GB", 1, 2048, "fp16", 133), ("llama-2-70b", "A100 80GB", 4, 2048, "fp16", 377),
    ("llama-7b", "H100", 1, 2048, "fp8", 36), ("llama-2-70b", "H100", 4, 2048, "fp8", 109),
    ("llama-3-70b", "H100", 2, 5000, "fp8", 406.77)])
def test_prefill_band_holds_published_first_token_latency(model, gpu, n, prompt, dtype, ms):
    """TensorRT-LLM v0.5 first-token latency (batch 1) and NVIDIA NIM 1.8.0 time to first token."""
    assert compute.prefill_time(model, gpu, prompt, tp=n, weight_dtype=dtype).contains(ms / 1000)


@settings(max_examples=100, deadline=None)
@given(tokens=st.floats(1e6, 1e14), n_params=st.floats(1e8, 6e12), seq=st.integers(128, 131072))
def test_flops_grow_with_tokens_params_and_recompute(tokens, n_params, seq):
    base = compute.training_flops(n_params, tokens, seq_len=seq)
    assert compute.training_flops(n_params, tokens * 2, seq_len=seq) == pytest.approx(2 * base)
    assert compute.training_flops(n_params, tokens, seq_len=seq, recompute="full") > base
    # more parameters, more FLOPs (the attention term follows the rounded dense shape, so compare 6ND alone)
    assert compute.training_flops(n_params * 1.5, tokens) > compute.training_flops(n_params, tokens)


def test_estimate_invariants():
    with pytest.raises(ValueError, match="low <= expected <= high"):
        Estimate(2, 1, 3)
    e = Estimate(1, 2, 4).map(lambda v: 1 / v)
    assert (e.low, e.expected, e.high) == (0.25, 0.5, 1.0)
    assert (3 * Estimate(1, 2, 3)).high == 9


def test_inference_estimates_out_of_sample():
    """On rows no parameter was fitted on (other engines, the L40S and H200, NIM): decoding at
    batch 1, first-token latency and static batches of 16-1024 sequences within 10 % in median (the
    issue's targets), and at least 90 % of the rows inside the band (measured: 6.9 %, 4.8 %, 6.0 %,
    29 of 31; batch-1 decoding was 10.6 % before dequantization was modelled as CUDA-core work)."""
    runs = validation.inference_runs()
    test = runs[runs["split"] == "test"]
    assert set(test["group"]).isdisjoint(runs[runs["split"] == "calibration"]["group"])
    median = test.groupby("kind")["error"].apply(lambda e: e.abs().median())
    assert median["decode"] <= 0.10 and median["prefill"] <= 0.10 and median["static batch"] <= 0.10
    assert test["inside band"].mean() >= 0.9
    assert (test["kind"] == "static batch").sum() >= 10 and test[test["kind"] == "static batch"]["batch"].min() >= 16


def test_tensor_parallel_decoding_pays_per_token_all_reduces():
    """gpt-fast: Llama 2 70B on 8 A100 decodes at 62.5 tokens/s, not the 80+ that bandwidth alone allows."""
    a100 = gpus.get("A100 80GB")
    with_comm = compute.decode_throughput("llama-2-70b", a100, tp=8, context_len=200)
    comm_time = compute.tensor_parallel_time("llama-2-70b", a100, 8, 1)
    assert comm_time.expected == pytest.approx(160 * (8.6e-6 + 14 * 0.75e-6), rel=0.05)
    assert with_comm.contains(62.5)
    assert compute.tensor_parallel_time("llama-2-70b", a100, 1, 1).expected == 0


def test_end_to_end_training_runs_include_goodput():
    """A whole run's estimate divides the steady-state time by the expected goodput (0.9), and its
    band adds the step model's and the goodput's log-errors in quadrature, by hand: the steady band
    of calibrated architectures as stored (data/calibration.csv), goodput 0.75-1.0 around 0.9."""
    steady = compute.training_time("llama-2-7b", 1e12, "H100", 64, goodput=1.0)
    run = compute.training_time("llama-2-7b", 1e12, "H100", 64)
    low, high = calibration.band("H100", "bf16")  # the stored quantiles, not a result of run_time
    assert (steady.low / steady.expected, steady.high / steady.expected) == pytest.approx((low, high))
    assert run.expected == pytest.approx(steady.expected / 0.9)
    assert run.high / run.expected == pytest.approx(math.exp(math.hypot(math.log(high), math.log(0.9 / 0.75))))
    assert run.low / run.expected == pytest.approx(math.exp(-math.hypot(math.log(low), math.log(0.9))))
    # narrower than the product of the extremes, wider than either alone
    assert high < run.high / run.expected < high / 0.75
    # a goodput band of the reader's that stops short of 1 widens the fast end too
    mine = compute.run_time(planner.plan("llama-2-7b", "H100", 64, tokens=1e12), 1e12, goodput=Estimate(0.75, 0.9, 0.95))
    assert mine.expected == pytest.approx(steady.expected / 0.9)
    assert mine.low / mine.expected == pytest.approx(math.exp(-math.hypot(math.log(low), math.log(0.9 / 0.95))))
    assert mine.high / mine.expected == pytest.approx(math.exp(math.hypot(math.log(high), math.log(0.9 / 0.75))))


def test_prefill_time_keeps_its_old_dtype_keyword_for_one_release():
    """prefill_time(dtype=) was renamed weight_dtype=, as decode_throughput calls it; the old name still works and warns."""
    new = compute.prefill_time("llama-2-7b", "H100", 1024, weight_dtype="fp8")
    with pytest.warns(DeprecationWarning, match="weight_dtype"):
        old = compute.prefill_time("llama-2-7b", "H100", 1024, dtype="fp8")
    assert old == new


def test_a_given_mfu_band_times_a_run_by_hand():
    """With mfu= and goodput= given, a run is 6ND over GPUs x dense peak x MFU x goodput, by hand:
    7e9 parameters on 1e12 tokens is 4.2e22 FLOP; 8 H100 SXM at 989.5 TFLOP/s (BF16, dense); MFU
    0.3-0.4-0.5 times goodput 0.75-0.9-0.95 spans 0.225-0.36-0.475 of peak."""
    t = compute.training_time(7e9, 1e12, "H100", 8, mfu=Estimate(0.3, 0.4, 0.5), goodput=Estimate(0.75, 0.9, 0.95))
    rate = 8 * 989.5e12
    assert (t.low, t.expected, t.high) == pytest.approx((4.2e22 / (rate * 0.475), 4.2e22 / (rate * 0.36),
                                                         4.2e22 / (rate * 0.225)))


def test_training_time_passes_the_sequence_length_on():
    """Longer sequences cost more attention FLOPs at a given MFU (training_flops at 8,192 tokens), and
    the default estimate plans its layout at the sequence length asked for."""
    m = models.get("llama-2-7b")
    t = compute.training_time(m, 1e11, "H100", 8, mfu=0.4, goodput=1.0, seq_len=8192)
    assert t.expected == pytest.approx(compute.training_flops(m, 1e11, seq_len=8192) / (8 * 989.5e12 * 0.4))
    assert t.expected > compute.training_time(m, 1e11, "H100", 8, mfu=0.4, goodput=1.0).expected
    planned = compute.training_time(m, 1e11, "H100", 64, seq_len=4096, goodput=1.0)
    plan = planner.plan(m, "H100", 64, seq_len=4096, tokens=1e11)
    assert plan.layout.seq_len == 4096 and planned == compute.run_time(plan, 1e11, goodput=1.0)


def test_training_time_plans_at_the_batch_its_tokens_call_for():
    """A 30B model of no publication on 300B tokens is planned at the compute-optimal batch for that
    run, not at the one for 20 tokens per parameter."""
    plan = planner.plan(30e9, "H100", 32, tokens=3e11)
    assert compute.training_time(30e9, 3e11, "H100", 32) == compute.run_time(plan, 3e11)
    assert plan.layout.tokens != planner.plan(30e9, "H100", 32).layout.tokens
