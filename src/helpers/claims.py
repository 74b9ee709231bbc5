"""The article's checkable claims, each with the figure this package computes for it.

Quotes, translations, verdicts (one of :data:`VERDICTS`, with an optional note) and sources live
in ``data/claims.csv``; the ``check`` column
names the function below that computes the figure the verdict rests on. Claims about code or
APIs, which no number settles, carry their sourced check as text (``checked_text``).
"""

import pandas as pd

from . import _data, comm, compute, cost, gpus, memory, models, scaling, select
from .units import DAY, TFLOPS, gb

VERDICTS = ("correct", "roughly right", "depends", "wrong", "unverifiable", "opinion")
#: The admonition class of a chapter's "Check the article" box for each verdict: a warning for a
#: claim that is wrong, a tip otherwise (the chapters' boxes are checked against it by the tests).
BOX_CLASS = {"wrong": "warning"}


def _states_per_param(**kwargs) -> float:
    """Bytes of weights + gradients + optimizer per parameter, from the memory model."""
    b = memory.training(models.dense(1e9), **kwargs)
    return (b.weights + b.gradients + b.optimizer) / 1e9


def train_vs_infer() -> str:
    m = models.get("llama-2-7b")
    setup = dict(seq_len=2048, recompute="selective")  # the Memory chapter's first figure: FlashAttention, one sequence
    train = memory.training(m, **setup).total
    infer = memory.inference(m, context_len=2048).total
    qlora = memory.training(m, method="qlora", **setup).total
    return (f"Mixed-precision AdamW keeps {_states_per_param():.0f} bytes per parameter against 2 for bf16 "
            f"inference ({_states_per_param() / 2:.0f}x). Llama 2 7B, one 2048-token sequence with FlashAttention: "
            f"training {gb(train)}, inference {gb(infer)} ({train / infer:.1f}x); QLoRA training {gb(qlora)} "
            f"({qlora / infer:.1f}x).")


def weights_175b() -> str:
    b = memory.inference(175e9, weight_dtype="bf16")
    return f"175e9 x 2 bytes = {gb(b.weights)} in fp16/bf16 ({b.weights / 2**30:,.0f} GiB); {gb(2 * b.weights)} in fp32."


def gradients() -> str:
    b = memory.training(175e9)
    return (f"One gradient per parameter: {gb(b.gradients)} for 175B in bf16 (2 bytes each), "
            f"twice that where gradients are kept in fp32.")


def adam_states() -> str:
    b = memory.training(175e9)
    return (f"Two moments per parameter, in fp32: 8 bytes/parameter, 4x the bf16 weights; with the fp32 "
            f"master copy mixed precision needs 12 bytes/parameter: {gb(b.optimizer)} for 175B, "
            f"{b.optimizer / b.weights:.0f}x the weights.")


def activations() -> str:
    m = models.get("llama-2-7b")
    base = memory.training(m, micro_batch_size=1, seq_len=2048).activations
    batch = memory.training(m, micro_batch_size=8, seq_len=2048).activations
    longer = memory.training(m, micro_batch_size=1, seq_len=4096).activations
    unfused = [memory.training(m, seq_len=s, flash_attention=False).activations for s in (2048, 4096)]
    return (f"Llama 2 7B without recompute, with FlashAttention: {gb(base)} at 1 x 2048 tokens, {gb(batch)} at "
            f"batch 8 ({batch / base:.1f}x), {gb(longer)} at 4096 tokens ({longer / base:.1f}x). Without FlashAttention "
            f"the stored attention scores grow with s^2: {gb(unfused[0])} at 2048 tokens, {gb(unfused[1])} at 4096 "
            f"({unfused[1] / unfused[0]:.1f}x).")


def a6000_10b() -> str:
    need = _states_per_param() * 10e9
    a6000, a100 = gpus.get("RTX A6000"), gpus.get("A100 80GB")
    return (f"Weights, gradients and AdamW states of 10B take {gb(need)} before activations: more than the "
            f"A6000's {a6000.memory_gb_vendor:g} GB and the A100's {a100.memory_gb_vendor:g} GB. Either it fails at step 1 or "
            f"something else (LoRA, 8-bit optimizer, offload) was used; a late OOM points to a long batch.")


