"""The article's checkable claims, each with the verdict this package reaches and the figures it rests on.

``data/claims.csv`` holds what the article says (section, Chinese quote, English rendering, the
title of the chapter's box) and the sources. Each claim that numbers settle is checked by a
function registered under the claim's id (``@_checks("id")``): it computes the figures, reaches
the verdict from them (one of :data:`VERDICTS`, with an optional note) and composes its sentence
from those figures only (:func:`_found`). Claims about code or APIs, which no number settles,
carry their verdict, note and sourced text in the CSV instead (``checked_text``).
"""

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import pandas as pd

from . import _data, comm, compute, cost, gpus, memory, models, scaling, scenarios, select
from .units import DAY, MONTH, TFLOPS, gb

VERDICTS = ("correct", "roughly right", "depends", "wrong", "unverifiable", "opinion")
#: The admonition class of a chapter's "Check the article" box for each verdict: a warning for a
#: wrong claim, a caution where it holds only under conditions, a note where it is roughly right
#: or cannot be settled, a tip where it is right.
BOX_CLASS = MappingProxyType({"correct": "tip", "roughly right": "note", "depends": "caution", "wrong": "warning",
                              "unverifiable": "note", "opinion": "note"})


@dataclass(frozen=True)
class Finding:
    """What the book finds for one claim: ``verdict`` (one of :data:`VERDICTS`) qualified by
    ``note``, the ``figures`` it rests on (SI units unless the name says otherwise: ``_tflops``,
    ``_usd``, ``_days``) and ``sentence``, composed from those figures."""

    verdict: str
    sentence: str
    figures: Mapping[str, float | str]
    note: str = ""


class _Formatter(string.Formatter):
    """``str.format`` with one more format spec, ``gb``: bytes as decimal gigabytes (:func:`units.gb`)."""

    def format_field(self, value, format_spec):
        return gb(value) if format_spec == "gb" else super().format_field(value, format_spec)


