"""Each term of the step model against a hand calculation or a published formula."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from helpers import _data, comm, gpus, memory, models, planner, serving, steptime
from helpers.steptime import Calibration, Layout, Network

#: Parameters chosen for the hand calculations (not the fitted ones): no element-wise traffic.
CAL = Calibration(gemm_efficiency=(("Ampere/bf16", 0.8), ("Hopper/bf16", 0.7), ("Hopper/fp8", 0.5)),
                  elementwise_passes=0.0, overlap_efficiency=1.0)
GPT = replace(models.dense(18.4e9), n_layers=40, d_model=6144, n_heads=48, n_kv_heads=48, d_ff=4 * 6144,
              vocab_size=51200)
A100, H100 = gpus.get("A100 80GB"), gpus.get("H100")


def step(layout: Layout, gpu=A100, model=GPT, **kw) -> steptime.StepTime:
    return steptime.step_time(model, gpu, layout, calibration=kw.pop("calibration", CAL), **kw)


def prologue(k: float) -> float:
    """Time of a matrix product with inner dimension k relative to its FLOPs at the calibrated rate."""
    return 1 + steptime.GEMM_PROLOGUE_K / k


def test_compute_is_six_flops_per_parameter_at_the_gemm_efficiency_plus_causal_flash_attention():
    """One GPU, large GEMMs (compute-bound): 3 x 2 x T x P_linear + 7 b s^2 d per layer (FlashAttention-2:
    2 forward matmuls, 5 backward, each halved by the causal mask), plus the logits, at 80 % of 312 TFLOP/s,
    each product slowed by its tile prologue: forward inner dimension d_in, input gradient d_out, weight
    gradient the micro-batch's 4,096 tokens (q, k, v and o: d, d; the MLP's d -> 4d and 4d -> d)."""
    lay = Layout(global_batch=4, micro_batch=2, seq_len=2048, zero_stage=0)
    t = step(lay)
    tokens, d, w = 4 * 2048, GPT.d_model, prologue(2 * 2048)
    a, b = prologue(d), prologue(4 * d)
    linear = 2 * d * d * (4 * (2 * a + w) + 4 * (a + b + w) + 4 * (b + a + w))  # per token, forward and backward
    assert linear == pytest.approx(6 * 12 * d * d * (1 + steptime.GEMM_PROLOGUE_K * (18 / d + 12 / 4096) / 36))
    head = 2 * d * 51200 * (a + prologue(51200) + w)
    flops = GPT.n_layers * (tokens * linear + 7 * tokens * 2048 * d) + tokens * head
    assert t.compute == pytest.approx(flops / (312e12 * 0.8), rel=1e-9)
    assert t.recompute == t.tensor_parallel == t.pipeline_bubble == t.pipeline_p2p == t.data_parallel == 0


def test_the_tile_prologue_is_fitted_on_measured_h100_products():
    """XLA's measured H100 bf16 products (data/gemm_runs.csv): rate = R k / (k + K0) by least squares on
    1 / rate, K0 within 10 % of GEMM_PROLOGUE_K and every product within 6 %; the same shape at k = 256
    runs more than a third below k = 4096 (504 against 793 TFLOP/s), which a rate without the prologue
    cannot show."""
    runs = _data.table("gemm_runs")
    k, rate = runs["k"].to_numpy(dtype=float), runs["tflops"].to_numpy(dtype=float)
    (inv_r, slope), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(k), 1 / k]), 1 / rate, rcond=None)
    assert slope / inv_r == pytest.approx(steptime.GEMM_PROLOGUE_K, rel=0.10)
    assert np.abs(k / (k + slope / inv_r) / inv_r / rate - 1).max() < 0.06
    big = runs.set_index(["batch", "m", "n", "k"])["tflops"]
    assert big[(4, 4096, 4096, 256)] / big[(4, 4096, 4096, 4096)] < 0.65


def test_full_recompute_adds_one_forward_of_every_layer():
    base = step(Layout(global_batch=2, seq_len=2048, zero_stage=0, recompute="selective"))
    full = step(Layout(global_batch=2, seq_len=2048, zero_stage=0, recompute="full"))
    head = 2 * 2048 * 2 * GPT.d_model * 51200 * (prologue(GPT.d_model) + prologue(51200) + prologue(2048)) / (312e12 * 0.8)
    # forward = the products at their forward inner dimensions and 2 of the 7 attention matmuls
    layers = base.compute - head
    tokens, d = 2 * 2048, GPT.d_model
    linear = 2 * d * d * (8 * prologue(d) + 4 * prologue(4 * d))
    forward = GPT.n_layers * (tokens * linear + 2 * tokens * 2048 * d) / (312e12 * 0.8)
    assert full.recompute == pytest.approx(forward, rel=1e-9)
    assert layers > 3 * forward


def test_unfused_attention_computes_the_whole_score_matrix_and_streams_it():
    """Without FlashAttention the kernels compute all s^2 scores (4 b s^2 d forward, 2x backward) and stream
    the a s^2 b score matrix, 8 bytes per score forward (written by QK^T, read and written by softmax, read
    by the product with V), 13 with dropout (which reads it and writes mask and output), twice that backward."""
    for dropout, per_score in ((False, 8), (True, 13)):
        fused = step(Layout(global_batch=1, seq_len=2048, zero_stage=0, dropout=dropout))
        unfused = step(Layout(global_batch=1, seq_len=2048, zero_stage=0, flash_attention=False, dropout=dropout))
        flops = GPT.n_layers * (4 * 3 - 7) * 2048 * 2048 * GPT.d_model / (312e12 * 0.8)
        traffic = GPT.n_layers * 3 * per_score * GPT.n_heads * 2048**2 / A100.memory_bandwidth
        assert unfused.compute - fused.compute == pytest.approx(flops + traffic, rel=1e-9)


def test_older_attention_kernels_run_the_same_flops_slower():
    """FlashAttention-2 is about 2x faster than FlashAttention 1 and xformers' cutlass kernel, and 1.3-1.5x
    faster than FlashAttention in Triton (Dao 2023, arXiv:2307.08691, Sec. 4.1): the 7 b s^2 d causal
    attention FLOPs per layer (2 forward, 5 backward, halved by the mask) take 2x and 1.4x as long."""
    lay = Layout(global_batch=2, seq_len=4096, zero_stage=0, recompute="none")
    flash2 = step(lay)
    attention = GPT.n_layers * 7 * 2 * 4096 * 4096 * GPT.d_model / (312e12 * 0.8)
    assert step(replace(lay, attention_kernel="flash1")).compute - flash2.compute == pytest.approx(attention, rel=1e-9)
    assert step(replace(lay, attention_kernel="triton")).compute - flash2.compute == pytest.approx(0.4 * attention,
                                                                                                    rel=1e-9)
    unfused = replace(lay, flash_attention=False)
    assert step(replace(unfused, attention_kernel="flash1")).compute == step(unfused).compute  # no fused kernel runs


def test_the_planner_uses_the_fastest_attention_kernel_the_gpu_runs():
    """FlashAttention-2 runs on Ampere, Ada and Hopper and their successors; Turing runs FlashAttention 1,
    Volta xformers' memory-efficient kernel (flash-attn README), at FlashAttention 1's speed."""
    assert [steptime.attention_kernel_for(g) for g in ("V100", "T4", "A100 80GB", "L40S", "H100", "B200")] == \
        ["flash1", "flash1", "flash2", "flash2", "flash2", "flash2"]
    assert planner.plan("llama-2-7b", "V100", 8, tokens=1e9).layout.attention_kernel == "flash1"
    assert planner.plan("llama-2-7b", "A100 80GB", 8, tokens=1e9).layout.attention_kernel == "flash2"


def test_an_architecture_without_runs_takes_its_vendors_mean():
    """GEMM and attention efficiency of an architecture without runs: the mean of its vendor's fitted
    architectures (cuBLAS or hipBLASLt sets how close to peak its GPUs run), else of all of them."""
    cal = Calibration.fitted((("Ampere/bf16", 0.8), ("Hopper/bf16", 0.6), ("Hopper/fp8", 0.7), ("CDNA 3/bf16", 0.5)),
                             2.0, 1.0, (("Ampere", 0.9), ("Hopper", 0.4)))
    assert cal.efficiency("Blackwell", "fp8") == pytest.approx(0.7)  # Ampere and Hopper 16-bit
    assert cal.efficiency("CDNA 4", "bf16") == 0.5 and cal.efficiency("Hopper", "fp8") == 0.7
    assert cal.efficiency("Gaudi 3", "bf16") == cal.default_efficiency == pytest.approx((0.8 + 0.6 + 0.5) / 3)
    assert cal.attention("Blackwell") == pytest.approx(0.65) == cal.attention("CDNA 3")  # no AMD value: all
    assert gpus.vendor_of("CDNA 4") == "AMD" and gpus.vendor_of("Gaudi 3") is None
    assert serving.ServingCalibration(compute_fraction=(("Hopper", 0.5), ("CDNA 3", 0.3))).compute_for("Blackwell") == 0.5


def test_attention_efficiency_is_per_architecture_with_the_mean_elsewhere():
    cal = Calibration.fitted((("Ampere/bf16", 0.8),), 2.0, 1.0, (("Ampere", 0.9), ("Hopper", 0.4)))
    assert cal.attention("Ampere") == 0.9 and cal.attention("Hopper") == 0.4
    assert cal.attention("Blackwell") == pytest.approx(0.65)
    lay = Layout(global_batch=1, seq_len=4096, zero_stage=0, recompute="none")
    slow = step(lay, calibration=replace(cal, attention_efficiency=(("Ampere", 0.45),)))
    attention = GPT.n_layers * 7 * 4096 * 4096 * GPT.d_model / (312e12 * 0.8 * 0.9)
    assert slow.compute - step(lay, calibration=cal).compute == pytest.approx(attention, rel=1e-9)


def test_elementwise_kernels_stream_the_stored_activations_a_calibrated_number_of_times():
    """Korthikanti et al. 2022, Eq. 1: 34 s b h bytes per layer besides the scores with dropout (two 1-byte
    masks fewer without); each of the calibrated passes reads them once forward and twice backward. The
    logits stream 4 s b (h + V) bytes (their Eq. 6)."""
    two = replace(CAL, elementwise_passes=2.0)
    for dropout, per_token in ((True, 34), (False, 32)):
        lay = Layout(global_batch=1, seq_len=2048, zero_stage=0, dropout=dropout)
        a, b = step(lay, calibration=two), step(lay)
        stored = GPT.n_layers * 2048 * GPT.d_model * per_token + 4 * 2048 * (GPT.d_model + 51200)
        assert a.compute - b.compute == pytest.approx(3 * 2 * stored / A100.memory_bandwidth, rel=1e-9)


def test_tensor_parallel_is_four_all_reduces_per_layer_on_nvlink():
    """Megatron-LM: two all-reduces forward and two backward per layer (Shoeybi et al. 2019, Sec. 3), of
    the micro-batch's activations in 16 bits, at comm's expected NVLink all-reduce time."""
    t = step(Layout(tp=8, global_batch=4, micro_batch=1, seq_len=2048, zero_stage=0))
    one = comm.allreduce_time(2048 * GPT.d_model * 2, 8, "nvlink3").expected
    assert t.tensor_parallel == pytest.approx(4 * 4 * GPT.n_layers * one, rel=1e-9)
    full = step(Layout(tp=8, global_batch=4, micro_batch=1, seq_len=2048, zero_stage=0, recompute="full"))
    assert full.tensor_parallel == pytest.approx(4 * 6 * GPT.n_layers * one, rel=1e-9)


def test_a_parallel_block_reduces_attention_and_mlp_outputs_once():
    """GPT-NeoX's parallel block sums attention's and the MLP's outputs before one all-reduce, and
    its backward still reduces each branch's input gradient: 3 per layer instead of 4, 4 instead of
    6 with full recompute."""
    parallel = replace(GPT, block="parallel")
    for recompute, fewer in (("none", 3 / 4), ("full", 4 / 6)):
        lay = Layout(tp=8, global_batch=4, micro_batch=1, seq_len=2048, zero_stage=0, recompute=recompute)
        assert step(lay, model=parallel).tensor_parallel == pytest.approx(fewer * step(lay).tensor_parallel, rel=1e-12)


def test_tensor_parallel_beyond_the_nvlink_domain_falls_back_to_pcie():
    pcie = gpus.get("H100 PCIe")  # NVLink bridges join pairs only
    two = step(Layout(tp=2, global_batch=1, seq_len=2048, zero_stage=0, dtype="bf16"), gpu=pcie)
    four = step(Layout(tp=4, global_batch=1, seq_len=2048, zero_stage=0, dtype="bf16"), gpu=pcie)
    msg = 2048 * GPT.d_model * 2
    assert two.tensor_parallel == pytest.approx(4 * GPT.n_layers * comm.allreduce_time(msg, 2, "nvlink4-bridge").expected)
    assert four.tensor_parallel == pytest.approx(4 * GPT.n_layers * comm.allreduce_time(msg, 4, "pcie5").expected)


@pytest.mark.parametrize("pp,vpp,micro_batches", [(4, 1, 8), (4, 2, 8), (8, 1, 32), (8, 5, 32)])
def test_pipeline_bubble_is_pp_minus_one_over_vpp_micro_batch_slots(pp, vpp, micro_batches):
    """Narayanan et al. 2021, Sec. 2.2: bubble fraction (p - 1)/m, or (p - 1)/(v m) interleaved."""
    t = step(Layout(pp=pp, vpp=vpp, dp=1, global_batch=micro_batches, seq_len=2048, zero_stage=0), model=GPT)
    busy = t.compute + t.recompute + t.tensor_parallel + t.pipeline_p2p
    assert t.pipeline_bubble / busy == pytest.approx((pp - 1) / (vpp * micro_batches), rel=1e-9)


@pytest.mark.parametrize("tp,pp,vpp,dp,micro_batch", [(8, 4, 2, 2, 1), (2, 8, 5, 1, 2), (1, 2, 4, 8, 4)])
def test_interleaving_derived_from_the_plain_schedule_is_the_interleaved_step(tp, pp, vpp, dp, micro_batch):
    """What the planner times once at vpp 1 and derives for vpp > 1 equals timing the interleaved layout."""
    values = dict(tp=tp, pp=pp, dp=dp, micro_batch=micro_batch, global_batch=dp * micro_batch * 4 * pp,
                  seq_len=2048, zero_stage=1, recompute=0)
    plain = steptime.terms(GPT, H100, **values, calibration=CAL)
    derived = steptime.interleaved(plain, vpp, pp, 4 * pp)
    direct = steptime.terms(GPT, H100, **values, vpp=vpp, calibration=CAL)
    assert derived["pipeline_bubble"] < plain["pipeline_bubble"] and derived["pipeline_p2p"] == vpp * plain["pipeline_p2p"]
    for term, seconds in direct.items():
        assert derived[term] == pytest.approx(seconds, rel=1e-12), term


def test_pipeline_sends_cross_the_servers_nic_when_stages_sit_on_different_servers():
    """TP 8 fills an HGX server, so every stage boundary is a send over the GPU's own 200 Gb/s NIC
    (DGX A100: one per GPU): activations forward and gradients back, 1/tp of them per GPU."""
    t = step(Layout(tp=8, pp=2, global_batch=4, seq_len=2048, zero_stage=0), network=Network(8, 8, "ib-hdr"))
    nic = comm.link("ib-hdr")
    send = comm.LAUNCH_LATENCY + nic.hop_latency + 2048 * GPT.d_model * 2 / 8 / (nic.bandwidth * nic.achieved_fraction)
    assert t.pipeline_p2p == pytest.approx(4 * 2 * send, rel=1e-9)


def test_pipeline_sends_without_sequence_parallelism_are_scattered_then_gathered_over_nvlink():
    """Narayanan et al. 2021, Sec. 4.1: without sequence parallelism each of the 8 ranks still sends
    only its 1/8 of the activations over its NIC, and the next stage all-gathers the whole tensor
    over NVLink (7 hops, 7/8 of it per GPU): the sends cost what they cost under sequence
    parallelism plus that all-gather."""
    kw = dict(tp=8, pp=2, global_batch=4, seq_len=2048, zero_stage=0)
    net = Network(8, 8, "ib-hdr")
    split = step(Layout(**kw), network=net)
    whole = step(Layout(**kw, sequence_parallel=False), network=net)
    nvlink = comm.gpu_link(A100, 1)
    gather = comm.alpha_beta(7, nvlink.hop_latency, 7 / 8 * 2048 * GPT.d_model * 2,
                             nvlink.bandwidth * nvlink.achieved_fraction)
    assert whole.pipeline_p2p == pytest.approx(split.pipeline_p2p + 4 * 2 * gather, rel=1e-9)


def test_data_parallel_all_reduce_over_one_nic_per_gpu_without_overlap():
    """TP 8 x DP 16 on DGX H100 servers: each data-parallel ring has one GPU per server and runs over
    that GPU's 400 Gb/s NIC; Megatron reduces bf16 gradients in fp32. Without overlap all of it is exposed."""
    lay = Layout(tp=8, dp=16, global_batch=64, seq_len=2048, zero_stage=0, overlap=False)
    t = step(lay, gpu=H100, network=Network(8, 8, "ib-ndr"))
    nic = comm.link("ib-ndr")
    grads = GPT.n_params / 8 * 4
    ring = comm.LAUNCH_LATENCY + 30 * nic.hop_latency + 2 * 15 / 16 * grads / (nic.bandwidth * nic.achieved_fraction)
    assert t.data_parallel == pytest.approx(ring, rel=1e-9)
    assert t.data_parallel_total == pytest.approx(ring, rel=1e-9)