def fp16_halves() -> str:
    m = models.get("llama-2-7b")
    fp32 = memory.training(m, dtype="fp32", seq_len=2048)
    mixed = memory.training(m, dtype="fp16", seq_len=2048)
    states = lambda b: b.weights + b.gradients + b.optimizer  # noqa: E731
    return (f"Llama 2 7B at 2048 tokens: fp32 {gb(fp32.total)}, fp16 mixed {gb(mixed.total)} "
            f"({1 - mixed.total / fp32.total:.0%} less). Activations halve ({gb(fp32.activations)} -> "
            f"{gb(mixed.activations)}) but model states stay at {states(mixed) / m.n_params:.0f} bytes/parameter "
            f"because of the fp32 master copy.")


def recompute_saving() -> str:
    m = models.get("llama-2-7b")
    kw = dict(micro_batch_size=4, seq_len=4096, zero_stage=3, dp=8)
    none, full = memory.training(m, **kw), memory.training(m, recompute="full", **kw)
    alone = memory.training(m, micro_batch_size=4, seq_len=4096)
    alone_full = memory.training(m, micro_batch_size=4, seq_len=4096, recompute="full")
    return (f"Full recompute removes {1 - full.activations / none.activations:.0%} of activation memory. "
            f"Llama 2 7B, 4 x 4096 tokens, ZeRO-3 over 8 GPUs: {gb(none.total)} -> {gb(full.total)} per GPU "
            f"({1 - full.total / none.total:.0%} saved); on one GPU without ZeRO: {gb(alone.total)} -> "
            f"{gb(alone_full.total)} ({1 - alone_full.total / alone.total:.0%}).")


def recompute_cost() -> str:
    ratio = compute.training_flops(1e9, 1e9, recompute="full") / compute.training_flops(1e9, 1e9)
    return f"Full recompute repeats the forward pass: {ratio:.3f}x the FLOPs (+{ratio - 1:.0%}); selective recompute costs a few percent."


def a6000_20b() -> str:
    m = models.dense(20e9)
    a6000 = gpus.get("RTX A6000")
    weights = memory.inference(m).weights
    full = memory.training(m, recompute="full")
    qlora = memory.training(m, recompute="full", method="qlora")
    return (f"The A6000 has {a6000.memory_gb_vendor:g} GB, not 24 GB. 20B in bf16 is {gb(weights)} of weights "
            f"alone; full training with recompute needs {gb(full.total)}, and checkpointing does not shrink "
            f"model states. Only QLoRA (4-bit frozen base, trained adapters) with recompute comes under 24 GB: "
            f"{gb(qlora.total)}, and that is adapter fine-tuning, not training the 20B model.")


def h100_fp8() -> str:
    h100, a100 = gpus.get("H100"), gpus.get("A100 80GB")
    runs = _data.table("training_runs").set_index("id")
    bf16 = runs.loc["M084", "tokens_per_sec_per_gpu"] / runs.loc["M091", "tokens_per_sec_per_gpu"]
    fp8 = runs.loc["M096", "tokens_per_sec_per_gpu"] / runs.loc["M091", "tokens_per_sec_per_gpu"]
    return (f"Dense peaks: H100 SXM BF16 / A100 BF16 = {h100.peak_flops('bf16') / a100.peak_flops('bf16'):.2f}x; "
            f"H100 FP8 / A100 BF16 = {h100.peak_flops('fp8') / a100.peak_flops('bf16'):.1f}x. Measured tokens/s per "
            f"GPU for 7B models: MPT-7B BF16 on H100 / on A100 = {bf16:.2f}x (MosaicML); Llama 2 7B FP8 on H100 "
            f"(NVIDIA NeMo) / MPT-7B BF16 on A100 = {fp8:.1f}x. 3.2x is the right order for FP8, but no GPT-2 "
            f"measurement backs it, and it equals the BF16 peak ratio.")


