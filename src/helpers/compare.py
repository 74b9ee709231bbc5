"""GPUs side by side: training time and serving speed of one workload on every GPU of the catalog."""

import pandas as pd

from . import compute, gpus, memory, roofline
from .estimate import Estimate
from .models import Model
from .units import DAY, HOUR, check_dtype, check_positive


def _train_memory_dtype(dtype: str) -> str:
    """FP8 training keeps 16-bit weights and fp32 master copies (Transformer Engine): size it as bf16."""
    return "bf16" if dtype == "fp8" else dtype


def training_table(model: "Model | str | float", tokens: float, n_gpus: int, *, dtype: str = "bf16",
                   seq_len: int = 2048) -> pd.DataFrame:
    """Days (band) and GPU-hours to train on ``tokens`` tokens with ``n_gpus`` of each GPU that has
    ``dtype``, and whether the model fits with ZeRO-3 over them and full recomputation."""
    m = memory.as_model(model)
    check_positive("n_gpus", n_gpus, integer=True)
    check_dtype(dtype, compute.TRAINING_DTYPES)
    need = memory.training(m, dtype=_train_memory_dtype(dtype), zero_stage=3, dp=n_gpus, recompute="full",
                           seq_len=seq_len)
    rows = []
    for g in map(gpus.get, gpus.names()):
        if not g.supports(dtype):
            continue
        t = compute.training_time(m, tokens, g, n_gpus, dtype=dtype)
        rows.append({"GPU": g.name, "days low": t.low / DAY, "days": t.expected / DAY, "days high": t.high / DAY,
                     "GPU-hours": t.expected * n_gpus / HOUR, "memory per GPU (GB)": need.total / 1e9,
                     "fits": memory.fits(need, g)})
    return pd.DataFrame(rows)


def serving_estimate(model: "Model | str | float", gpu: "gpus.GPU | str", *, n_gpus: int = 1, weight_dtype: str = "bf16",
                     batch_size: int = 1, context_len: int = 2048) -> dict:
    """Tokens/s of all sequences, time per output token, time to first token (a ``context_len``
    prompt), the roof that binds decoding, and whether the model fits."""
    g, m = gpus.get(gpu), memory.as_model(model)
    kv = memory.serving_kv_dtype(weight_dtype)
    tps = compute.decode_throughput(m, g, n_gpus=n_gpus, batch_size=batch_size, context_len=context_len,
                                    weight_dtype=weight_dtype, kv_dtype=kv)
    ttft = compute.prefill_time(m, g, context_len, n_gpus=n_gpus, dtype=weight_dtype)
    intensity = roofline.decode_intensity(m, batch_size, context_len, weight_dtype, kv)
    need = memory.inference(m, weight_dtype=weight_dtype, kv_dtype=kv, batch_size=batch_size,
                            context_len=context_len, tp=n_gpus)
    return {"tokens/s": tps, "time per output token (s)": tps.map(lambda v: batch_size / v),
            "time to first token (s)": ttft,
            "bound": roofline.bound(g, compute.compute_dtype(g, weight_dtype), intensity),
            "memory per GPU (GB)": need.total / 1e9, "fits": memory.fits(need, g)}


def serving_table(model: "Model | str | float", *, n_gpus: int = 1, weight_dtype: str = "bf16", batch_size: int = 1,
                  context_len: int = 2048) -> pd.DataFrame:
    """:func:`serving_estimate` for every GPU of the catalog."""
    rows = []
    for name in gpus.names():
        e = serving_estimate(model, name, n_gpus=n_gpus, weight_dtype=weight_dtype, batch_size=batch_size,
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