def _found(verdict: str, text: str, note: str = "", **figures: float | str) -> Finding:
    """The finding whose sentence is ``text`` filled in from ``figures`` (``{name:spec}``), so that
    it says nothing the figures do not."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    return Finding(verdict, _Formatter().format(text, **figures), figures, note)


_CHECKS: dict[str, Callable[[], Finding]] = {}


def _checks(claim_id: str) -> Callable[[Callable[[], Finding]], Callable[[], Finding]]:
    """Decorator: register the function as the check of claim ``claim_id`` (an id of data/claims.csv)."""
    def register(check: Callable[[], Finding]) -> Callable[[], Finding]:
        if claim_id in _CHECKS:
            raise ValueError(f"claim {claim_id!r} has two checks: {_CHECKS[claim_id].__name__} and {check.__name__}")
        _CHECKS[claim_id] = check
        return check
    return register


def _states_per_param(**kwargs) -> float:
    """Bytes of weights + gradients + optimizer per parameter, from the memory model."""
    b = memory.training(models.dense(1e9), **kwargs)
    return (b.weights + b.gradients + b.optimizer) / 1e9


def _within(value: float, low: float, high: float) -> bool:
    return low <= value <= high


# §1 and §2: training against inference, memory


@_checks("train-vs-infer")
def train_vs_infer() -> Finding:
    m = models.get("llama-2-7b")
    setup = dict(seq_len=2048, recompute="selective")  # the Memory chapter's first figure: FlashAttention, one sequence
    train = memory.training(m, **setup).total
    infer = memory.inference(m, context_len=2048).total
    qlora = memory.training(m, method="qlora", **setup).total
    states, ratio = _states_per_param(), train / infer
    inside = [_within(r, 3, 5) for r in (states / 2, ratio)]
    return _found(
        "correct" if all(inside) else "depends" if any(inside) else "wrong",
        "Mixed-precision AdamW keeps {states:.0f} bytes per parameter against 2 for bf16 inference ({states_ratio:.0f}x). "
        "Llama 2 7B, one 2048-token sequence with FlashAttention: training {training:gb}, inference {inference:gb} "
        "({ratio:.1f}x); QLoRA training {qlora:gb} ({qlora_ratio:.1f}x).",
        states=states, states_ratio=states / 2, training=train, inference=infer, ratio=ratio, qlora=qlora,
        qlora_ratio=qlora / infer)


@_checks("weights-175b")
def weights_175b() -> Finding:
    weights = memory.inference(175e9, weight_dtype="bf16").weights
    return _found("correct" if _within(weights / 350e9, 0.95, 1.05) else "wrong",
                  "175e9 x 2 bytes = {weights:gb} in fp16/bf16 ({gib:,.0f} GiB); {fp32:gb} in fp32.", "in 16-bit",
                  weights=weights, gib=weights / 2**30, fp32=2 * weights)


@_checks("gradients")
def gradients() -> Finding:
    b = memory.training(175e9)
    return _found("correct" if b.gradients == b.weights else "wrong",
                  "One gradient per parameter: {gradients:gb} for 175B in bf16 (2 bytes each), twice that where "
                  "gradients are kept in fp32.", gradients=b.gradients)


@_checks("adam-2x")
def adam_states() -> Finding:
    b = memory.training(175e9)
    moments_per_param = 2  # Adam's first and second moments (Kingma & Ba 2015)
    ratio = b.optimizer / b.weights
    return _found("correct" if ratio == 2 else "roughly right", "Two moments per parameter, in fp32: 8 bytes/parameter, "
                  "4x the bf16 weights; with the fp32 master copy mixed precision needs {bytes_per_param:.0f} "
                  "bytes/parameter: {optimizer:gb} for 175B, {ratio:.0f}x the weights.",
                  "understated in bytes" if ratio > moments_per_param else "",
                  bytes_per_param=b.optimizer / 175e9, optimizer=b.optimizer, ratio=ratio)


@_checks("activations")
def activations() -> Finding:
    m = models.get("llama-2-7b")
    base = memory.training(m, micro_batch_size=1, seq_len=2048).activations
    batch = memory.training(m, micro_batch_size=8, seq_len=2048).activations
    longer = memory.training(m, micro_batch_size=1, seq_len=4096).activations
    unfused = [memory.training(m, seq_len=s, flash_attention=False).activations for s in (2048, 4096)]
    return _found(
        "correct" if batch > base and longer > base else "wrong",
        "Llama 2 7B without recompute, with FlashAttention: {base:gb} at 1 x 2048 tokens, {batch:gb} at batch 8 "
        "({batch_ratio:.1f}x), {longer:gb} at 4096 tokens ({longer_ratio:.1f}x). Without FlashAttention the stored "
        "attention scores grow with s^2: {unfused_2048:gb} at 2048 tokens, {unfused_4096:gb} at 4096 ({unfused_ratio:.1f}x).",
        base=base, batch=batch, batch_ratio=batch / base, longer=longer, longer_ratio=longer / base,
        unfused_2048=unfused[0], unfused_4096=unfused[1], unfused_ratio=unfused[1] / unfused[0])


@_checks("a6000-10b")
def a6000_10b() -> Finding:
    need = _states_per_param() * 10e9
    a6000, a100 = gpus.get("RTX A6000"), gpus.get("A100 80GB")
    return _found(
        "unverifiable",  # an anecdote without its setup
        "Weights, gradients and AdamW states of 10B take {states:gb} before activations: more than the A6000's "
        "{a6000_gb:g} GB and the A100's {a100_gb:g} GB. Either it fails at step 1 or something else (LoRA, 8-bit "
        "optimizer, offload) was used; a late OOM points to a long batch.",
        "implausible as told" if need > a100.reported_memory_bytes else "",
        states=need, a6000_gb=a6000.memory_gb_vendor, a100_gb=a100.memory_gb_vendor)


@_checks("fp16-halves")
def fp16_halves() -> Finding:
    m = models.get("llama-2-7b")
    fp32 = memory.training(m, dtype="fp32", seq_len=2048)
    mixed = memory.training(m, dtype="fp16", seq_len=2048)
    saving = 1 - mixed.total / fp32.total
    return _found(
        "correct" if saving >= 0.45 else "depends",
        "Llama 2 7B at 2048 tokens: fp32 {fp32:gb}, fp16 mixed {mixed:gb} ({saving:.0%} less). Activations halve "
        "({fp32_activations:gb} -> {mixed_activations:gb}) but model states stay at {bytes_per_param:.0f} "
        "bytes/parameter because of the fp32 master copy.",
        "only activations halve" if saving < 0.45 else "",
        fp32=fp32.total, mixed=mixed.total, saving=saving, fp32_activations=fp32.activations,
        mixed_activations=mixed.activations,
        bytes_per_param=(mixed.weights + mixed.gradients + mixed.optimizer) / m.n_params)


@_checks("recompute-saving")
def recompute_saving() -> Finding:
    m = models.get("llama-2-7b")
    kw = dict(micro_batch_size=4, seq_len=4096)
    none, full = memory.training(m, zero_stage=3, dp=8, **kw), memory.training(m, zero_stage=3, dp=8, recompute="full", **kw)
    alone, alone_full = memory.training(m, **kw), memory.training(m, recompute="full", **kw)
    savings = (1 - full.total / none.total, 1 - alone_full.total / alone.total)
    return _found(
        "correct" if all(_within(s, 0.6, 0.7) for s in savings) else
        "depends" if min(savings) <= 0.7 and max(savings) >= 0.6 else "wrong",
        "Full recompute removes {activation_saving:.0%} of activation memory. Llama 2 7B, 4 x 4096 tokens, ZeRO-3 over "
        "8 GPUs: {zero3:gb} -> {zero3_full:gb} per GPU ({zero3_saving:.0%} saved); on one GPU without ZeRO: {alone:gb} "
        "-> {alone_full:gb} ({alone_saving:.0%}). The saving on the total depends on how much of it was activations; "
        "model states do not move.",
        activation_saving=1 - full.activations / none.activations, zero3=none.total, zero3_full=full.total,
        zero3_saving=savings[0], alone=alone.total, alone_full=alone_full.total, alone_saving=savings[1])


@_checks("recompute-cost")
def recompute_cost() -> Finding:
    ratio = compute.training_flops(1e9, 1e9, recompute="full") / compute.training_flops(1e9, 1e9)
    return _found("roughly right" if _within(ratio - 1, 0.25, 0.4) else "wrong",
                  "Full recompute repeats the forward pass: {ratio:.3f}x the FLOPs (+{extra:.0%}); selective recompute "
                  "costs a few percent.", ratio=ratio, extra=ratio - 1)


@_checks("a6000-20b")
def a6000_20b() -> Finding:
    m, a6000 = models.dense(20e9), gpus.get("RTX A6000")
    full = memory.training(m, recompute="full")
    qlora = memory.training(m, recompute="full", method="qlora")
    return _found(
        "correct" if a6000.memory_gb_vendor == 24 and full.total <= 24e9 else "wrong",
        "The A6000 has {a6000_gb:g} GB, not 24 GB. 20B in bf16 is {weights:gb} of weights alone; full training with "
        "recompute needs {full:gb}, and checkpointing does not shrink model states. Only QLoRA (4-bit frozen base, "
        "trained adapters) with recompute comes under 24 GB: {qlora:gb}, and that is adapter fine-tuning, not training "
        "the 20B model.",
        a6000_gb=a6000.memory_gb_vendor, weights=memory.inference(m).weights, full=full.total, qlora=qlora.total)


# §2.1 and §3: precisions and GPUs


@_checks("h100-fp8-3x")
def h100_fp8() -> Finding:
    h100, a100 = gpus.get("H100"), gpus.get("A100 80GB")
    runs = _data.table("training_runs").set_index("id")["tokens_per_sec_per_gpu"]
    peak_bf16 = h100.peak_flops("bf16") / a100.peak_flops("bf16")
    measured_fp8 = runs["M096"] / runs["M091"]
    return _found(
        "roughly right" if _within(measured_fp8 / 3.2, 0.75, 1.25) else "wrong",
        "Dense peaks: H100 SXM BF16 / A100 BF16 = {peak_bf16:.2f}x; H100 FP8 / A100 BF16 = {peak_fp8:.1f}x. Measured "
        "tokens/s per GPU for 7B models: MPT-7B BF16 on H100 / on A100 = {measured_bf16:.2f}x (MosaicML); Llama 2 7B "
        "FP8 on H100 (NVIDIA NeMo) / MPT-7B BF16 on A100 = {measured_fp8:.1f}x. 3.2x is the right order for FP8, but "
        "no GPT-2 measurement backs it, and it equals the BF16 peak ratio.",
        "for the wrong reason" if abs(peak_bf16 - 3.2) < 0.1 else "",
        peak_bf16=peak_bf16, peak_fp8=h100.peak_flops("fp8") / a100.peak_flops("bf16"),
        measured_bf16=runs["M084"] / runs["M091"], measured_fp8=measured_fp8)


@_checks("a100-tf32-v100")
def a100_tf32() -> Finding:
    v100, a100 = gpus.get("V100"), gpus.get("A100 80GB")
    ratios = dict(tf32_fp32=a100.peak_flops("tf32") / v100.peak_flops("fp32"),
                  tf32_fp16=a100.peak_flops("tf32") / v100.peak_flops("fp16"),
                  fp16_fp16=a100.peak_flops("fp16") / v100.peak_flops("fp16"))
    matches = any(_within(r / 1.8, 0.9, 1.1) for r in ratios.values())
    return _found(
        "roughly right" if matches else "depends",
        "V100 has no TF32 ({v100_formats} only). A100 TF32 / V100 FP32 = {tf32_fp32:.1f}x; A100 TF32 / V100 FP16 "
        "tensor = {tf32_fp16:.2f}x; A100 FP16 / V100 FP16 = {fp16_fp16:.1f}x. 1.8x matches none without a stated "
        "baseline." if not matches else "A100 TF32 / V100 FP32 = {tf32_fp32:.1f}x; A100 TF32 / V100 FP16 tensor = "
        "{tf32_fp16:.2f}x; A100 FP16 / V100 FP16 = {fp16_fp16:.1f}x.",
        "" if v100.supports("tf32") else "misleading: V100 has no TF32",
        v100_formats=", ".join(dict(v100.dense_flops)), **ratios)


@_checks("rtx4090-tensor-cores")
def rtx4090_tensor() -> Finding:
    g = gpus.get("4090")
    bf16, fp32 = g.peak_flops("bf16"), g.peak_flops("fp32")
    return _found(
        "wrong" if bf16 > fp32 else "correct",
        "The RTX 4090 has fourth-generation Tensor Cores: {bf16_tflops:.1f} TFLOP/s dense BF16 and {fp8_tflops:.1f} FP8 "
        "(FP32 accumulate), against {fp32_tflops:.1f} FP32. Its limits are elsewhere: {memory_gb:g} GB, no NVLink, "
        "half-rate FP32 accumulation on GeForce.",
        bf16_tflops=bf16 / TFLOPS, fp8_tflops=g.peak_flops("fp8") / TFLOPS, fp32_tflops=fp32 / TFLOPS,
        memory_gb=g.memory_gb_vendor)


@_checks("rtx4090-30pct")
def rtx4090_speed() -> Finding:
    g, a = gpus.get("4090"), gpus.get("A100 80GB")
    bf16 = g.peak_flops("bf16") / a.peak_flops("bf16")
    return _found(
        "unverifiable",  # no setup is given
        "RTX 4090 / A100 80GB: dense BF16 {bf16:.2f}, memory bandwidth {bandwidth:.2f}, memory {memory:.2f}. 30 % is "
        "plausible only when the 24 GB forces offloading or tiny batches.",
        f"the specifications say about {bf16:.0%}",
        bf16=bf16, bandwidth=g.memory_bandwidth / a.memory_bandwidth, memory=g.memory_gb_vendor / a.memory_gb_vendor)


@_checks("fp16-tf32-key")
def key_precisions() -> Finding:
    counts = _data.table("training_runs")["dtype"].value_counts()
    outdated = counts.get("tf32", 0) == 0 and counts.get("bf16", 0) > counts.get("fp16", 0)
    return _found(
        "roughly right" if outdated else "correct",
        "Published large-model runs in this book's validation data: {listed}; {tf32_runs} in TF32. BF16 (same range as "
        "FP32, no loss scaling) is the default on A100/H100, FP8 on H100 and later; FP16, with loss scaling, appears "
        "in runs on older stacks: GPT-3 and Megatron-LM (2020-21), GPT-NeoX-20B and OPT-175B (2022) and GPT-NeoX's Pythia suite (2023).",
        "outdated" if outdated else "",
        listed=", ".join(f"{n} {d}" for d, n in counts.items()), tf32_runs=counts.get("tf32", 0) or "none")


@_checks("rtx4090-a100-7x")
def rtx4090_a100() -> Finding:
    g, a = gpus.get("4090"), gpus.get("A100 80GB")
    bf16 = a.peak_flops("bf16") / g.peak_flops("bf16")
    return _found(
        "unverifiable",  # an anecdote without its setup
        "14 / 2 = 7, but A100 80GB / RTX 4090: dense BF16 {bf16:.1f}x, memory bandwidth {bandwidth:.1f}x. A 7x gap "
        "needs something else: a model that does not fit in {memory_gb:g} GB and runs offloaded, or a different GPU count.",
        f"the specifications say about {bf16:.0f}x",
        bf16=bf16, bandwidth=a.memory_bandwidth / g.memory_bandwidth, memory_gb=g.memory_gb_vendor)


@_checks("gpt3-175b")
def gpt3_size() -> Finding:
    m = models.get("gpt3-175b")
    return _found("correct" if _within(m.n_params / 175e9, 0.99, 1.01) else "wrong",
                  "{params_b:.1f}B parameters ({layers} layers of width {width:,}); the shape gives {shape_b:.1f}B.",
                  params_b=m.n_params / 1e9, layers=m.n_layers, width=m.d_model, shape_b=m.params_from_shape() / 1e9)


@_checks("rtx4090-fp32")
def rtx4090_fp32() -> Finding:
    g, a = gpus.get("4090"), gpus.get("A100 80GB")
    ratio = g.peak_flops("fp32") / a.peak_flops("fp32")
    return _found("correct" if ratio > 1 else "wrong",
                  "RTX 4090 FP32 (CUDA cores) {rtx_tflops:.1f} TFLOP/s against the A100's {a100_tflops:.1f}: "
                  "{ratio:.1f}x. Training uses the tensor cores instead, where the A100 leads.",
                  rtx_tflops=g.peak_flops("fp32") / TFLOPS, a100_tflops=a.peak_flops("fp32") / TFLOPS, ratio=ratio)


@_checks("h100-1979")
def h100_1979() -> Finding:
    parts = {g.name: g for g in map(gpus.get, ("H100", "H100 PCIe", "H100 NVL"))}
    sxm = gpus.get("H100").peak_flops("fp8") / TFLOPS
    return _found("correct" if round(sxm) == 1979 else "wrong", "{listed} (TFLOP/s, FP8).", "dense, SXM",
                  sxm_tflops=sxm, listed="; ".join(
                      f"{name}: {g.peak_flops('fp8') / TFLOPS:,.0f} dense, "
                      f"{g.peak_flops('fp8', sparse=True) / TFLOPS:,.0f} with sparsity" for name, g in parts.items()))


@_checks("nvlink4-pcie5")
def h100_links() -> Finding:
    g = gpus.get("H100")
    nv, pcie = comm.link(g.gpu_link), comm.link(f"pcie{g.pcie_gen}")
    return _found(
        "roughly right",  # the links are right; 'needs' overstates the host side
        "The H100 SXM5 has {nvlink} ({nvlink_gbps:.0f} GB/s each way, {nvlink_quoted_gbps:.0f} GB/s as quoted) and a "
        "PCIe {pcie_gen}.0 x16 host link ({pcie_gbps:.0f} GB/s each way). On a PCIe 4.0 host it works at half the "
        "host bandwidth; 'needs' overstates it.",
        nvlink=g.nvlink, nvlink_gbps=nv.bandwidth / 1e9, nvlink_quoted_gbps=nv.bandwidth_vendor / 1e9,
        pcie_gen=g.pcie_gen, pcie_gbps=pcie.bandwidth / 1e9)


@_checks("node-100b")
def node_100b() -> Finding:
    a100 = gpus.get("A100 80GB")
    train = memory.training(100e9, zero_stage=3, dp=8, recompute="full")
    serve = memory.inference(100e9, tp=8, gpu=a100)
    needed = next(n for n in range(8, 4096, 8)
                  if memory.fits(memory.training(100e9, zero_stage=3, dp=n, recompute="full"), a100))
    return _found(
        "correct" if memory.fits(train, a100) else "wrong",
        "Training 100B with mixed-precision AdamW and ZeRO-3 over 8 GPUs needs {training:gb} per GPU: it does not "
        "fit 80 GB; at least {gpus_needed} A100 80GB do. Serving it in BF16 over 8 GPUs needs {serving:gb} per GPU: "
        "one node is right for inference." if not memory.fits(train, a100) else
        "Training 100B with mixed-precision AdamW and ZeRO-3 over 8 GPUs needs {training:gb} per GPU; serving it in "
        "BF16 needs {serving:gb} per GPU.",
        "for training" if memory.fits(serve, a100) else "",
        training=train.total, gpus_needed=needed, serving=serve.total)


@_checks("a100-best-value")
def a100_value() -> Finding:
    def per_dollar(name: str) -> float:
        g = gpus.get(name)
        return g.peak_flops("bf16") / TFLOPS / cost.price(g, "cloud_hour")
    names = [n for n in gpus.names() if gpus.get(n).supports("bf16") and cost.price(n, "cloud_hour")]
    ranked = sorted(names, key=per_dollar, reverse=True)
    rank = ranked.index("A100-SXM4-80GB") + 1
    return _found(
        "opinion",  # "best value" weighs more than price
        "Dense BF16 TFLOP/s per on-demand dollar-hour: {listed}. By this measure the A100 80GB ranks {rank} of {of}; "
        "memory, interconnect and availability decide as much as price.",
        f"it ranks {rank} of {len(ranked)} per dollar",
        listed=", ".join(f"{n} {per_dollar(n):.0f}" for n in ranked), rank=rank, of=len(ranked))


def _fit_words(b: memory.MemoryBreakdown, gpu: gpus.GPU) -> str:
    """Whether ``b`` fits ``gpu``, read with the Memory chapter's headroom (:data:`memory.HEADROOM`)."""
    spare = 1 - b.total / gpu.reported_memory_bytes
    if spare < 0:
        return "which does not fit"
    if spare < memory.HEADROOM:
        return (f"which leaves {spare:.0%} of its memory free, under the {memory.HEADROOM:.0%} headroom the Memory "
                f"chapter asks for: in practice it does not fit")
    return f"which fits with {spare:.0%} to spare"