def a100_tf32() -> str:
    v100, a100 = gpus.get("V100"), gpus.get("A100 80GB")
    return (f"V100 has no TF32 ({', '.join(dict(v100.dense_flops))} only). A100 TF32 / V100 FP32 = "
            f"{a100.peak_flops('tf32') / v100.peak_flops('fp32'):.1f}x; A100 TF32 / V100 FP16 tensor = "
            f"{a100.peak_flops('tf32') / v100.peak_flops('fp16'):.2f}x; A100 FP16 / V100 FP16 = "
            f"{a100.peak_flops('fp16') / v100.peak_flops('fp16'):.1f}x. 1.8x matches none without a stated baseline.")


def rtx4090_tensor() -> str:
    g = gpus.get("4090")
    return (f"The RTX 4090 has fourth-generation Tensor Cores: {g.peak_flops('bf16') / TFLOPS:.1f} TFLOP/s dense "
            f"BF16 and {g.peak_flops('fp8') / TFLOPS:.1f} FP8 (FP32 accumulate), against "
            f"{g.peak_flops('fp32') / TFLOPS:.1f} FP32. Its limits are elsewhere: {g.memory_gb_vendor:g} GB, no NVLink, "
            f"half-rate FP32 accumulation on GeForce.")


def rtx4090_speed() -> str:
    g, a = gpus.get("4090"), gpus.get("A100 80GB")
    return (f"RTX 4090 / A100 80GB: dense BF16 {g.peak_flops('bf16') / a.peak_flops('bf16'):.2f}, memory bandwidth "
            f"{g.memory_bandwidth / a.memory_bandwidth:.2f}, memory {g.memory_gb_vendor / a.memory_gb_vendor:.2f}. "
            f"30 % is plausible only when the 24 GB forces offloading or tiny batches.")


def key_precisions() -> str:
    counts = _data.table("training_runs")["dtype"].value_counts()
    listed = ", ".join(f"{n} {d}" for d, n in counts.items())
    return (f"Published large-model runs in this book's validation data: {listed}; none in TF32. BF16 (same range "
            f"as FP32, no loss scaling) is the default on A100/H100, FP8 on H100 and later; FP16 appears in runs of "
            f"2021 and earlier (GPT-3, Megatron-LM).")


def rtx4090_a100() -> str:
    g, a = gpus.get("4090"), gpus.get("A100 80GB")
    return (f"14 / 2 = 7, but A100 80GB / RTX 4090: dense BF16 {a.peak_flops('bf16') / g.peak_flops('bf16'):.1f}x, "
            f"memory bandwidth {a.memory_bandwidth / g.memory_bandwidth:.1f}x. A 7x gap needs something else: "
            f"a model that does not fit in {g.memory_gb_vendor:g} GB and runs offloaded, or a different GPU count.")


def h100_1979() -> str:
    return "; ".join(f"{g.name}: {g.peak_flops('fp8') / TFLOPS:,.0f} dense, {g.peak_flops('fp8', sparse=True) / TFLOPS:,.0f} "
                     f"with sparsity" for g in map(gpus.get, ("H100", "H100 PCIe", "H100 NVL"))) + " (TFLOP/s, FP8)."


def h100_links() -> str:
    g = gpus.get("H100")
    nv, pcie = comm.link(g.gpu_link), comm.link(f"pcie{g.pcie_gen}")
    return (f"The H100 SXM5 has {g.nvlink} ({nv.bandwidth / 1e9:.0f} GB/s each way, {nv.bandwidth_vendor / 1e9:.0f} GB/s "
            f"as quoted) and a PCIe {g.pcie_gen}.0 x16 host link ({pcie.bandwidth / 1e9:.0f} GB/s each way). On a "
            f"PCIe 4.0 host it works at half the host bandwidth; 'needs' overstates it.")


def node_100b() -> str:
    a100 = gpus.get("A100 80GB")
    train = memory.training(100e9, zero_stage=3, dp=8, recompute="full")
    serve = memory.inference(100e9, tp=8)
    gpus_needed = next(n for n in range(8, 4096, 8) if memory.fits(memory.training(100e9, zero_stage=3, dp=n, recompute="full"), a100))
    return (f"Training 100B with mixed-precision AdamW and ZeRO-3 over 8 GPUs needs {gb(train.total)} per GPU: "
            f"it does not fit 80 GB; at least {gpus_needed} A100 80GB do. Serving it in BF16 over 8 GPUs needs "
            f"{gb(serve.total)} per GPU: one node is right for inference.")


