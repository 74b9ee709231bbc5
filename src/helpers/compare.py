"""GPUs side by side: training time and serving speed of one workload on every GPU of the catalog."""

import pandas as pd

from . import compute, formats, gpus, memory, planner, roofline
from .estimate import Estimate
from .models import Model
from .units import DAY, HOUR, check_dtype, check_positive, renamed_keywords


def training_table(model: "Model | str | float", tokens: float, n_gpus: int, *, dtype: str = "bf16",
                   seq_len: int = 2048) -> pd.DataFrame:
    """Days (band) and GPU-hours to train on ``tokens`` tokens with ``n_gpus`` of each GPU that has
    ``dtype``, on the planner's best layout (:func:`planner.plan`), with its memory per GPU, whether it
    fits and its scaling efficiency. GPUs whose layouts cannot use that many at the model's batch are left out."""
    m = memory.as_model(model)
    check_positive("n_gpus", n_gpus, integer=True)
    check_dtype(dtype, formats.names("training"))
    rows = []
    for g in map(gpus.get, gpus.names()):
        if not g.supports(dtype):
            continue
        (plan,) = planner.plans(m, g, (n_gpus,), seq_len=seq_len, tokens=tokens, dtype=dtype)
        if plan is None:
            continue
        t = compute.run_time(plan, tokens)
        rows.append({"GPU": g.name, "days low": t.low / DAY, "days": t.expected / DAY, "days high": t.high / DAY,
                     "GPU-hours": t.expected * n_gpus / HOUR, "layout": plan.layout.describe(),
                     "memory per GPU (GB)": plan.memory_per_gpu / 1e9, "fits": plan.fits,
                     "scaling efficiency": plan.scaling_efficiency})
    return pd.DataFrame(rows)


@renamed_keywords(n_gpus="tp")
def serving_estimate(model: "Model | str | float", gpu: "gpus.GPU | str", *, tp: int = 1, weight_dtype: str = "bf16",
                     batch_size: int = 1, context_len: int = 2048) -> dict:
    """Tokens/s of all sequences, time per output token, time to first token (a ``context_len``
    prompt), the roof that binds decoding, and whether the model fits."""
    g, m = gpus.get(gpu), memory.as_model(model)
    kv = memory.serving_kv_dtype(weight_dtype)
    tps = compute.decode_throughput(m, g, tp=tp, batch_size=batch_size, context_len=context_len,
                                    weight_dtype=weight_dtype, kv_dtype=kv)
    ttft = compute.prefill_time(m, g, context_len, tp=tp, weight_dtype=weight_dtype)
    intensity = roofline.decode_intensity(m, batch_size, context_len, weight_dtype, kv)
    need = memory.inference(m, weight_dtype=weight_dtype, kv_dtype=kv, batch_size=batch_size,
                            context_len=context_len, tp=tp)
    return {"tokens/s": tps, "time per output token (s)": tps.map(lambda v: batch_size / v),
            "time to first token (s)": ttft,
            "bound": roofline.bound(g, compute.compute_dtype(g, weight_dtype), intensity),
            "memory per GPU (GB)": need.total / 1e9, "fits": memory.fits(need, g)}


@renamed_keywords(n_gpus="tp")
def serving_table(model: "Model | str | float", *, tp: int = 1, weight_dtype: str = "bf16", batch_size: int = 1,
                  context_len: int = 2048) -> pd.DataFrame:
    """:func:`serving_estimate` for every GPU of the catalog."""
    rows = []
    for name in gpus.names():
        e = serving_estimate(model, name, tp=tp, weight_dtype=weight_dtype, batch_size=batch_size,
                             context_len=context_len)
        tps, tpot, ttft = e["tokens/s"], e["time per output token (s)"], e["time to first token (s)"]
        rows.append({"GPU": name, "tokens/s low": tps.low, "tokens/s": tps.expected, "tokens/s high": tps.high,
                     "ms per output token": tpot.expected * 1000, "first token (ms)": ttft.expected * 1000,
                     "bound": e["bound"], "memory per GPU (GB)": e["memory per GPU (GB)"], "fits": e["fits"]})
    return pd.DataFrame(rows)


def band(row: pd.Series, prefix: str) -> Estimate:
    """The (low, expected, high) columns named ``<prefix> low``, ``<prefix>``, ``<prefix> high``."""
    if not isinstance(row, pd.Series):
        raise ValueError(f"row must be a row of a table (a pandas Series), got {row!r}")
    missing = [c for c in (f"{prefix} low", prefix, f"{prefix} high") if c not in row.index]
    if missing:
        raise ValueError(f"prefix={prefix!r}: the row has no column {missing[0]!r}; it has {', '.join(map(str, row.index))}")
    return Estimate(row[f"{prefix} low"], row[prefix], row[f"{prefix} high"])
