"""GPUs side by side: training time and serving speed of one workload on every GPU of the catalog."""

from dataclasses import dataclass

import pandas as pd

from . import compute, formats, gpus, memory, planner, roofline, serving
from .estimate import Estimate
from .models import Model
from .steptime import Layout
from .memory import check_split
from .units import DAY, HOUR, check_dtype, check_list, check_positive, renamed_keywords


@dataclass(frozen=True)
class TrainingEstimate:
    """One GPU's training run in SI units: ``n_gpus`` of ``gpu`` on the planner's best ``layout``, the
    wall-clock seconds (an :class:`Estimate` with the goodput band, :func:`compute.run_time`), memory
    per GPU in bytes, whether it fits, and the layout's scaling efficiency."""

    gpu: str
    n_gpus: int
    time: Estimate
    layout: Layout
    memory_per_gpu: float
    fits: bool
    scaling_efficiency: float

    def row(self) -> dict:
        """The estimate for display: GPU, days (low, expected, high), GPU-hours, layout, memory per
        GPU (decimal GB), fits and scaling efficiency."""
        t = self.time
        return {"GPU": self.gpu, "days low": t.low / DAY, "days": t.expected / DAY, "days high": t.high / DAY,
                "GPU-hours": t.expected * self.n_gpus / HOUR, "layout": self.layout.describe(),
                "memory per GPU (GB)": self.memory_per_gpu / 1e9, "fits": self.fits,
                "scaling efficiency": self.scaling_efficiency}


def training_estimates(model: "Model | str | float", tokens: float, n_gpus: int, *, dtype: str = "bf16",
                       seq_len: int = 2048) -> tuple[TrainingEstimate, ...]:
    """Training on ``tokens`` tokens with ``n_gpus`` of each GPU that has ``dtype``, on the planner's
    best layout (:func:`planner.plan`), GPU by GPU in catalog order. GPUs whose layouts cannot use that
    many at the model's batch are left out."""
    m = memory.as_model(model)
    check_positive("n_gpus", n_gpus, integer=True)
    check_dtype(dtype, formats.names("training"))
    out = []
    for g in map(gpus.get, gpus.names()):
        if not g.supports(dtype):
            continue
        (plan,) = planner.plans(m, g, (n_gpus,), seq_len=seq_len, tokens=tokens, dtype=dtype)
        if plan is not None:
            out.append(TrainingEstimate(gpu=g.name, n_gpus=n_gpus, time=compute.run_time(plan, tokens),
                                        layout=plan.layout, memory_per_gpu=plan.memory_per_gpu, fits=plan.fits,
                                        scaling_efficiency=plan.scaling_efficiency))
    return tuple(out)


def training_table(model: "Model | str | float", tokens: float, n_gpus: int, *, dtype: str = "bf16",
                   seq_len: int = 2048) -> pd.DataFrame:
    """:func:`training_estimates` as a table (:func:`frame`): days (band) and GPU-hours, layout,
    memory per GPU, whether it fits and the scaling efficiency."""
    return frame(training_estimates(model, tokens, n_gpus, dtype=dtype, seq_len=seq_len))


def frame(estimates: "tuple[TrainingEstimate, ...] | dict[str, ServingEstimate]") -> pd.DataFrame:
    """Estimates for display, one row each (:meth:`TrainingEstimate.row`, or a GPU's name and its
    :meth:`ServingEstimate.row`)."""
    if isinstance(estimates, dict) and all(isinstance(e, ServingEstimate) for e in estimates.values()):
        return pd.DataFrame([{"GPU": name, **e.row()} for name, e in estimates.items()])
    if isinstance(estimates, tuple) and all(isinstance(e, TrainingEstimate) for e in estimates):
        return pd.DataFrame([e.row() for e in estimates])
    raise ValueError(f"estimates must be a tuple of TrainingEstimate or a dict of ServingEstimate, got {estimates!r}")


@dataclass(frozen=True)
class ServingEstimate:
    """One GPU (or tensor-parallel group) decoding a fixed batch, in SI units: tokens/s of all
    sequences, seconds per output token and to the first token (each an :class:`Estimate`), the
    roof that binds decoding ("memory" or "compute"), memory per GPU in bytes, and whether it fits."""

    tokens_per_s: Estimate
    time_per_token: Estimate
    time_to_first_token: Estimate
    bound: str
    memory_per_gpu: float
    fits: bool

    def row(self) -> dict:
        """The estimate for display: tokens/s (low, expected, high), ms per output token, first
        token (ms), bound, memory per GPU (decimal GB) and fits."""
        tps = self.tokens_per_s
        return {"tokens/s low": tps.low, "tokens/s": tps.expected, "tokens/s high": tps.high,
                "ms per output token": self.time_per_token.expected * 1000,
                "first token (ms)": self.time_to_first_token.expected * 1000, "bound": self.bound,
                "memory per GPU (GB)": self.memory_per_gpu / 1e9, "fits": self.fits}

    def to_frame(self) -> pd.DataFrame:
        """:meth:`row` as a one-row table."""
        return pd.DataFrame([self.row()])