def a100_value() -> str:
    def per_dollar(name: str) -> float:
        g = gpus.get(name)
        return g.peak_flops("bf16") / TFLOPS / cost.price(g, "cloud_hour")
    names = [n for n in gpus.names() if gpus.get(n).supports("bf16") and cost.price(n, "cloud_hour")]
    ranked = sorted(names, key=per_dollar, reverse=True)
    return (f"Dense BF16 TFLOP/s per on-demand dollar-hour: {', '.join(f'{n} {per_dollar(n):.0f}' for n in ranked)}. "
            f"By this measure the A100 80GB ranks {ranked.index('A100-SXM4-80GB') + 1} of {len(ranked)}; memory, "
            f"interconnect and availability decide as much as price.")


def _fit_words(b: memory.MemoryBreakdown, gpu: gpus.GPU) -> str:
    """Whether ``b`` fits ``gpu``, read with the Memory chapter's headroom (:data:`memory.HEADROOM`)."""
    spare = 1 - b.total / gpu.memory_bytes
    if spare < 0:
        return "which does not fit"
    if spare < memory.HEADROOM:
        return (f"which leaves {spare:.0%} of its memory free, under the {memory.HEADROOM:.0%} headroom the Memory "
                f"chapter asks for: in practice it does not fit")
    return f"which fits with {spare:.0%} to spare"


def a100_20b() -> str:
    a100 = gpus.get("A100 80GB")
    b = memory.training(20e9, zero_stage=3, dp=4, recompute="full")
    rate = compute.training_time(20e9, 1e9, a100, 4)
    tokens = 5 * DAY / rate.expected * 1e9
    return (f"Full training of 20B with ZeRO-3 and full recompute over 4 A100 80GB needs {gb(b.total)} per GPU "
            f"({gb(b.weights + b.gradients + b.optimizer)} of it model states), "
            f"{_fit_words(b, a100)}. In 5 days 4 A100s process "
            f"about {tokens / 1e9:.1f}B tokens at the expected throughput: fine-tuning scale, not pre-training (compute-optimal "
            f"would be {compute.CHINCHILLA_TOKENS_PER_PARAM * 20:.0f}B tokens). 1 - 5/14 = {1 - 5 / 14:.0%}: the 60 % is "
            f"arithmetic.")


def l40s_memory() -> str:
    g = gpus.get("L40S")
    same = [n for n in gpus.names() if gpus.get(n).memory_gb_vendor == 24 and gpus.get(n).tdp_watts == 150]
    return (f"The L40S has {g.memory_gb_vendor:g} GB of {g.memory_type}, {g.memory_bandwidth / 1e9:.0f} GB/s. "
            f"24 GB and 150 W are the figures of the {', '.join(same)}.")


def l40s_power() -> str:
    g = gpus.get("L40S")
    return "; ".join(f"{g.tdp_watts:.0f} W = {g.tdp_watts / gpus.get(a).tdp_watts:.0%} of the {a} ({gpus.get(a).tdp_watts:.0f} W)"
                     for a in ("A100-SXM4-80GB", "A100-PCIe-80GB")) + ". 150/400 = 38 % is arithmetic on a wrong input."


def int8_speedup() -> str:
    g = gpus.get("L40S")
    fp16 = compute.decode_throughput("llama-2-7b", g, weight_dtype="fp16").expected
    int8 = compute.decode_throughput("llama-2-7b", g, weight_dtype="int8").expected
    return (f"L40S peak INT8 / FP16 tensor rate = {g.peak_flops('int8') / g.peak_flops('fp16'):.1f}x (compute-bound work); "
            f"batch-1 decoding of Llama 2 7B, which is bandwidth-bound, gains {int8 / fp16:.1f}x from halving the weight "
            f"bytes. Beyond 2x only against an FP32 baseline ({g.peak_flops('int8') / g.peak_flops('fp32'):.0f}x).")


def mig() -> str:
    have = [n for n in gpus.names() if gpus.get(n).mig_instances == 7]
    lack = [n for n in gpus.names() if gpus.get(n).mig_instances == 0]
    return f"Up to 7 MIG instances on {', '.join(have)}; none on {', '.join(lack)}."