@_checks("20b-4xa100-5days")
def a100_20b() -> Finding:
    a100 = gpus.get("A100 80GB")
    b = memory.training(20e9, zero_stage=3, dp=4, recompute="full")
    tokens = 5 * DAY / compute.training_time(20e9, 1e9, a100, 4).expected * 1e9
    optimal = compute.CHINCHILLA_TOKENS_PER_PARAM * 20e9
    return _found(
        "unverifiable",  # an anecdote without its setup
        "Full training of 20B with ZeRO-3 and full recompute over 4 A100 80GB needs {per_gpu:gb} per GPU ({states:gb} "
        "of it model states), {fit}. In 5 days 4 A100s process about {tokens_b:.1f}B tokens at the expected "
        "throughput: fine-tuning scale, not pre-training (compute-optimal would be {optimal_b:.0f}B tokens). "
        "1 - 5/14 = {saving:.0%}: the 60 % is arithmetic.",
        "only fine-tuning scale fits" if tokens < optimal / 10 else "",
        per_gpu=b.total, states=b.weights + b.gradients + b.optimizer, fit=_fit_words(b, a100), tokens_b=tokens / 1e9,
        optimal_b=optimal / 1e9, saving=1 - 5 / 14)


@_checks("a100-nvlink3")
def a100_nvlink() -> Finding:
    from . import validation
    g = gpus.get("A100 80GB")
    ln = comm.link(g.gpu_link)
    runs = validation.ddp_runs()
    efficiency = runs[(runs["GPU"] == "A100-SXM4-80GB") & (runs["GPUs"] == 8)]["measured efficiency"].iloc[0]
    return _found(
        "correct" if g.nvlink == "NVLink 3" and efficiency > 0.9 else "wrong",
        "NVLink 3 with NVSwitch: {each_way_gbps:.0f} GB/s each way per GPU ({quoted_gbps:.0f} GB/s quoted); 8 A100s "
        "scaled ResNet-152 at {efficiency:.1%} efficiency in a published DDP benchmark. The A100 PCIe joins only pairs "
        "through a bridge.",
        each_way_gbps=ln.bandwidth / 1e9, quoted_gbps=ln.bandwidth_vendor / 1e9, efficiency=efficiency)