@renamed_keywords(n_gpus="tp")
def serving_estimate(model: "Model | str | float", gpu: "gpus.GPU | str", *, tp: int = 1, weight_dtype: str = "bf16",
                     batch_size: int = 1, context_len: int = 2048, split_kv: bool = True) -> ServingEstimate:
    """Tokens/s of all sequences, time per output token, time to first token (a ``context_len``
    prompt), the roof that binds decoding, and whether the model fits; ``split_kv`` as in
    :func:`compute.decode_throughput`."""
    g, m = gpus.get(gpu), memory.as_model(model)
    kv = memory.serving_kv_dtype(weight_dtype)
    tps = compute.decode_throughput(m, g, tp=tp, batch_size=batch_size, context_len=context_len,
                                    weight_dtype=weight_dtype, kv_dtype=kv, split_kv=split_kv)
    return _estimate(m, g, tp, weight_dtype, batch_size, context_len, tps,
                     compute.prefill_time(m, g, context_len, tp=tp, weight_dtype=weight_dtype))


def _estimate(m: Model, g: "gpus.GPU", tp: int, weight_dtype: str, batch_size: int, context_len: int,
              tokens_per_s: Estimate, time_to_first_token: Estimate) -> ServingEstimate:
    """A :class:`ServingEstimate` from its decoding speed and first-token time: the roof that binds
    decoding and the memory per GPU, with the format's usual KV cache."""
    kv = memory.serving_kv_dtype(weight_dtype)
    intensity = roofline.decode_intensity(m, batch_size, context_len, weight_dtype, kv)
    need = memory.inference(m, weight_dtype=weight_dtype, kv_dtype=kv, batch_size=batch_size,
                            context_len=context_len, tp=tp, gpu=g)
    return ServingEstimate(tokens_per_s=tokens_per_s, time_per_token=tokens_per_s.map(lambda v: batch_size / v),
                           time_to_first_token=time_to_first_token,
                           bound=roofline.bound(g, compute.compute_dtype(g, weight_dtype), intensity),
                           memory_per_gpu=need.total, fits=memory.fits(need, g))


def serving_estimates_for(model: "Model | str | float", gpu: "gpus.GPU | str", *, tp: int = 1,
                          weight_dtypes: tuple[str, ...] = ("bf16",), batch_size: int = 1,
                          context_len: int = 2048) -> tuple[ServingEstimate, ...]:
    """:func:`serving_estimate` for each of ``weight_dtypes`` on one GPU, their decoding steps and
    prefills timed in one array (:func:`serving.batch_seconds`): the same estimates, at a fraction
    of the cost (the selector's sweep)."""
    g, m = gpus.get(gpu), memory.as_model(model)
    check_positive("batch_size", batch_size, integer=True)
    check_positive("context_len", context_len, integer=True)
    check_split(m, tp, replicate_kv=True, name="tp")
    dtypes = tuple(check_dtype(d, formats.names("weights"), "weight_dtypes") for d in check_list("weight_dtypes", weight_dtypes))
    if not dtypes:
        return ()
    kvs = tuple(memory.serving_kv_dtype(d) for d in dtypes)
    decode, prefill = serving.batch_seconds(m, g, tp, dtypes, kvs, context_len, context_len, [[batch_size, 1]] * len(dtypes))
    return tuple(_estimate(m, g, tp, dtype, batch_size, context_len,
                           compute.banded_seconds({k: float(v[i, 0]) for k, v in decode.items()}).map(lambda t: batch_size / t),
                           compute.banded_seconds({k: float(v[i, 1]) for k, v in prefill.items()}))
                 for i, dtype in enumerate(dtypes))


def serving_estimates(model: "Model | str | float", *, tp: int = 1, weight_dtype: str = "bf16", batch_size: int = 1,
                      context_len: int = 2048, split_kv: bool = True) -> dict[str, ServingEstimate]:
    """:func:`serving_estimate` for every GPU of the catalog, by name, in catalog order."""
    return {name: serving_estimate(model, name, tp=tp, weight_dtype=weight_dtype, batch_size=batch_size,
                                   context_len=context_len, split_kv=split_kv) for name in gpus.names()}


@renamed_keywords(n_gpus="tp")
def serving_table(model: "Model | str | float", *, tp: int = 1, weight_dtype: str = "bf16", batch_size: int = 1,
                  context_len: int = 2048, split_kv: bool = True) -> pd.DataFrame:
    """:func:`serving_estimates` as a table (:func:`frame`)."""
    return frame(serving_estimates(model, tp=tp, weight_dtype=weight_dtype, batch_size=batch_size,
                                   context_len=context_len, split_kv=split_kv))


def band(row: pd.Series, prefix: str) -> Estimate:
    """The (low, expected, high) columns named ``<prefix> low``, ``<prefix>``, ``<prefix> high``."""
    if not isinstance(row, pd.Series):
        raise ValueError(f"row must be a row of a table (a pandas Series), got {row!r}")
    missing = [c for c in (f"{prefix} low", prefix, f"{prefix} high") if c not in row.index]
    if missing:
        raise ValueError(f"prefix={prefix!r}: the row has no column {missing[0]!r}; it has {', '.join(map(str, row.index))}")
    return Estimate(row[f"{prefix} low"], row[prefix], row[f"{prefix} high"])