def a6000_30b() -> str:
    g = gpus.get("A6000")
    largest = {}
    for dtype in ("bf16", "int8", "int4"):
        largest[dtype] = max(n for n in range(1, 200) if memory.fits(memory.inference(n * 1e9, weight_dtype=dtype), g))
    return (f"30B in BF16 is {gb(memory.inference(30e9).weights)} of weights, more than 48 GB. Largest dense model "
            f"with a 4096-token context on one A6000: {largest['bf16']}B in BF16, {largest['int8']}B in INT8, "
            f"{largest['int4']}B in INT4.")


def a6000_pair() -> str:
    g = gpus.get("A6000")
    return (f"2 x {g.memory_gb_vendor:g} GB = {2 * g.memory_gb_vendor:g} GB, joined by a bridge of "
            f"{g.nvlink_bandwidth / 1e9:.2f} GB/s each way ({2 * g.nvlink_bandwidth / 1e9:.1f} GB/s quoted): two memories, "
            f"not one; the model must be split (tensor or pipeline parallelism).")


def a6000_price() -> str:
    a6000, a100 = cost.price("A6000", "purchase"), cost.price("A100 40GB", "purchase")
    return (f"A6000 launch price ${a6000:,.0f} against about ${a100:,.0f} for an A100 (2023 street price): "
            f"{a6000 / a100:.0%}.")


def a4000() -> str:
    g = gpus.get("A4000")
    return f"{g.memory_gb_vendor:g} GB {g.memory_type}, {g.memory_bandwidth / 1e9:.0f} GB/s, {g.tdp_watts:.0f} W, {g.form_factor}."


def nvlink_vs_pcie() -> str:
    pairs = [("nvlink2", "pcie3", "V100"), ("nvlink3", "pcie4", "A100 SXM"), ("nvlink4", "pcie5", "H100 SXM"),
             ("nvlink5", "pcie5", "B200"), ("nvlink3-ga102-bridge", "pcie4", "RTX 3090 / A6000 bridge"),
             ("nvlink4-bridge", "pcie5", "H100 PCIe / NVL bridge")]
    ratios = ", ".join(f"{label} {comm.link(a).bandwidth / comm.link(b).bandwidth:.1f}x" for a, b, label in pairs)
    return f"Per-GPU link bandwidth over the PCIe x16 of the same generation (each way): {ratios}."


def h100_nvlink() -> str:
    ln = comm.link(gpus.get("H100").gpu_link)
    return (f"{ln.bandwidth_vendor / 1e9:.0f} GB/s is the total of both directions ({ln.kind}: 18 links); each way it is "
            f"{ln.bandwidth / 1e9:.0f} GB/s, and all-reduces reach about {ln.achieved_fraction:.0%} of that. "
            f"H100 PCIe and NVL cards bridge pairs at {comm.link('nvlink4-bridge').bandwidth_vendor / 1e9:.0f} GB/s.")


def resnet_table() -> str:
    from . import validation
    runs = validation.ddp_runs()
    measured = runs[runs["GPUs"] == 8].set_index("GPU")["measured efficiency"]
    a100 = _data.table("ddp_runs").query("gpu == 'A100-SXM4-80GB' and n_gpus == 1").iloc[0]
    compute_s = a100["batch_per_gpu"] / a100["images_per_s_per_gpu"]
    grads = a100["params"] * 4
    links = ("nvlink3", "pcie4", "pcie3")
    modelled = ", ".join(f"{link} {scaling.data_parallel_step(grads, compute_s, 8, link, overlap=0).efficiency:.1%}"
                         for link in links)
    overlapped = min(scaling.data_parallel_step(grads, compute_s, 8, link).efficiency for link in links)
    return (f"Measured (PyTorch DDP, ResNet-152, FP16, 8 GPUs): V100 NVLink {measured['V100-SXM2-32GB']:.1%}, A100 "
            f"NVLink {measured['A100-SXM4-80GB']:.1%}. The step model, A100 at batch 512 with {grads / 1e6:.0f} MB of fp32 "
            f"gradients and no overlap: {modelled}; with DDP's bucketed overlap at least {overlapped:.1%} on every link. "
            f"The 92 % NVLink row is plausible; 78 % and 65 % need far smaller batches or a broken PCIe topology.")