@_checks("l40s-24gb")
def l40s_memory() -> Finding:
    g = gpus.get("L40S")
    same = [n for n in gpus.names() if gpus.get(n).memory_gb_vendor == 24 and gpus.get(n).tdp_watts == 150]
    return _found("correct" if g.memory_gb_vendor == 24 else "wrong",
                  "The L40S has {memory_gb:g} GB of {memory_type}, {bandwidth_gbps:.0f} GB/s. 24 GB and 150 W are the "
                  "figures of the {same}.", memory_gb=g.memory_gb_vendor, memory_type=g.memory_type,
                  bandwidth_gbps=g.memory_bandwidth / 1e9, same=", ".join(same))


@_checks("l40s-150w")
def l40s_power() -> Finding:
    g = gpus.get("L40S")
    sxm, pcie = gpus.get("A100-SXM4-80GB"), gpus.get("A100-PCIe-80GB")
    return _found("correct" if abs(g.tdp_watts - 150) <= 10 else "wrong",
                  "{watts:.0f} W = {of_sxm:.0%} of the {sxm} ({sxm_watts:.0f} W); {watts:.0f} W = {of_pcie:.0%} of the "
                  "{pcie} ({pcie_watts:.0f} W). 150/400 = 38 % is arithmetic on a wrong input.",
                  watts=g.tdp_watts, of_sxm=g.tdp_watts / sxm.tdp_watts, sxm=sxm.name, sxm_watts=sxm.tdp_watts,
                  of_pcie=g.tdp_watts / pcie.tdp_watts, pcie=pcie.name, pcie_watts=pcie.tdp_watts)