def test_data_parallel_overlap_is_bounded_by_the_backward_pass_and_the_last_bucket():
    lay = dict(tp=8, dp=16, global_batch=16, seq_len=2048, zero_stage=0)
    hidden = step(Layout(**lay), gpu=H100)
    exposed = step(Layout(**lay, overlap=False), gpu=H100)
    assert 0 < hidden.data_parallel < exposed.data_parallel
    backward = 2 / 3 * hidden.compute  # one micro-batch: all of its backward
    assert hidden.data_parallel == pytest.approx(max(exposed.data_parallel - backward,
                                                     exposed.data_parallel * steptime.BUCKET_BYTES / (GPT.n_params / 8 * 4)))
    half = step(Layout(**lay), gpu=H100, calibration=replace(CAL, overlap_efficiency=0.5))
    assert half.data_parallel > hidden.data_parallel


def test_distributed_optimizer_reduce_scatters_gradients_and_gathers_weights_behind_the_next_forward():
    """ZeRO-1 (Megatron's distributed optimizer): a reduce-scatter of the fp32 gradients hidden behind the
    last backward, an all-gather of the 16-bit weights behind the next forward: 6 instead of 8 bytes per
    parameter on the wire."""
    lay = dict(tp=8, dp=16, global_batch=64, seq_len=2048, overlap=False)
    zero0, zero1 = step(Layout(**lay, zero_stage=0), gpu=H100), step(Layout(**lay, zero_stage=1), gpu=H100)
    nic = comm.link("ib-ndr")
    per_byte = 15 / 16 * GPT.n_params / 8 / (nic.bandwidth * nic.achieved_fraction)
    latency = 2 * (comm.LAUNCH_LATENCY + 15 * nic.hop_latency)
    assert zero1.data_parallel == pytest.approx(latency + per_byte * (4 + 2), rel=1e-9)
    assert zero1.data_parallel / zero0.data_parallel == pytest.approx(6 / 8, rel=0.01)