def bandwidth_1t() -> str:
    runs = _data.table("training_runs").set_index("id")
    row = runs.loc["M060"]
    peak = gpus.get(row["gpu"]).peak_flops(row["dtype"])
    return (f"Megatron-LM trained a {row['n_params'] / 1e12:.1f}T-parameter GPT on {row['n_gpus']:,.0f} A100s at "
            f"{row['tflops_per_gpu']:.0f} TFLOP/s per GPU, {row['tflops_per_gpu'] * 1e12 / peak:.0%} of peak: with tensor parallelism inside NVLink servers and pipeline and data parallelism across "
            f"them, compute, not bandwidth, set the pace. Bandwidth is fatal only to a layout that ignores the hierarchy.")


def mixed_precision_cost() -> str:
    a100 = gpus.get("A100 80GB")
    runs = {d: cost.training_cost("llama-2-7b", 1e11, a100, 8, dtype=d).expected for d in ("tf32", "bf16")}
    return (f"On an A100 the dense BF16 peak is {a100.peak_flops('bf16') / a100.peak_flops('tf32'):.0f}x TF32 and "
            f"{a100.peak_flops('bf16') / a100.peak_flops('fp32'):.0f}x plain FP32. At the same MFU, Llama 2 7B on 100B tokens "
            f"costs ${runs['tf32']:,.0f} in TF32 and ${runs['bf16']:,.0f} in BF16 on 8 A100s on demand: "
            f"{1 - runs['bf16'] / runs['tf32']:.0%} less. 45 % fits a TF32 baseline with some loss of MFU.")


def reserved_saving() -> str:
    d = cost.assumption("reserved_3y_discount")
    return (f"Published 3-year commitments for GPU instances (Google Cloud committed-use discounts, AWS three-year terms) take "
            f"{d.low:.0%}-{d.high:.0%} off on-demand prices, {d.expected:.0%} on average: 60 % is what the large clouds "
            f"give. GPU clouds that start from lower on-demand prices discount less, and this book has no dated figures for "
            f"their commitments.")


def spot_practice() -> str:
    o = cost.spot_overhead(64)
    return (f"Spot instances can be reclaimed with two minutes' notice, so a run must checkpoint. With checkpoints at "
            f"Young's optimal interval, a 64-GPU run loses {o.low:.0%}-{o.high:.0%} (expected {o.expected:.0%}) of its "
            f"time to checkpoints, redone work and restarts.")


def spot_saving() -> str:
    on = cost.training_cost("llama-2-7b", 1e12, "H100", 64)
    spot = cost.training_cost("llama-2-7b", 1e12, "H100", 64, pricing="spot")
    d = cost.assumption("spot_discount")
    lo, hi = 1 - spot.high / on.high, 1 - spot.low / on.low
    return (f"Spot against on-demand for Llama 2 7B on 64 H100s, interruptions included: {lo:.0%} to {hi:.0%} saved "
            f"(expected {1 - spot.expected / on.expected:.0%}). 75 % is more than the spot discounts observed "
            f"for GPU instances allow ({d.low:.0%}-{d.high:.0%} off before interruptions); no setup is given to check it.")


def budget_50k() -> str:
    rtx, a100 = cost.price("4090", "purchase"), cost.price("A100 40GB", "cloud_hour")
    hours = 2000 / a100
    return (f"Two RTX 4090s cost ${2 * rtx:,.0f} at launch price, for the cards alone (a workstation around them adds "
            f"more). $2,000 a month buys {hours:,.0f} A100 40GB hours at ${a100:.2f}/h, about "
            f"{hours / (cost.HOURS_PER_MONTH):.1f} GPUs running all month.")


def four_a100() -> str:
    full = select.largest_trainable("A100 40GB", 4)
    qlora = max(b for b in range(1, 200) if memory.fits(memory.training(b * 1e9, method="qlora", recompute="full"),
                                                       gpus.get("A100 40GB")))
    serve = max(b for b in range(1, 200) if memory.fits(memory.inference(b * 1e9, tp=4), gpus.get("A100 40GB")))
    return (f"4 x 40 GB = 160 GB. Full training (mixed-precision AdamW, ZeRO-3, full recompute) fits up to about "
            f"{full}B parameters; QLoRA fine-tuning of up to about {qlora}B fits on one card; even BF16 inference stops "
            f"near {serve}B over all four.")