@_checks("int8-2-3x")
def int8_speedup() -> Finding:
    g = gpus.get("L40S")
    fp16 = compute.decode_throughput("llama-2-7b", g, weight_dtype="fp16").expected
    decode = compute.decode_throughput("llama-2-7b", g, weight_dtype="int8").expected / fp16
    peak = g.peak_flops("int8") / g.peak_flops("fp16")
    inside = [_within(r, 2, 3) for r in (peak, decode)]
    return _found(
        "correct" if all(inside) else "depends" if any(inside) else "wrong",
        "L40S peak INT8 / FP16 tensor rate = {peak:.1f}x (compute-bound work); batch-1 decoding of Llama 2 7B, which is "
        "bandwidth-bound, gains {decode:.1f}x from halving the weight bytes. Beyond 2x only against an FP32 baseline "
        "({peak_fp32:.0f}x).",
        peak=peak, decode=decode, peak_fp32=g.peak_flops("int8") / g.peak_flops("fp32"))


@_checks("mig-7")
def mig() -> Finding:
    have = [n for n in gpus.names() if gpus.get(n).mig_instances == 7]
    lack = [n for n in gpus.names() if gpus.get(n).mig_instances == 0]
    architectures = sorted({gpus.get(n).architecture for n in lack})
    return _found("correct" if have else "wrong", "Up to 7 MIG instances on {have}; none on {n_lack} others "
                  "({architectures} parts); no source states it for {n_unknown}.",
                  f"on {len(have)} of the catalog's {len(gpus.names())} GPUs", have=", ".join(have), n_lack=len(lack),
                  architectures=", ".join(architectures), n_unknown=len(gpus.names()) - len(have) - len(lack))


@_checks("a6000-30b")
def a6000_30b() -> Finding:
    g = gpus.get("A6000")
    largest = {dtype: max(n for n in range(1, 200) if memory.fits(memory.inference(n * 1e9, weight_dtype=dtype), g))
               for dtype in ("bf16", "int8", "int4")}
    return _found(
        "correct" if largest["bf16"] >= 30 else "depends" if largest["int4"] >= 30 else "wrong",
        "30B in BF16 is {weights:gb} of weights, more than 48 GB. Largest dense model with a 4096-token context on one "
        "A6000: {bf16_b}B in BF16, {int8_b}B in INT8, {int4_b}B in INT4.",
        "on the precision", weights=memory.inference(30e9).weights,
        **{f"{dtype}_b": b for dtype, b in largest.items()})


@_checks("a6000-96gb")
def a6000_pair() -> Finding:
    g = gpus.get("A6000")
    return _found(
        "roughly right",  # the sum is right; it is two memories, not one
        "2 x {memory_gb:g} GB = {pair_gb:g} GB, joined by a bridge of {bridge_gbps:.2f} GB/s each way "
        "({bridge_quoted_gbps:.1f} GB/s quoted): two memories, not one; the model must be split (tensor or pipeline "
        "parallelism).", memory_gb=g.memory_gb_vendor, pair_gb=2 * g.memory_gb_vendor,
        bridge_gbps=g.nvlink_bandwidth / 1e9, bridge_quoted_gbps=2 * g.nvlink_bandwidth / 1e9)


@_checks("a6000-half-price")
def a6000_price() -> Finding:
    a6000, a100 = cost.price("A6000", "purchase"), cost.price("A100 40GB", "purchase")
    return _found("roughly right" if _within(a6000 / a100, 0.4, 0.6) else "wrong",
                  "A6000 launch price ${a6000_usd:,.0f} against about ${a100_usd:,.0f} for an A100 (2023 street "
                  "price): {ratio:.0%}.", "2020-2023 prices", a6000_usd=a6000, a100_usd=a100, ratio=a6000 / a100)


@_checks("a4000-16gb-140w")
def a4000() -> Finding:
    g = gpus.get("A4000")
    return _found("correct" if g.memory_gb_vendor == 16 and g.tdp_watts == 140 else "wrong",
                  "{memory_gb:g} GB {memory_type}, {bandwidth_gbps:.0f} GB/s, {watts:.0f} W, {form_factor}.",
                  memory_gb=g.memory_gb_vendor, memory_type=g.memory_type, bandwidth_gbps=g.memory_bandwidth / 1e9,
                  watts=g.tdp_watts, form_factor=g.form_factor)


# §2.3: bandwidth


@_checks("nvlink-5-8x")
def nvlink_vs_pcie() -> Finding:
    pairs = [("nvlink2", "pcie3", "V100"), ("nvlink3", "pcie4", "A100 SXM"), ("nvlink4", "pcie5", "H100 SXM"),
             ("nvlink5", "pcie5", "B200"), ("nvlink3-ga102-bridge", "pcie4", "RTX 3090 / A6000 bridge"),
             ("nvlink4-bridge", "pcie5", "H100 PCIe / NVL bridge")]
    ratios = {label: comm.link(a).bandwidth / comm.link(b).bandwidth for a, b, label in pairs}
    inside = [_within(r, 5, 8) for r in ratios.values()]
    return _found("correct" if all(inside) else "depends" if any(inside) else "wrong",
                  "Per-GPU link bandwidth over the PCIe x16 of the same generation (each way): {listed}.",
                  "on the generation", listed=", ".join(f"{label} {r:.1f}x" for label, r in ratios.items()))