def test_deepspeed_gathers_the_weights_inside_its_step_on_four_efa_adapters_per_server():
    """Pythia 12B's layout on AWS p4d (TP 4 x DP 64, ZeRO-1, fp16 gradients): DeepSpeed reduces the gradients
    during the last backward but gathers the 16-bit weights inside its optimizer step, exposed. Each ring
    has 2 GPUs per server, which share the server's 4 x 100 Gb/s EFA with the other 3 rings: 2/8 of
    4 x 12.5 GB/s at EFA's achieved fraction, paced by the 5 us cross-server hop."""
    pythia = replace(models.dense(11.85e9), n_layers=36, d_model=5120, n_heads=40, n_kv_heads=40, d_ff=4 * 5120)
    lay = dict(tp=4, dp=64, micro_batch=8, global_batch=1024, seq_len=2048, recompute="full", dtype="fp16")
    p4d = steptime.server("AWS p4d.24xlarge")
    assert p4d == Network(8, 4, "efa-100")
    megatron = step(Layout(**lay), model=pythia, network=p4d)
    deepspeed = step(Layout(**lay, gather_overlap=False), model=pythia, network=p4d)
    efa = comm.link("efa-100")
    bw = 2 * 4 * efa.bandwidth * efa.achieved_fraction / 8
    gather = comm.LAUNCH_LATENCY + 63 * efa.hop_latency + 63 / 64 * pythia.n_params / 4 * 2 / bw
    assert gather == pytest.approx(0.79, abs=0.01)  # seconds, on a step of several
    hidden = max(gather - 1 / 3 * megatron.compute / 2, gather * steptime.BUCKET_BYTES / (pythia.n_params / 4 * 2))
    assert deepspeed.data_parallel - megatron.data_parallel == pytest.approx(gather - hidden, rel=1e-9)
    assert deepspeed.compute == megatron.compute and deepspeed.data_parallel_total == megatron.data_parallel_total


