"""FLOPs, training time and inference speed, each predicted with a band.

FLOP counts live in :mod:`flops` (re-exported here). Training time comes from the step model of
the best parallel layout (:mod:`planner`, :mod:`steptime`) with a band from its out-of-sample
errors (:mod:`calibration`); inference times come from the engine-step model of :mod:`serving`, with
bands from its out-of-sample errors.
"""

from functools import cache, lru_cache
from math import exp, hypot, log

from . import _data, calibration, formats, gpus, planner, serving
from .estimate import Estimate
from .gpus import GPU
from .serving import compute_dtype, tensor_parallel_time  # noqa: F401 (public names)
from .flops import CHINCHILLA_TOKENS_PER_PARAM, RECOMPUTE_FACTOR, flops_per_token, training_flops  # noqa: F401 (public names)
from .memory import as_model, check_split, inference, serving_kv_dtype
from .models import Model
from .units import check_choice, check_dtype, check_instance, check_positive, check_result, renamed_keywords

#: ``TRAINING_COMPUTE_DTYPES``: the compute formats of training (:func:`formats.names`, role
#: "training", read on first use): those of ``memory.TRAINING_STATE_DTYPES`` plus FP8 (Transformer
#: Engine). Old name ``TRAINING_DTYPES``.
__getattr__ = formats.lazy_constants(__name__, {"TRAINING_COMPUTE_DTYPES": lambda: formats.names("training")},
                                     renamed={"TRAINING_DTYPES": "TRAINING_COMPUTE_DTYPES"})


@cache
def _choices() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Calibrated quantities and the architectures of the GPU catalog."""
    return tuple(_data.table("efficiency")["quantity"].unique()), tuple(_data.table("gpus")["architecture"].unique())


def efficiency(quantity: str, architecture: str, dtype: str) -> Estimate:
    """Default efficiency band for ``quantity`` (one of those in ``data/efficiency.csv``, today only
    "goodput") on a GPU architecture and dtype: the most specific row of that file."""
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
    check_instance("plan", plan, planner.Plan, "a planner.Plan")
    check_positive("tokens", tokens)
    factors = _default_run_factors if goodput is None else _run_factors
    p, down, up = factors(plan.gpu, plan.layout.dtype, goodput)
    expected = check_result(tokens / plan.tokens_per_second / p, tokens=tokens, goodput=goodput)
    return Estimate(expected * down, expected, expected * up)


def _run_factors(gpu: str, dtype: str, goodput: "float | Estimate | None") -> tuple[float, float, float]:
    """The expected goodput of :func:`run_time` and the factors that take its expected time to the
    ends of its band."""
    g = gpus.get(gpu)
    p = _band(goodput, efficiency("goodput", g.architecture, dtype), "goodput")
    low, high = calibration.band(g, dtype)
    return p.expected, exp(-hypot(log(low), log(p.expected / p.high))), exp(hypot(log(high), log(p.expected / p.low)))


#: :func:`_run_factors` of the sourced goodput band, looked up once per GPU and dtype.
_default_run_factors = lru_cache(maxsize=256)(_run_factors)


@renamed_keywords(n_gpus="tp")
def decode_step(model: "Model | str | float", *, batch_size: int = 1, context_len: int = 1024,
                weight_dtype: str = "bf16", kv_dtype: str = "bf16", tp: int = 1) -> tuple[float, float]:
    """(FLOPs, bytes read) per GPU for one decoding step of ``batch_size`` sequences: every step
    reads all weights and each sequence's KV cache, and does 2N + 4*L*s*d FLOPs per sequence."""
    m = as_model(model)
    check_split(m, tp, replicate_kv=True, name="tp")
    per_gpu = inference(m, weight_dtype=weight_dtype, kv_dtype=kv_dtype, batch_size=batch_size,
                        context_len=context_len, tp=tp)
    flops = batch_size * flops_per_token(m, seq_len=context_len, training=False) / tp
    return flops, per_gpu.weights + per_gpu.kv_cache


def banded_seconds(seconds: dict[str, float]) -> Estimate:
    """The total of ``seconds`` (terms of :mod:`serving`) with the out-of-sample band of serving
    times, its fast end no faster than the roofline."""
    low, high = calibration.serving_band()
    total = seconds["total"]
    return Estimate(max(total * low, min(seconds["roofline"], total)), total, total * high)


@renamed_keywords(n_gpus="tp")
def decode_throughput(model: "Model | str | float", gpu: "GPU | str", *, tp: int = 1, batch_size: int = 1,
                      context_len: int = 1024, weight_dtype: str = "bf16", kv_dtype: str = "bf16",
                      split_kv: bool = True) -> Estimate:
    """Generated tokens per second, all sequences together, in steady decoding: the batch over
    one engine step (:func:`serving.decode_seconds`: weights and KV cache read, compute, their
    partial overlap, a fixed cost per layer, tensor-parallel all-reduces; ``split_kv`` False for an
    engine that reads each sequence's cache with one thread block per KV head), with the band of
    the step model's out-of-sample errors on published decoding speeds."""
    step = serving.decode_seconds(model, gpu, tp=tp, batch_size=batch_size, context_len=context_len,
                                  weight_dtype=weight_dtype, kv_dtype=kv_dtype, split_kv=split_kv)
    return banded_seconds(step).map(lambda t: batch_size / t)


@renamed_keywords(n_gpus="tp", dtype="weight_dtype")
def prefill_time(model: "Model | str | float", gpu: "GPU | str", prompt_len: int, *, tp: int = 1,
                 batch_size: int = 1, weight_dtype: str = "bf16") -> Estimate:
    """Seconds to process a prompt (time to first token, without queueing): one prefill step
    (:func:`serving.prefill_seconds`) of ``weight_dtype`` weights, with the band of its
    out-of-sample errors on published first-token latencies."""
    check_dtype(weight_dtype, name="weight_dtype")
    seconds = serving.prefill_seconds(model, gpu, prompt_len, tp=tp, batch_size=batch_size,
                                      weight_dtype=weight_dtype, kv_dtype=serving_kv_dtype(weight_dtype))
    return banded_seconds(seconds)