@_checks("h100-nvlink-900")
def h100_nvlink() -> Finding:
    ln = comm.link(gpus.get("H100").gpu_link)
    return _found(
        "correct" if round(ln.bandwidth_vendor / 1e9) == 900 else "wrong",
        "{quoted_gbps:.0f} GB/s is the total of both directions ({kind}: 18 links); each way it is {each_way_gbps:.0f} "
        "GB/s, and all-reduces reach about {achieved:.0%} of that. H100 PCIe and NVL cards bridge pairs at "
        "{bridge_gbps:.0f} GB/s.", "both directions together",
        quoted_gbps=ln.bandwidth_vendor / 1e9, kind=ln.kind, each_way_gbps=ln.bandwidth / 1e9,
        achieved=ln.achieved_fraction, bridge_gbps=comm.link("nvlink4-bridge").bandwidth_vendor / 1e9)


@_checks("resnet-table")
def resnet_table() -> Finding:
    from . import validation
    runs = validation.ddp_runs()
    measured = runs[runs["GPUs"] == 8].set_index("GPU")["measured efficiency"]
    a100 = _data.table("ddp_runs").query("gpu == 'A100-SXM4-80GB' and n_gpus == 1").iloc[0]
    compute_s = a100["batch_per_gpu"] / a100["images_per_s_per_gpu"]
    grads = a100["params"] * 4
    modelled = {link: scaling.data_parallel_step(grads, compute_s, 8, link, overlap=0).efficiency
                for link in ("nvlink3", "pcie4", "pcie3")}
    overlapped = min(scaling.data_parallel_step(grads, compute_s, 8, link).efficiency for link in modelled)
    return _found(
        "unverifiable",  # no source or setup is given
        "Measured (PyTorch DDP, ResNet-152, FP16, 8 GPUs): V100 NVLink {v100:.1%}, A100 NVLink {a100:.1%}. The step "
        "model, A100 at batch 512 with {gradients_mb:.0f} MB of fp32 gradients and no overlap: {listed}; with DDP's "
        "bucketed overlap at least {overlapped:.1%} on every link. The 92 % NVLink row is plausible; 78 % and 65 % need "
        "far smaller batches or a broken PCIe topology.",
        "the PCIe rows look pessimistic" if modelled["pcie3"] > 0.65 and modelled["pcie4"] > 0.78 else "",
        v100=measured["V100-SXM2-32GB"], a100=measured["A100-SXM4-80GB"], gradients_mb=grads / 1e6,
        listed=", ".join(f"{link} {e:.1%}" for link, e in modelled.items()), overlapped=overlapped)


@_checks("bandwidth-deadlier")
def bandwidth_1t() -> Finding:
    row = _data.table("training_runs").set_index("id").loc["M060"]
    mfu = row["tflops_per_gpu"] * 1e12 / gpus.get(row["gpu"]).peak_flops(row["dtype"])
    return _found(
        "opinion",
        "Megatron-LM trained a {params_t:.1f}T-parameter GPT on {n_gpus:,.0f} A100s at {tflops:.0f} TFLOP/s per GPU, "
        "{mfu:.0%} of peak: with tensor parallelism inside NVLink servers and pipeline and data parallelism across "
        "them, compute, not bandwidth, set the pace. Bandwidth is fatal only to a layout that ignores the hierarchy.",
        "the published 1T run says otherwise" if mfu >= 0.4 else "",
        params_t=row["n_params"] / 1e12, n_gpus=row["n_gpus"], tflops=row["tflops_per_gpu"], mfu=mfu)


# §4: cost


@_checks("mixed-precision-45pct")
def mixed_precision_cost() -> Finding:
    a100 = gpus.get("A100 80GB")
    runs = {d: cost.training_cost("llama-2-7b", 1e11, a100, 8, dtype=d).expected for d in ("tf32", "bf16")}
    saving = 1 - runs["bf16"] / runs["tf32"]
    return _found(
        "unverifiable",  # a client's case without its setup
        "On an A100 the dense BF16 peak is {bf16_tf32:.0f}x TF32 and {bf16_fp32:.0f}x plain FP32. At the same MFU, "
        "Llama 2 7B on 100B tokens costs ${tf32_usd:,.0f} in TF32 and ${bf16_usd:,.0f} in BF16 on 8 A100s on demand: "
        "{saving:.0%} less. 45 % fits a TF32 baseline with some loss of MFU.",
        "plausible against TF32" if saving >= 0.45 else "",
        bf16_tf32=a100.peak_flops("bf16") / a100.peak_flops("tf32"),
        bf16_fp32=a100.peak_flops("bf16") / a100.peak_flops("fp32"), tf32_usd=runs["tf32"], bf16_usd=runs["bf16"],
        saving=saving)


@_checks("reserved-60pct")
def reserved_saving() -> Finding:
    d = cost.assumption("reserved_3y_discount")
    return _found(
        "correct" if _within(0.6, d.low, d.high) else "wrong",
        "Published 3-year commitments for GPU instances (Google Cloud committed-use discounts, AWS three-year terms) "
        "take {low:.0%}-{high:.0%} off on-demand prices, {expected:.0%} on average: 60 % is what the large clouds give. "
        "GPU clouds that start from lower on-demand prices discount less, and this book has no dated figures for their "
        "commitments.", "at the large clouds' list prices", low=d.low, high=d.high, expected=d.expected)


@_checks("spot-fault-tolerant")
def spot_practice() -> Finding:
    o = cost.spot_overhead(64)
    return _found(
        "correct" if o.high < 0.1 else "depends",
        "Spot instances can be reclaimed with two minutes' notice, so a run must checkpoint. With checkpoints at "
        "Young's optimal interval, a 64-GPU run loses {low:.0%}-{high:.0%} (expected {expected:.0%}) of its time to "
        "checkpoints, redone work and restarts.", "with checkpointing",
        low=o.low, high=o.high, expected=o.expected)


