"""FLOPs, training time and inference speed, each predicted with a band.

FLOP counts live in :mod:`flops` (re-exported here). Training time comes from the step model of
the best parallel layout (:mod:`planner`, :mod:`steptime`) with a band from its out-of-sample
errors (:mod:`calibration`); inference times divide FLOPs and bytes by peak rates times
efficiencies calibrated on published runs (``data/efficiency.csv``).
"""

from functools import cache
from math import exp, hypot, log

from . import _data, calibration, comm, gpus, planner
from .estimate import Estimate
from .gpus import GPU
from .flops import CHINCHILLA_TOKENS_PER_PARAM, RECOMPUTE_FACTOR, flops_per_token, training_flops  # noqa: F401 (public names)
from .memory import TRAIN_DTYPES, as_model, check_split, inference
from .models import Model
from .units import check_choice, check_dtype, check_positive, check_result

#: Compute dtypes of training: those of :data:`memory.TRAIN_DTYPES`, plus FP8 (Transformer Engine).
TRAINING_DTYPES = TRAIN_DTYPES + ("fp8",)


@cache
def _choices() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Calibrated quantities and the architectures of the GPU catalog."""
    return tuple(_data.table("efficiency")["quantity"].unique()), tuple(_data.table("gpus")["architecture"].unique())


def efficiency(quantity: str, architecture: str, dtype: str) -> Estimate:
    """Default efficiency band for ``quantity`` ("mfu", "decode_bandwidth", "prefill_compute",
    "goodput") on a GPU architecture and dtype: the most specific row of ``data/efficiency.csv``."""
    quantities, architectures = _choices()
    check_choice("quantity", quantity, quantities)
    check_choice("architecture", architecture, architectures)
    check_dtype(dtype)
    return _efficiency(quantity, architecture, dtype)


@cache
def _efficiency(quantity: str, architecture: str, dtype: str) -> Estimate:
    table = _data.table("efficiency")
    rows = table[table["quantity"] == quantity]
    for arch, dt in ((architecture, dtype), (architecture, "*"), ("*", dtype), ("*", "*")):
        match = rows[(rows["architecture"] == arch) & (rows["dtype"] == dt)]
        if not match.empty:
            row = match.iloc[0]
            return Estimate(float(row["low"]), float(row["expected"]), float(row["high"]))
    raise ValueError(f"no default {quantity} for {architecture}/{dtype}")


def _band(value: "float | Estimate | None", default: Estimate, name: str) -> Estimate:
    if value is None:
        return default
    for end in (value.low, value.high) if isinstance(value, Estimate) else (value,):
        check_positive(name, end)
        if end > 1:
            raise ValueError(f"{name} is a fraction of peak, at most 1, got {value}")
    return value if isinstance(value, Estimate) else Estimate.exact(float(value))


def training_time(model: "Model | str | float", tokens: float, gpu: "GPU | str", n_gpus: int, *,
                  dtype: str | None = None, mfu: "float | Estimate | None" = None,
                  goodput: "float | Estimate | None" = None, seq_len: int | None = None,
                  recompute: str = "none") -> Estimate:
    """Wall-clock seconds to train on ``tokens`` tokens with ``n_gpus`` GPUs in ``dtype`` (bf16
    unless given, fp16 on GPUs without it).

    By default the GPUs run the fastest layout that fits (:func:`planner.plan`, sequences of
    ``seq_len`` tokens, 2048 unless given, at the model's training batch): the steady-state time is
    ``tokens`` over the plan's throughput, with the band of the step model's out-of-sample errors
    (:func:`calibration.band`). ``goodput`` (the share of wall-clock time a long run makes
    progress) divides it: its sourced band unless given, 1.0 for a steady-state benchmark.

    With ``mfu`` (a fraction of the dense peak, e.g. a published TFLOP/s over the peak), time =
    FLOPs / (n_gpus * peak(dtype) * mfu * goodput) instead; ``recompute="full"`` then counts the
    extra forward, as Megatron-LM's throughput figures do.
    """
    g = gpus.get(gpu)
    check_positive("n_gpus", n_gpus, integer=True)
    dtype = planner.training_dtype(g, dtype)
    work = training_flops(model, tokens, recompute=recompute, seq_len=seq_len)
    p = _band(goodput, efficiency("goodput", g.architecture, dtype), "goodput")
    if mfu is None:
        best = planner.plan(model, g, n_gpus, seq_len=seq_len or planner.DEFAULT_SEQ_LEN, tokens=tokens, dtype=dtype)
        return run_time(best, tokens, goodput=p)
    rate = n_gpus * g.peak_flops(dtype)
    u = _band(mfu, Estimate.exact(1.0), "mfu")

    def seconds(e: float) -> float:  # e * rate underflows to 0 only for absurdly small fractions
        return check_result(work / (rate * e) if rate * e else float("inf"), tokens=tokens, mfu=mfu, goodput=goodput)

    return Estimate(u.low * p.low, u.expected * p.expected, u.high * p.high).map(seconds)


def run_time(plan: "planner.Plan", tokens: float, *, goodput: "float | Estimate | None" = None) -> Estimate:
    """Wall-clock seconds to train on ``tokens`` tokens with ``plan``: tokens over its steady
    throughput, divided by the expected goodput (its sourced band unless given).

    The band combines two independent errors, the step model's out-of-sample band
    (:func:`calibration.band`) and the goodput's spread, as factors whose logarithms add in
    quadrature (root-sum-square, as independent uncertainties combine: JCGM 100:2008, the GUM,
    Sec. 5.1.2), rather than multiplying their extremes, which no run meets at once.
    """
    check_positive("tokens", tokens)
    g = gpus.get(plan.gpu)
    p = _band(goodput, efficiency("goodput", g.architecture, plan.layout.dtype), "goodput")
    low, high = calibration.band(g, plan.layout.dtype)
    expected = check_result(tokens / plan.tokens_per_second / p.expected, tokens=tokens, goodput=goodput)
    down, up = hypot(log(low), log(p.expected / p.high)), hypot(log(high), log(p.expected / p.low))
    return Estimate(expected * exp(-down), expected, expected * exp(up))


def compute_dtype(gpu: GPU, dtype: str) -> str:
    """The tensor-core dtype that runs a model stored as ``dtype``: weight-only formats (int4, nf4)
    and formats the GPU lacks fall back to bf16, or fp16 where bf16 is missing."""
    gpu = gpus.get(gpu)
    if gpu.supports(dtype) and dtype not in ("fp32", "tf32"):
        return dtype
    return "bf16" if gpu.supports("bf16") else "fp16"


def decode_step(model: "Model | str | float", *, batch_size: int = 1, context_len: int = 1024,
                weight_dtype: str = "bf16", kv_dtype: str = "bf16", n_gpus: int = 1) -> tuple[float, float]:
    """(FLOPs, bytes read) per GPU for one decoding step of ``batch_size`` sequences: every step
    reads all weights and each sequence's KV cache, and does 2N + 4*L*s*d FLOPs per sequence."""
    m = as_model(model)
    check_split(m, n_gpus, replicate_kv=True, name="n_gpus")
    per_gpu = inference(m, weight_dtype=weight_dtype, kv_dtype=kv_dtype, batch_size=batch_size,
                        context_len=context_len, tp=n_gpus)
    flops = batch_size * flops_per_token(m, seq_len=context_len, training=False) / n_gpus
    return flops, per_gpu.weights + per_gpu.kv_cache


def tensor_parallel_time(model: "Model | str | float", gpu: "GPU | str", n_gpus: int, tokens: int) -> Estimate:
    """Seconds of tensor-parallel communication for one forward pass over ``tokens`` tokens: two
    all-reduces of the 16-bit activations per layer (Shoeybi et al. 2019, arXiv:1909.08053, Sec. 3),
    over the GPUs' NVLink domain or else PCIe (:func:`comm.gpu_link`)."""
    m = as_model(model)
    check_split(m, n_gpus, replicate_kv=True, name="n_gpus")
    check_positive("tokens", tokens)
    activations = check_result(tokens * m.d_model * 2, tokens=tokens)
    per_call = comm.allreduce_time(activations, n_gpus, comm.gpu_link(gpu, n_gpus))
    return per_call * (2 * m.n_layers)


def _roofline_band(work: float, rate: float, efficiency_band: Estimate, data: float, bandwidth: float,
                   bandwidth_band: Estimate, extra: Estimate) -> Estimate:
    """Seconds: the longer of compute and memory time, plus ``extra``; fast ends paired with fast ends."""
    return Estimate(*(max(work / (rate * c), data / (bandwidth * b)) + x for c, b, x in (
        (efficiency_band.high, bandwidth_band.high, extra.low),
        (efficiency_band.expected, bandwidth_band.expected, extra.expected),
        (efficiency_band.low, bandwidth_band.low, extra.high))))


def decode_throughput(model: "Model | str | float", gpu: "GPU | str", *, n_gpus: int = 1, batch_size: int = 1,
                      context_len: int = 1024, weight_dtype: str = "bf16", kv_dtype: str = "bf16") -> Estimate:
    """Generated tokens per second, all sequences together, in steady decoding.

    Each step reads the weights and the KV cache once (memory time, at the achieved fraction of
    bandwidth) and does 2N + 4*L*s*d FLOPs per sequence (compute time, at the prefill fraction
    of peak); the step takes the longer of the two (roofline, Williams et al. 2009), plus, with
    ``n_gpus`` > 1, the tensor-parallel all-reduces, which do not overlap with it.
    """
    g = gpus.get(gpu)
    flops, read_bytes = decode_step(model, batch_size=batch_size, context_len=context_len,
                                    weight_dtype=weight_dtype, kv_dtype=kv_dtype, n_gpus=n_gpus)
    step = _roofline_band(flops, g.peak_flops(compute_dtype(g, weight_dtype)),
                          efficiency("prefill_compute", g.architecture, weight_dtype), read_bytes, g.memory_bandwidth,
                          efficiency("decode_bandwidth", g.architecture, weight_dtype),
                          tensor_parallel_time(model, g, n_gpus, batch_size))
    return step.map(lambda t: batch_size / t)


def prefill_time(model: "Model | str | float", gpu: "GPU | str", prompt_len: int, *, n_gpus: int = 1,
                 batch_size: int = 1, dtype: str = "bf16") -> Estimate:
    """Seconds to process a prompt (time to first token, without queueing).

    FLOPs: 2N per token plus causal attention, 2*L*s^2*d per sequence; the weights must also be
    read once. The longer of compute and memory time at the calibrated efficiencies, plus the
    tensor-parallel all-reduces over all prompt tokens.
    """
    g, m = gpus.get(gpu), as_model(model)
    check_positive("prompt_len", prompt_len, integer=True)
    check_positive("batch_size", batch_size, integer=True)
    check_split(m, n_gpus, replicate_kv=True, name="n_gpus")
    flops = batch_size * (2 * m.n_active_params * prompt_len + 2 * m.n_layers * prompt_len**2 * m.d_model) / n_gpus
    return _roofline_band(flops, g.peak_flops(compute_dtype(g, dtype)), efficiency("prefill_compute", g.architecture, dtype),
                          inference(m, weight_dtype=dtype, tp=n_gpus).weights, g.memory_bandwidth,
                          efficiency("decode_bandwidth", g.architecture, dtype),
                          tensor_parallel_time(m, g, n_gpus, batch_size * prompt_len))