def test_data_parallel_rings_follow_the_rank_order_tensor_then_data_then_pipeline():
    """Megatron-LM and DeepSpeed number the ranks tp first, then dp, then pp. Falcon-7B's PP 2 x DP 192
    on AWS p4d: each server holds 8 data-parallel peers of one stage, so the stage's gradient ring
    crosses servers at all 4 x 100 Gb/s of EFA (not half, as if both stages shared each server):
    fp32 gradients reduce-scattered and 16-bit weights gathered, each 191/192 of the stage's half of
    the parameters. With PP 8 x DP 2 on HGX servers, each pair of replicas shares a server and its
    ring runs over NVLink."""
    falcon = replace(models.dense(6.92e9), n_layers=32, d_model=4544, n_heads=71, n_kv_heads=1, d_ff=18176,
                     vocab_size=65024)
    p4d, efa = steptime.server("AWS p4d.24xlarge"), comm.link("efa-100")
    lay = Layout(pp=2, dp=192, micro_batch=2, global_batch=2304, seq_len=2048, zero_stage=1, recompute="none")
    t = step(lay, model=falcon, network=p4d)
    bw, hops = 4 * efa.bandwidth * efa.achieved_fraction, 191 * efa.hop_latency
    stage = falcon.n_params / 2
    ring = (comm.LAUNCH_LATENCY + hops + 191 / 192 * stage * 4 / bw) + (comm.LAUNCH_LATENCY + hops + 191 / 192 * stage * 2 / bw)
    assert t.data_parallel_total == pytest.approx(ring, rel=1e-9)
    pairs = step(Layout(pp=8, dp=2, global_batch=16, seq_len=2048, zero_stage=1), gpu=H100)
    link = comm.link("nvlink4")
    nvlink = 2 * (comm.LAUNCH_LATENCY + link.hop_latency) + 1 / 2 * GPT.n_params / 8 * 6 / (link.bandwidth * link.achieved_fraction)
    assert pairs.data_parallel_total == pytest.approx(nvlink, rel=1e-9)