@_checks("spot-75pct")
def spot_saving() -> Finding:
    on = cost.training_cost("llama-2-7b", 1e12, "H100", 64)
    spot = cost.training_cost("llama-2-7b", 1e12, "H100", 64, pricing="spot")
    d = cost.assumption("spot_discount")
    return _found(
        "unverifiable",  # a project without its setup
        "Spot against on-demand for Llama 2 7B on 64 H100s, interruptions included: {low:.0%} to {high:.0%} saved "
        "(expected {expected:.0%}). 75 % is more than the spot discounts observed for GPU instances allow "
        "({discount_low:.0%}-{discount_high:.0%} off before interruptions); no setup is given to check it."
        if d.high < 0.75 else "Spot against on-demand for Llama 2 7B on 64 H100s, interruptions included: {low:.0%} to "
        "{high:.0%} saved (expected {expected:.0%}); no setup is given to check the 75 %.",
        "above the observed GPU spot discounts" if d.high < 0.75 else "",
        low=1 - spot.high / on.high, high=1 - spot.low / on.low, expected=1 - spot.expected / on.expected,
        discount_low=d.low, discount_high=d.high)


# §5: what to buy


@_checks("budget-50k")
def budget_50k() -> Finding:
    rtx, a100 = cost.price("4090", "purchase"), cost.price("A100 40GB", "cloud_hour")
    hours = 2000 / a100
    return _found(
        "roughly right",  # the split is sound; the sums are not
        "Two RTX 4090s cost ${cards_usd:,.0f} at launch price, for the cards alone (a workstation around them adds "
        "more). $2,000 a month buys {hours:,.0f} A100 40GB hours at ${a100_usd_per_hour:.2f}/h, about {gpus_all_month:.1f} "
        "GPUs running all month.", "hardware under-costed" if 2 * rtx > 3000 else "",
        cards_usd=2 * rtx, hours=hours, a100_usd_per_hour=a100, gpus_all_month=hours / cost.HOURS_PER_MONTH)


@_checks("budget-4xa100")
def four_a100() -> Finding:
    a100 = gpus.get("A100 40GB")
    full = select.largest_trainable(a100, 4)
    qlora = max(b for b in range(1, 200) if memory.fits(memory.training(b * 1e9, method="qlora", recompute="full"), a100))
    serve = max(b for b in range(1, 200) if memory.fits(memory.inference(b * 1e9, tp=4, gpu=a100), a100))
    return _found(
        "correct" if full >= 100 else "wrong",
        "4 x 40 GB = 160 GB. Full training (mixed-precision AdamW, ZeRO-3, full recompute) fits up to about {full_b}B "
        "parameters; QLoRA fine-tuning of up to about {qlora_b}B fits on one card; even BF16 inference stops near "
        "{serve_b}B over all four.", full_b=full, qlora_b=qlora, serve_b=serve)


@_checks("8xa100-100b")
def eight_a100() -> Finding:
    full = select.largest_trainable("A100 80GB", 8)
    tokens = compute.CHINCHILLA_TOKENS_PER_PARAM * 100e9
    t = compute.training_time(100e9, tokens, "A100 80GB", 8)
    return _found(
        "correct" if full >= 100 else "wrong",
        "8 x 80 GB holds the training state of about {full_b}B parameters with ZeRO-3 and recompute, not 100B. And "
        "compute-optimal training of 100B ({tokens_b:.0f}B tokens) would take {low_years:.0f}-{high_years:.0f} years on "
        "8 A100s.", "in practice",
        full_b=full, tokens_b=tokens / 1e9, low_years=t.low / DAY / 365, high_years=t.high / DAY / 365)


@_checks("superpod-64")
def superpod() -> Finding:
    t = compute.training_time(1e9, 1e9, "H100", 64)
    budget = 90 * DAY / t.expected * 6 * 1e18  # FLOPs that 64 H100s deliver in 90 days at the expected throughput
    return _found(
        "unverifiable",  # no model or deadline to size it against
        "64 H100s are 8 DGX H100 systems of 8 GPUs. In 90 days they deliver about {flop:.1e} FLOP at the expected "
        "MFU: compute-optimal for a model of about {optimal_b:.0f}B parameters. Liquid cooling is what rack-scale "
        "Blackwell requires ({gb200_form_factor}), not 64 H100s.", "imprecise",
        flop=budget, optimal_b=(budget / (6 * compute.CHINCHILLA_TOKENS_PER_PARAM)) ** 0.5 / 1e9,
        gb200_form_factor=gpus.get("GB200").form_factor)


@_checks("l40s-serving")
def l40s_serving() -> Finding:
    served = scenarios.answer("serving-l40s")  # the book's high-concurrency traffic, planned per GPU
    ranking = served.ranking.set_index("gpu")
    usd = {name: float(ranking.loc[name, "cost_usd"]) for name in (gpus.get(g).name for g in ("L40S", "H100", "A100 80GB", "L4"))}
    cheapest = min(usd, key=usd.get)
    l40s = gpus.get("L40S").name
    return _found(
        "opinion",
        "{workload}, on-demand dollars per million tokens in and out on the fewest GPUs of each kind that meet it: "
        "{listed}. " + ("The L40S is the cheapest per token at these prices." if cheapest == l40s else
                        "The L40S is a reasonable serving card, but the {cheapest} is cheaper per token at these prices."),
        "check it per token", workload=served.scenario["workload"],
        listed=", ".join(f"{n} ${v:.3f}" for n, v in usd.items()), cheapest=cheapest)


# §6: trends


@_checks("blackwell-2024")
def blackwell() -> Finding:
    b, h = gpus.get("B200"), gpus.get("H100")
    bf16 = b.peak_flops("bf16") / h.peak_flops("bf16")
    return _found(
        "roughly right" if b.launch_year == 2024 and bf16 > 1.5 else "wrong",  # announced 2024; a leap at more power
        "{name}: launched {year}, dense BF16 {bf16:.2f}x and memory bandwidth {bandwidth:.1f}x the H100 SXM, at "
        "{power:.2f}x the power.", name=b.name, year=b.launch_year, bf16=bf16,
        bandwidth=b.memory_bandwidth / h.memory_bandwidth, power=b.tdp_watts / h.tdp_watts)


@_checks("fp8-4pflops")
def blackwell_fp8() -> Finding:
    parts = {g.name: g for g in map(gpus.get, ("B200", "GB200"))}
    b200 = gpus.get("B200").peak_flops("fp8") / 1e15
    return _found(
        "correct" if abs(b200 - 4) < 0.05 else "roughly right" if _within(b200 / 4, 0.85, 1.15) else "wrong",
        "{listed} (FP8).", f"dense B200 is {b200:.1f}", b200_pflops=b200,
        listed="; ".join(f"{name}: {g.peak_flops('fp8') / 1e15:.1f} PFLOP/s dense, "
                         f"{g.peak_flops('fp8', sparse=True) / 1e15:.0f} with sparsity" for name, g in parts.items()))