def eight_a100() -> str:
    full = select.largest_trainable("A100 80GB", 8)
    t = compute.training_time(100e9, compute.CHINCHILLA_TOKENS_PER_PARAM * 100e9, "A100 80GB", 8)
    return (f"8 x 80 GB holds the training state of about {full}B parameters with ZeRO-3 and recompute, not 100B. And "
            f"compute-optimal training of 100B ({compute.CHINCHILLA_TOKENS_PER_PARAM * 100}B tokens) would take "
            f"{t.low / DAY / 365:.0f}-{t.high / DAY / 365:.0f} years on 8 A100s.")


def superpod() -> str:
    h100 = gpus.get("H100")
    t = compute.training_time(1e9, 1e9, h100, 64)
    budget = 90 * DAY / t.expected * 6 * 1e18  # FLOPs that 64 H100s deliver in 90 days at the expected throughput
    n_opt = (budget / (6 * compute.CHINCHILLA_TOKENS_PER_PARAM)) ** 0.5
    return (f"64 H100s are 8 DGX H100 systems of 8 GPUs. In 90 days they deliver about {budget:.1e} FLOP at the "
            f"expected MFU: compute-optimal for a model of about {n_opt / 1e9:.0f}B parameters. Liquid cooling is what "
            f"rack-scale Blackwell requires ({gpus.get('GB200').form_factor}), not 64 H100s.")


def l40s_serving() -> str:
    rows = []
    for name in ("L40S", "H100", "A100 80GB", "L4"):
        band = cost.serving_cost_per_million_tokens("llama-3-8b", name, batch_size=64, context_len=2048)
        rows.append(f"{gpus.get(name).name} ${band.expected:.2f}")
    return ("Llama 3 8B in BF16 at 64 concurrent 2048-token sequences, on-demand dollars per million tokens: "
            + ", ".join(rows) + ". The L40S is a reasonable serving card, but not the cheapest per token at these prices.")


def blackwell() -> str:
    b, h = gpus.get("B200"), gpus.get("H100")
    return (f"{b.name}: launched {b.launch_year}, dense BF16 {b.peak_flops('bf16') / h.peak_flops('bf16'):.2f}x and "
            f"memory bandwidth {b.memory_bandwidth / h.memory_bandwidth:.1f}x the H100 SXM, at "
            f"{b.tdp_watts / h.tdp_watts:.2f}x the power.")


def blackwell_fp8() -> str:
    return "; ".join(f"{g.name}: {g.peak_flops('fp8') / 1e15:.1f} PFLOP/s dense, {g.peak_flops('fp8', sparse=True) / 1e15:.0f} "
                     f"with sparsity" for g in map(gpus.get, ("B200", "GB200"))) + " (FP8)."


def blackwell_memory() -> str:
    b, gb200 = gpus.get("B200"), gpus.get("GB200")
    return (f"B200: {b.memory_gb_vendor:g} GB on the package, {b.memory_bytes / 2**30:g} GB usable in HGX/DGX systems; "
            f"GB200: {gb200.memory_gb_vendor:g} GB per GPU. 256 GB matches no Blackwell part in the catalog.")


def nvlink5() -> str:
    ln = comm.link(gpus.get("B200").gpu_link)
    return (f"{ln.bandwidth_vendor / 1e12:.1f} TB/s is the total of both directions ({ln.kind}); "
            f"{ln.bandwidth / 1e9:.0f} GB/s each way, twice NVLink 4.")


def infrastructure() -> str:
    own = cost.ownership("H100", 8, years=3, utilization=0.7)
    return (f"Eight H100s in servers for three years at 70 % use: ${own.capex:,.0f} of hardware (GPUs at "
            f"{cost.assumption('gpu_share_of_server').expected:.0%} of the server price) and ${own.energy.low:,.0f}-"
            f"${own.energy.high:,.0f} of electricity (server power, PUE): energy adds "
            f"{own.energy.expected / own.capex:.0%}, before staff, space and networking.")