def test_zero3_gathers_weights_twice_and_reduces_gradients_every_micro_batch():
    """FSDP full shard: all-gather the 16-bit weights forward and backward and reduce-scatter the gradients,
    for every micro-batch (Rajbhandari et al. 2019, Sec. 7: 1.5 x the volume of data parallelism), one
    collective per layer (an FSDP unit per block), each paying its launch and ring latency."""
    lay = Layout(dp=8, global_batch=32, micro_batch=2, seq_len=2048, zero_stage=3, overlap=False)
    t = step(lay, gpu=H100, network=Network(8, 8, "ib-ndr"))
    link = comm.link("nvlink4")
    bw = link.bandwidth * link.achieved_fraction
    latency = GPT.n_layers * (comm.LAUNCH_LATENCY + 7 * link.hop_latency)
    gather = latency + 7 / 8 * GPT.n_params * 2 / bw
    scatter = latency + 7 / 8 * GPT.n_params * 4 / bw
    assert t.data_parallel == pytest.approx(2 * (2 * gather + scatter), rel=1e-9)


MIXTRAL = models.get("mixtral-8x7b")


@pytest.mark.parametrize("name,ep,tp", [("mixtral-8x7b", 8, 1), ("qwen3-30b-a3b", 64, 1), ("mixtral-8x7b", 8, 2)])
def test_expert_parallelism_exchanges_each_token_with_its_experts_by_all_to_all(name, ep, tp):
    """Each MoE layer dispatches every token of the GPU's share (1/tp of the micro-batch) to its top-k
    experts and combines them back, forward and backward: 4 all-to-alls per layer and micro-batch of
    s/tp x k x d x 2 bytes x (ep - 1)/ep each. The shares for GPUs of the same server (8/tp of the
    group) go over NVLink, the rest over the GPU's share of the server's NICs (DGX H100: one 400 Gb/s
    NIC per GPU), at once; 6 with full recompute."""
    m = models.get(name)
    lay = Layout(tp=tp, dp=64, ep=ep, global_batch=128, micro_batch=1, seq_len=4096, zero_stage=1, recompute="none")
    t = step(lay, gpu=H100, model=m)
    nvlink, nic = comm.gpu_link(H100, 1), comm.link("ib-ndr")
    n_bytes = 4096 / tp * m.experts_per_token * m.d_model * 2 * (ep - 1) / ep
    inside = min(ep, 8 // tp)
    near = n_bytes * (inside - 1) / (ep - 1) / (nvlink.bandwidth * nvlink.achieved_fraction)
    far = n_bytes * (ep - inside) / (ep - 1) / (nic.bandwidth * nic.achieved_fraction)
    latency = max(nvlink.hop_latency, nic.hop_latency) if ep > inside else nvlink.hop_latency
    one = comm.LAUNCH_LATENCY + latency + max(near, far)
    assert m.n_moe_layers == m.n_layers
    assert t.expert_parallel == pytest.approx(2 * m.n_layers * 4 * one, rel=1e-9)  # 2 micro-batches
    full = step(replace(lay, recompute="full"), gpu=H100, model=m)
    assert full.expert_parallel == pytest.approx(2 * m.n_layers * 6 * one, rel=1e-9)
    dense = step(replace(lay, ep=1), gpu=H100, model=m)  # all experts on each GPU: their weights read whole
    assert dense.expert_parallel == 0 and dense.compute >= t.compute


def test_routed_experts_read_every_local_experts_weights_however_few_tokens_each_gets(monkeypatch):
    """Llama 4 Maverick (128 experts, one routed per token) at one 2048-token micro-batch: without
    expert parallelism each GPU holds all 128 experts and each receives 16 tokens, so its grouped
    GEMMs are bound by reading 24 MoE layers x 128 experts x 3 matrices of 5120 x 8192 in 16 bits
    (773 GB) and the tokens' inputs and outputs, forward and twice backward: 0.69 s on an H100
    (3.35 TB/s). Spread over 64 GPUs (EP 64), 2 experts each, the same products are bound by their
    FLOPs at the calibrated rate: the step's compute falls by the difference."""
    m = models.get("llama-4-maverick")
    assert (m.n_moe_layers, m.n_experts, m.experts_per_token, m.routed_expert_shapes) == (
        24, 128, 1, ((5120, 8192), (5120, 8192), (8192, 5120)))
    products = 3 * m.n_moe_layers * 3  # forward and backward, 3 matrices per expert
    weights, tokens = 5120 * 8192 * 2, 2048 * (5120 + 8192) * 2  # bytes of one matrix, of its inputs and outputs
    reads = products * (128 * weights + tokens) / H100.memory_bandwidth
    flops = products * 2 * 2048 * 5120 * 8192 / (H100.peak_flops("bf16") * 0.7)  # CAL's Hopper efficiency
    assert 0.69 < reads and flops < 0.1 * reads
    lay = Layout(dp=64, global_batch=64, seq_len=2048, zero_stage=1, recompute="none")
    monkeypatch.setattr(steptime, "GEMM_PROLOGUE_K", 0)  # the tile prologue apart (tested above)
    one, spread = (step(replace(lay, ep=e), gpu=H100, model=m) for e in (1, 64))
    assert one.compute - spread.compute == pytest.approx(reads - flops, rel=1e-9)


def test_expert_parallelism_shards_the_experts_states_and_gradients_by_hand():
    """Mixtral 8x7B, ZeRO-1 over 64 GPUs: the routed experts (96.6 % of the parameters) split 8 ways.
    16-bit weights and gradients per GPU fall to (1 - s + s/8) of the model's; Adam's fp32 states stay
    at 1/64 of them (the dense part over 64 replicas, each expert over its 8), and so does the optimizer
    step. The dense gradients reduce-scatter (fp32) and the weights all-gather (16-bit) over the 64 GPUs,
    eight to a server, whose ring runs at the server's eight NICs; each expert's over its 8 replicas, one
    to a server, at one NIC."""
    s, n = MIXTRAL.routed_share, MIXTRAL.n_params
    assert 0.96 < s < 0.97
    plain = memory.training(MIXTRAL, zero_stage=1, dp=64)
    split = memory.training(MIXTRAL, zero_stage=1, dp=64, ep=8)
    assert split.weights == pytest.approx(2 * n * (1 - s + s / 8)) and plain.weights == pytest.approx(2 * n)
    assert split.gradients == pytest.approx(2 * n * (1 - s + s / 8))
    assert split.optimizer == pytest.approx(plain.optimizer) == pytest.approx(12 * n / 64)
    lay = Layout(dp=64, global_batch=64, seq_len=4096, zero_stage=1, recompute="none")
    one, eight = (step(replace(lay, ep=e), gpu=H100, model=MIXTRAL) for e in (1, 8))
    assert eight.optimizer == pytest.approx(one.optimizer)
    nvlink, nic = comm.gpu_link(H100, 1), comm.link("ib-ndr")
    per_nic = nic.bandwidth * nic.achieved_fraction  # one NIC per GPU
    latency = max(nvlink.hop_latency, nic.hop_latency)

    def ring(n_bytes, members, bandwidth):
        return comm.alpha_beta(members - 1, latency, (members - 1) / members * n_bytes, bandwidth)
    dense_bw = min(nvlink.bandwidth * nvlink.achieved_fraction, 8 * per_nic)
    dense = ring(4 * n * (1 - s), 64, dense_bw) + ring(2 * n * (1 - s), 64, dense_bw)
    experts = ring(4 * n * s / 8, 8, per_nic) + ring(2 * n * s / 8, 8, per_nic)
    assert eight.data_parallel_total == pytest.approx(dense + experts, rel=1e-9)
    assert one.data_parallel_total == pytest.approx(ring(4 * n, 64, dense_bw) + ring(2 * n, 64, dense_bw), rel=1e-9)


def test_expert_parallelism_checks():
    with pytest.raises(ValueError, match="ep=8 must divide dp=4"):
        Layout(dp=4, ep=8, global_batch=4)
    with pytest.raises(ValueError, match="zero_stage=3"):
        Layout(dp=8, ep=8, global_batch=8, zero_stage=3)
    with pytest.raises(ValueError, match="dense"):
        steptime.step_time("llama-2-7b", "H100", Layout(dp=8, ep=8, global_batch=8))
    with pytest.raises(ValueError, match="must divide the 8 experts"):
        memory.training(MIXTRAL, dp=16, ep=16, zero_stage=1)
    assert Layout(dp=16, ep=8, global_batch=16).describe().startswith("TP 1 x PP 1 x DP 16 (EP 8)")


def test_optimizer_streams_thirty_bytes_per_local_parameter():
    t = step(Layout(tp=2, pp=2, dp=4, global_batch=8, seq_len=2048, zero_stage=1))
    assert t.optimizer == pytest.approx(30 * GPT.n_params / 16 / (A100.memory_bandwidth * steptime.STREAM_FRACTION))
    t0 = step(Layout(tp=2, pp=2, dp=4, global_batch=8, seq_len=2048, zero_stage=0))
    assert t0.optimizer == pytest.approx(4 * t.optimizer)


def test_fp8_runs_the_linear_layers_at_the_fp8_rate_and_attention_in_bf16():
    """Transformer Engine: the linear layers at the FP8 rate, their inputs cast from BF16 (3 bytes moved per
    element, forward and twice backward); attention stays BF16."""
    lay = dict(global_batch=1, seq_len=4096, zero_stage=0)
    bf16, fp8 = step(Layout(**lay), gpu=H100), step(Layout(**lay, dtype="fp8"), gpu=H100)
    tokens = 4096
    attention = GPT.n_layers * 7 * tokens * 4096 * GPT.d_model / (H100.peak_flops("bf16") * 0.7)
    cast = GPT.n_layers * 3 * 3 * tokens * (3 * GPT.d_model + GPT.d_ff) / H100.memory_bandwidth  # bf16 -> fp8 inputs
    assert fp8.compute - attention - cast == pytest.approx((bf16.compute - attention) * 0.7 * H100.peak_flops("bf16") /
                                                           (0.5 * H100.peak_flops("fp8")), rel=1e-9)


def test_small_matrices_hit_the_memory_roof():
    """A per-GEMM roofline: one token through a wide layer is bandwidth-bound, so compute time is at least
    the bytes of the weights over the memory bandwidth."""
    t = step(Layout(global_batch=1, seq_len=1, zero_stage=0))
    weights = GPT.n_layers * 12 * GPT.d_model**2 * 2
    assert t.compute >= 3 * weights / A100.memory_bandwidth


def test_step_totals_and_throughput():
    lay = Layout(tp=8, pp=4, dp=8, global_batch=512, seq_len=2048)
    t = step(lay)
    assert t.total == pytest.approx(sum(t.as_dict().values()))
    assert t.tokens_per_second_per_gpu == pytest.approx(512 * 2048 / t.total / 256)
    assert 0 < t.mfu < 0.8 and 0 < t.scaling_efficiency < 1


def test_layout_checks():
    with pytest.raises(ValueError, match="global_batch=10 must be a multiple of dp \\* micro_batch = 4"):
        Layout(dp=2, micro_batch=2, global_batch=10)
    with pytest.raises(ValueError, match="zero_stage=3 does not combine with pp=2"):
        Layout(pp=2, zero_stage=3)
    with pytest.raises(ValueError, match="vpp=2 needs pipeline parallelism"):
        Layout(vpp=2)
    with pytest.raises(ValueError, match="recompute='some' is not supported"):
        Layout(recompute="some")
    with pytest.raises(ValueError, match="attention_kernel='flash3' is not supported.*flash2.*flash1.*triton"):
        Layout(attention_kernel="flash3")
    with pytest.raises(ValueError, match="vpp=2 leaves a model chunk without a layer: .*40 layers on 40 stages "
                                         "allow at most vpp=1"):
        step(Layout(pp=40, vpp=2, global_batch=40))
    step(Layout(pp=16, vpp=3, global_batch=48))  # uneven stages: 40 layers on 16 stages, 3 on the busiest
    with pytest.raises(ValueError, match="tp=5 must divide the 48 attention heads"):
        step(Layout(tp=5))
    with pytest.raises(ValueError, match="no 'fp8' rate"):
        step(Layout(dtype="fp8"))
    with pytest.raises(ValueError, match="layout must be a steptime.Layout"):
        steptime.step_time(GPT, A100, {"tp": 2})


def test_every_gpu_has_its_servers():
    for name in gpus.names():
        net = steptime.network_for(name)
        assert net.gpus_per_server >= 1 and net.nics_per_server >= 1
    assert steptime.network_for("H100") == Network(8, 8, "ib-ndr")
    assert steptime.network_for("L40S").nics_per_server == 2
    with pytest.raises(ValueError, match="name='p4d'"):
        steptime.server("p4d")


def test_memory_helpers_agree_with_training():
    """The array form the planner uses gives the same bytes as memory.training."""
    for tp, pp, dp, zero, rc in [(1, 1, 8, 3, "selective"), (8, 4, 2, 1, "full"), (2, 1, 4, 2, "none")]:
        states = memory.shard(memory.model_states(GPT, "bf16", "adamw", True, "full", 16), tp, pp, dp, zero)
        acts = memory.activations(GPT, 2, 2048, recompute=rc, tp=tp)
        expect = memory.training(GPT, micro_batch_size=2, seq_len=2048, recompute=rc, zero_stage=zero, dp=dp, tp=tp, pp=pp)
        assert sum(states) + acts + memory.RUNTIME_OVERHEAD == pytest.approx(expect.total)


def test_planned_memory_agrees_with_training_in_every_training_format():
    """planner.layout_bytes of a layout equals memory.training's total with the same settings, fp32
    and TF32 included (their activations take 4 bytes a value, where mixed precision keeps 2)."""
    for dtype in ("bf16", "fp32", "tf32"):
        for rc in ("none", "full"):
            lay = Layout(dp=8, micro_batch=2, global_batch=16, seq_len=2048, zero_stage=3, recompute=rc, dtype=dtype)
            expect = memory.training(GPT, dtype=dtype, micro_batch_size=2, seq_len=2048, recompute=rc, zero_stage=3, dp=8)
            assert planner.layout_bytes(GPT, lay) == pytest.approx(expect.total), (dtype, rc)


def test_a_layout_describes_itself_and_names_recompute_only_when_used():
    plain = steptime.Layout(tp=2, pp=1, dp=4, micro_batch=1, global_batch=8, seq_len=2048, zero_stage=1, recompute="none")
    assert plain.describe() == "TP 2 x PP 1 x DP 4, micro-batch 1, ZeRO-1"
    deep = steptime.Layout(tp=2, pp=2, dp=4, micro_batch=1, global_batch=8, seq_len=2048, zero_stage=1,
                           recompute="full", vpp=2)
    assert deep.describe() == "TP 2 x PP 2 (interleaved 2) x DP 4, micro-batch 1, ZeRO-1, full recompute"


@pytest.mark.parametrize("model", ["llama-2-70b", "qwen3-30b-a3b"])
def test_terms_per_distinct_combination_equal_terms_row_by_row(model, monkeypatch):
    """The sweep's shortcut (:func:`steptime._per_distinct`: a micro-batch's work and the data-parallel
    collectives once per distinct GPU, tp, micro-batch, ep ... of a catalog's layouts) changes no number:
    every plan of the catalog is the same with it and without it, to the last bit."""
    jobs = [(g, planner.COUNTS) for g in ("H100-SXM5-80GB", "A100-SXM4-40GB", "L40S-48GB", "MI300X-192GB")]

    def sweep(min_rows):
        monkeypatch.setattr(steptime, "DISTINCT_MIN_ROWS", min_rows)
        planner._catalog.cache_clear()
        return planner.catalog(model, jobs, tokens=1e12)
    shortcut, direct = sweep(1), sweep(10**9)
    assert any(p is not None for plans in direct for p in plans)
    assert shortcut == direct


def test_terms_broadcast_over_a_grid_as_over_its_rows():
    """terms() takes numpy grids as well as rows: a 1,024 x 2 grid of layouts (not compacted) gives each
    layout the numbers its 2,048 rows give when flattened (compacted per distinct combination)."""
    rng = np.random.default_rng(0)
    grid = dict(tp=rng.choice([1, 2, 4, 8], (1024, 2)), pp=rng.choice([1, 2, 4], (1024, 2)),
                dp=rng.choice([1, 8, 64], (1024, 2)), micro_batch=rng.choice([1, 2, 4], (1024, 2)),
                zero_stage=rng.choice([1, 3], (1024, 2)), recompute=rng.choice([0, 2], (1024, 2)))
    grid["global_batch"] = grid["dp"] * grid["micro_batch"] * 8
    flat = {k: v.ravel() for k, v in grid.items()}
    assert len(flat["tp"]) >= steptime.DISTINCT_MIN_ROWS
    on_grid = steptime.terms(GPT, H100, **grid, seq_len=2048, calibration=CAL)
    on_rows = steptime.terms(GPT, H100, **flat, seq_len=2048, calibration=CAL)
    for term, seconds in on_rows.items():
        assert np.array_equal(np.ravel(on_grid[term]), seconds), term


def test_an_absurd_sequence_length_neither_overflows_nor_fits():
    """Hypothesis found it: at 930M tokens a sequence's s^2 * b * heads overflowed int64 and the step came
    out negative and "fitting". The arithmetic is in floats: the step is long and needs petabytes."""
    p = planner.plan("llama-2-7b", "H100", 1, seq_len=929_887_697, tokens=1e3)
    assert not p.fits and p.memory_per_gpu > 1e14
    assert all(getattr(p.step, k) >= 0 for k in steptime.StepTime.TERMS) and p.step.total > 1e9


def test_context_parallelism_gives_each_gpu_its_share_of_the_tokens_and_of_the_causal_pairs(monkeypatch):
    """CP 2 on one sequence: each GPU runs the matrix products of half the tokens and half the causal
    attention pairs (the load-balanced chunks), so its compute is half a whole sequence's on one GPU
    (but for the weight gradients' shorter inner dimension, the tile prologue, set apart here)."""
    monkeypatch.setattr(steptime, "GEMM_PROLOGUE_K", 0)
    whole = step(Layout(global_batch=2, seq_len=4096, zero_stage=0), gpu=H100)
    split = step(Layout(cp=2, global_batch=2, seq_len=4096, zero_stage=0), gpu=H100)
    assert split.compute == pytest.approx(whole.compute / 2, rel=1e-9)
    assert split.n_gpus == 2 and split.tokens == whole.tokens


@pytest.mark.parametrize("seq_len,exposed", [(4096, True), (131072, False)])
def test_context_parallel_ring_exposes_what_each_attention_block_cannot_cover(seq_len, exposed):
    """CP 8 over one DGX H100's NVLink, GPT's 48 key-value heads: cp - 1 times per layer each GPU passes
    its keys and values (2 x s/8 tokens x 6144 x 2 bytes) on, while computing one eighth of its attention;
    backward passes them with their gradients (twice the bytes) behind 2.5x the forward's work. At 4k tokens
    a hop outlasts a block (exposed); at 128k the block's s^2 work hides it (nothing exposed)."""
    lay = Layout(cp=8, global_batch=1, seq_len=seq_len, zero_stage=0, recompute="none")
    t = step(lay, gpu=H100)
    link = comm.link("nvlink4")
    bw, tokens = link.bandwidth * link.achieved_fraction, seq_len / 8
    kv = 2 * tokens * GPT.d_model * 2
    attn = 2 * tokens * seq_len * GPT.d_model / (H100.peak_flops("bf16") * 0.7)  # causal, forward, this GPU's 1/8
    per_layer = 7 * (max(comm.alpha_beta(1, link.hop_latency, kv, bw) - attn / 8, 0) +
                     max(comm.alpha_beta(1, link.hop_latency, 2 * kv, bw) - 2.5 * attn / 8, 0))
    assert t.context_parallel == pytest.approx(GPT.n_layers * per_layer, rel=1e-9)
    assert (t.context_parallel > 0) == exposed
    full = step(replace(lay, recompute="full"), gpu=H100)  # the recomputed forward exchanges again
    assert full.context_parallel - t.context_parallel == pytest.approx(
        GPT.n_layers * 7 * max(comm.alpha_beta(1, link.hop_latency, kv, bw) - attn / 8, 0), rel=1e-9)


def test_context_parallel_ranks_reduce_gradients_and_shard_the_optimizer_with_the_data_parallel_ones():
    """CP 2 x DP 4 holds the same weights on 8 GPUs as DP 8: the same gradient collectives over 8 GPUs, the
    same optimizer shard, and the memory of DP 8 at half the sequence (Megatron-Core's data-parallel group
    with context parallelism)."""
    split = Layout(cp=2, dp=4, global_batch=8, seq_len=4096, zero_stage=1, recompute="none")
    plain = Layout(dp=8, global_batch=8, seq_len=2048, zero_stage=1, recompute="none")
    a, b = step(split, gpu=H100), step(plain, gpu=H100)
    assert a.data_parallel_total == b.data_parallel_total and a.optimizer == b.optimizer
    pair = step(Layout(cp=2, global_batch=1, seq_len=4096, overlap=False), gpu=H100)  # no dp: CP's pair still reduces
    assert pair.data_parallel == step(Layout(dp=2, global_batch=2, seq_len=2048, overlap=False), gpu=H100).data_parallel > 0
    assert planner.layout_bytes(GPT, split) == pytest.approx(planner.layout_bytes(GPT, plain), rel=1e-12)


def test_context_parallel_layout_checks_and_label():
    lay = Layout(tp=2, cp=4, dp=2, global_batch=2, seq_len=8192)
    assert lay.n_gpus == 16 and lay.describe().startswith("TP 2 x CP 4 x PP 1 x DP 2")
    with pytest.raises(ValueError, match="cp=4 needs seq_len a multiple of 2 \\* cp = 8 \\(got 4100\\)"):
        Layout(cp=4, seq_len=4100)
    with pytest.raises(ValueError, match="cp=2 needs .*flash_attention=True and ep=1 \\(got False and 1\\)"):
        Layout(cp=2, flash_attention=False)
    with pytest.raises(ValueError, match="cp=2 needs .*\\(got True and 2\\)"):
        Layout(cp=2, ep=2, dp=2, global_batch=2)
    with pytest.raises(ValueError, match="cp must be a positive integer, got 0"):
        Layout(cp=0)


def test_the_planner_splits_only_long_sequences_over_gpus():
    """Context parallelism is tried where each GPU keeps at least 4,096 tokens of a sequence (so a 2k or
    4k job plans as it did without it); at 128k tokens a 70B model on 256 H100 splits each sequence, fits,
    and the planner's step is the step of that layout timed alone."""
    assert planner.context_degrees(2048) == planner.context_degrees(4096) == (1,)
    assert planner.context_degrees(8192) == (1, 2) and planner.context_degrees(131072) == (1, 2, 4, 8, 16)
    assert planner.context_degrees(12288) == (1, 2)  # 12288 / 4 = 3072 tokens: too few
    assert planner.plan("llama-2-70b", "H100", 256, seq_len=4096).layout.cp == 1
    p = planner.plan("llama-2-70b", "H100", 256, seq_len=131072)
    assert p.layout.cp > 1 and p.fits and p.layout.n_gpus == 256
    alone = steptime.step_time("llama-2-70b", "H100", p.layout)
    assert alone.total == pytest.approx(p.step.total, rel=1e-9)


def test_the_formula_sheet_states_the_tile_prologue():
    """book/formulas.md types k/(k + k0) with the value of steptime.GEMM_PROLOGUE_K."""
    sheet = (Path(__file__).resolve().parents[1] / "book" / "formulas.md").read_text(encoding="utf-8")
    assert f"k/(k+{steptime.GEMM_PROLOGUE_K})$" in sheet
