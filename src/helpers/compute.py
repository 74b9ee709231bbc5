"""FLOPs, training time and inference speed, each predicted with a band.

FLOP counts: 6 FLOP per parameter per token for a forward and backward pass (Kaplan et al.
2020, arXiv:2001.08361, Sec. 2.1), plus attention scores and their weighting, 12*L*s*d per token
(the s/(6h) term of Narayanan et al. 2021, arXiv:2104.04473, Eq. 3); full recompute adds one
more forward (8 instead of 6). Times divide FLOPs by peak FLOP/s times an efficiency that,
unless given, comes as a band calibrated on published runs (``data/efficiency.csv``).
"""

from functools import cache

from . import _data, comm, gpus
from .estimate import Estimate
from .gpus import GPU
from .memory import RECOMPUTE, TRAIN_DTYPES, as_model, check_split, inference
from .models import Model
from .units import check_bool, check_choice, check_dtype, check_positive, check_result

RECOMPUTE_FACTOR = {"none": 1.0, "selective": 1.0, "full": 4 / 3}
#: Compute dtypes of training: those of :data:`memory.TRAIN_DTYPES`, plus FP8 (Transformer Engine).
TRAINING_DTYPES = TRAIN_DTYPES + ("fp8",)

#: Compute-optimal training data: about 20 tokens per parameter (Hoffmann et al. 2022,
#: arXiv:2203.15556, Table 3: 70B parameters for 1.4T tokens).
CHINCHILLA_TOKENS_PER_PARAM = 20


def flops_per_token(model: "Model | str | float", *, seq_len: int | None = None, training: bool = True) -> float:
    """Model FLOPs per token: 6N (training) or 2N (inference forward), N the active parameters;
    with ``seq_len``, plus attention, 12*L*s*d (training) or 4*L*s*d (forward)."""
    m = as_model(model)
    check_bool("training", training)
    if seq_len is not None:
        check_positive("seq_len", seq_len, integer=True)
    per_param = 6 if training else 2
    attention = 0.0 if seq_len is None else per_param * 2 * m.n_layers * seq_len * m.d_model
    return per_param * m.n_active_params + attention


def training_flops(model_or_n_params: "Model | str | float", tokens: float, *, recompute: str = "none",
                   seq_len: int | None = None) -> float:
    """FLOP to train on ``tokens`` tokens: 6ND (8ND with full recompute), plus attention when
    ``seq_len`` is given. GPT-3 175B on 300B tokens: 3.14e23 (Brown et al. 2020, Table D.1)."""
    check_positive("tokens", tokens)
    check_choice("recompute", recompute, RECOMPUTE)
    flops = flops_per_token(model_or_n_params, seq_len=seq_len) * tokens * RECOMPUTE_FACTOR[recompute]
    return check_result(flops, tokens=tokens)


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
                  dtype: str = "bf16", mfu: "float | Estimate | None" = None, goodput: "float | Estimate | None" = None,
                  seq_len: int | None = None, recompute: str = "none") -> Estimate:
    """Wall-clock seconds to train on ``tokens`` tokens with ``n_gpus`` GPUs.

    time = FLOPs / (n_gpus * dense peak(dtype) * mfu * goodput). ``mfu=None`` uses the band
    calibrated on published runs for the GPU's architecture and dtype; ``goodput=None`` the share of
    time long runs lose to failures and restarts; pass numbers (e.g. a reported TFLOP/s divided by
    the peak, and 1.0 for a steady-state benchmark) for one value. With ``recompute="full"`` the
    FLOPs include the extra forward, as in Megatron-LM's throughput figures.
    """
    g = gpus.get(gpu)
    check_positive("n_gpus", n_gpus, integer=True)
    check_dtype(dtype, TRAINING_DTYPES)
    work = training_flops(model, tokens, recompute=recompute, seq_len=seq_len)
    rate = n_gpus * g.peak_flops(dtype)
    u = _band(mfu, efficiency("mfu", g.architecture, dtype), "mfu")
    p = _band(goodput, efficiency("goodput", g.architecture, dtype), "goodput")
    def seconds(e: float) -> float:  # e * rate underflows to 0 only for absurdly small fractions
        return check_result(work / (rate * e) if rate * e else float("inf"), tokens=tokens, mfu=mfu, goodput=goodput)

    return Estimate(u.low * p.low, u.expected * p.expected, u.high * p.high).map(seconds)


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