@_checks("hbm3e-256")
def blackwell_memory() -> Finding:
    b, gb200 = gpus.get("B200"), gpus.get("GB200")
    return _found(
        "correct" if 256 in (b.memory_gb_vendor, gb200.memory_gb_vendor) else "wrong",
        "B200: {b200_gb:g} GB on the package, {b200_usable_gib:g} GB usable in HGX/DGX systems; GB200: {gb200_gb:g} GB "
        "per GPU. 256 GB matches no Blackwell part in the catalog.",
        b200_gb=b.memory_gb_vendor, b200_usable_gib=b.memory_bytes / 2**30, gb200_gb=gb200.memory_gb_vendor)


@_checks("nvlink5-1.8")
def nvlink5() -> Finding:
    ln = comm.link(gpus.get("B200").gpu_link)
    return _found("correct" if round(ln.bandwidth_vendor / 1e11) == 18 else "wrong",
                  "{quoted_tbps:.1f} TB/s is the total of both directions ({kind}); {each_way_gbps:.0f} GB/s each way, "
                  "{vs_nvlink4:.0f}x NVLink 4.", "both directions together",
                  quoted_tbps=ln.bandwidth_vendor / 1e12, kind=ln.kind, each_way_gbps=ln.bandwidth / 1e9,
                  vs_nvlink4=ln.bandwidth / comm.link("nvlink4").bandwidth)


@_checks("infrastructure-costs")
def infrastructure() -> Finding:
    own = cost.ownership("H100", 8, years=3, utilization=0.7)
    parts = own.parts()
    beyond = own.total.expected - own.capex
    return _found(
        "opinion",
        "Eight H100s in one server for three years at 70 % use: ${servers_usd:,.0f} of hardware (GPUs at "
        "{gpu_share:.0%} of the server price) and ${energy_low_usd:,.0f}-${energy_high_usd:,.0f} of electricity "
        "(server power, PUE). Electricity, storage, colocation (space, power delivery, cooling) and staff add "
        "{beyond:.0%} to the price of the server (expected values; chapter 5 itemises them).",
        "plausible", servers_usd=own.capex, gpu_share=cost.assumption("gpu_share_of_server").expected,
        energy_low_usd=parts["energy"].low, energy_high_usd=parts["energy"].high, beyond=beyond / own.capex)


@_checks("waited-for-h100")
def waiting() -> Finding:
    from . import trends
    plan = trends.wait_or_start("llama-2-70b", 2e12, 512, later="H100", now="A100 80GB", wait_months=6,
                                later_price=cost.price("H100"))
    return _found(
        "unverifiable",  # a client's case without its setup
        "Training Llama 2 70B on 2T tokens with 512 GPUs: starting on A100s finishes on day {now_days:.0f}; waiting 6 "
        "months for H100s finishes on day {wait_days:.0f}. Waiting pays off only if it is shorter than "
        "{break_even_months:.1f} months.", "the trade-off is computable",
        now_days=plan.run_now / DAY, wait_days=plan.finish_later / DAY, break_even_months=plan.break_even_wait / MONTH)


@_checks("inference-priorities")
def inference_priorities() -> Finding:
    per_token, per_kw = {}, {}
    for name in ("L4", "L40S", "H100"):
        g = gpus.get(name)
        tokens_per_s = compute.decode_throughput("llama-3-8b", g, context_len=2048).expected
        per_token[g.name], per_kw[g.name] = 1 / tokens_per_s, tokens_per_s / g.tdp_watts * 1000
    return _found(
        "opinion",
        "Batch-1 decoding of Llama 3 8B in BF16: {listed}. Latency follows memory bandwidth, and per kW the {best} does "
        "best here: a low-power card is not automatically efficient.", "reasonable",
        listed="; ".join(f"{n} {per_token[n] * 1000:.0f} ms per token, {per_kw[n]:.0f} tokens/s per kW of TDP"
                         for n in per_token), best=max(per_kw, key=per_kw.get))


COLUMNS = ["id", "section", "quote_zh", "claim_en", "verdict", "note", "checked_value", "source"]


def _sourced(row: pd.Series) -> Finding:
    """The finding of a claim no number settles: verdict, note and sourced text from the CSV."""
    return Finding(row["verdict"], row["checked_text"], {}, row["note"] if isinstance(row["note"], str) else "")


def _findings(rows: pd.DataFrame) -> list[Finding]:
    return [_CHECKS[row["id"]]() if row["id"] in _CHECKS else _sourced(row) for _, row in rows.iterrows()]


def _checked(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` of ``data/claims.csv`` with their findings: verdict, note and sentence."""
    found = _findings(rows)
    return rows.assign(verdict=[f.verdict for f in found], note=[f.note for f in found],
                       checked_value=[f.sentence for f in found])[COLUMNS]


def _row(claim_id: str) -> pd.DataFrame:
    claims = _data.table("claims")
    if not isinstance(claim_id, str):
        raise ValueError(f"claim_id must be a claim's id (a string), got {claim_id!r}")
    rows = claims[claims["id"] == claim_id]
    if rows.empty:
        raise ValueError(f"claim_id={claim_id!r} is not a known claim; known: {', '.join(claims['id'])}")
    return rows


def table() -> pd.DataFrame:
    """Every claim, in the order of the article's sections: id, section, quote_zh, claim_en, verdict,
    note, checked_value (the finding's sentence), source."""
    claims = _data.table("claims")
    order = sorted(range(len(claims)), key=lambda i: tuple(int(p) for p in claims["section"].iloc[i].split(".")))
    return _checked(claims.iloc[order].reset_index(drop=True))


def get(claim_id: str) -> pd.Series:
    """One claim by id, with its finding (computing only that claim's check)."""
    return _checked(_row(claim_id)).set_index("id").iloc[0]


def finding(claim_id: str) -> Finding:
    """What the book finds for one claim: verdict, note, the figures it rests on and the sentence."""
    return _findings(_row(claim_id))[0]


def title(claim_id: str) -> str:
    """The short title of the claim's box in its chapter (markdown)."""
    return str(_row(claim_id)["title"].iloc[0])