def waiting() -> str:
    from . import trends
    plan = trends.wait_or_start("llama-2-70b", 2e12, 512, later="H100", now="A100 80GB", wait_months=6,
                                later_price=cost.price("H100"))
    return (f"Training Llama 2 70B on 2T tokens with 512 GPUs: starting on A100s finishes on day "
            f"{plan['start now: finish (days)']:.0f}; waiting 6 months for H100s finishes on day "
            f"{plan['wait: finish (days)']:.0f}. Waiting pays off only if it is shorter than "
            f"{plan['break-even wait (months)']:.1f} months.")


def inference_priorities() -> str:
    rows, per_kw = [], {}
    for name in ("L4", "L40S", "H100"):
        g = gpus.get(name)
        tps = compute.decode_throughput("llama-3-8b", g, context_len=2048).expected
        per_kw[g.name] = tps / g.tdp_watts * 1000
        rows.append(f"{g.name} {1000 / tps:.0f} ms per token, {per_kw[g.name]:.0f} tokens/s per kW of TDP")
    return ("Batch-1 decoding of Llama 3 8B in BF16: " + "; ".join(rows) + ". Latency follows memory bandwidth, and "
            f"per kW the {max(per_kw, key=per_kw.get)} does best here: a low-power card is not automatically efficient.")


def gpt3_size() -> str:
    m = models.get("gpt3-175b")
    return f"{m.n_params / 1e9:.1f}B parameters ({m.n_layers} layers of width {m.d_model:,}); the shape gives {m.params_from_shape() / 1e9:.1f}B."


def rtx4090_fp32() -> str:
    g, a = gpus.get("4090"), gpus.get("A100 80GB")
    return (f"RTX 4090 FP32 (CUDA cores) {g.peak_flops('fp32') / TFLOPS:.1f} TFLOP/s against the A100's "
            f"{a.peak_flops('fp32') / TFLOPS:.1f}: {g.peak_flops('fp32') / a.peak_flops('fp32'):.1f}x. Training uses the "
            f"tensor cores instead, where the A100 leads.")


def a100_nvlink() -> str:
    from . import validation
    ln = comm.link(gpus.get("A100 80GB").gpu_link)
    runs = validation.ddp_runs()
    a100 = runs[(runs["GPU"] == "A100-SXM4-80GB") & (runs["GPUs"] == 8)]["measured efficiency"].iloc[0]
    return (f"NVLink 3 with NVSwitch: {ln.bandwidth / 1e9:.0f} GB/s each way per GPU ({ln.bandwidth_vendor / 1e9:.0f} GB/s "
            f"quoted); 8 A100s scaled ResNet-152 at {a100:.1%} efficiency in a published DDP benchmark. The A100 PCIe "
            f"joins only pairs through a bridge.")


COLUMNS = ["id", "section", "quote_zh", "claim_en", "verdict", "note", "checked_value", "source"]


def _checked(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` of ``data/claims.csv`` with their checks computed (or their sourced text)."""
    checked = [globals()[name]() if isinstance(name, str) else text for name, text in zip(rows["check"], rows["checked_text"])]
    return rows.assign(checked_value=checked, note=rows["note"].fillna(""))[COLUMNS]


def table() -> pd.DataFrame:
    """Every claim, in the order of the article's sections: id, section, quote_zh, claim_en, verdict,
    note, checked_value, source."""
    claims = _data.table("claims")
    order = sorted(range(len(claims)), key=lambda i: tuple(int(p) for p in claims["section"].iloc[i].split(".")))
    return _checked(claims.iloc[order].reset_index(drop=True))


def get(claim_id: str) -> pd.Series:
    """One claim by id, with its checked value (computing only that claim's check)."""
    claims = _data.table("claims")
    if not isinstance(claim_id, str):
        raise ValueError(f"claim_id must be a claim's id (a string), got {claim_id!r}")
    rows = claims[claims["id"] == claim_id]
    if rows.empty:
        raise ValueError(f"claim_id={claim_id!r} is not a known claim; known: {', '.join(claims['id'])}")
    return _checked(rows).set_index("id").iloc[0]
