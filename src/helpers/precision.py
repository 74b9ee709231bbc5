"""Number formats, and what dynamic loss scaling does.

Loss scaling follows PyTorch's ``torch.amp.GradScaler`` (torch/amp/grad_scaler.py docstring):
the loss is multiplied by the scale; if any gradient is inf/NaN the optimizer step is skipped and
the scale multiplied by ``backoff_factor``; after ``growth_interval`` consecutive clean steps it
is multiplied by ``growth_factor``. Defaults: init 2**16, growth 2.0, backoff 0.5, interval 2000.
"""

from dataclasses import dataclass

import pandas as pd

from . import _data
from .units import check_list, check_positive, check_result

#: Longest trace replayed (a plot's worth; each step is a Python loop iteration).
MAX_STEPS = 1_000_000


def formats() -> pd.DataFrame:
    """Bits, range and typical use of the number formats, with sources."""
    return _data.table("number_formats").copy()


@dataclass(frozen=True)
class ScalerTrace:
    """Scale in force at each step, and the steps skipped because of inf/NaN gradients."""

    scales: tuple[float, ...]
    skipped: tuple[int, ...]


def grad_scaler_trace(n_steps: int, overflow_steps: set[int] | frozenset[int], *, init_scale: float = 2.0**16,
                      growth_factor: float = 2.0, backoff_factor: float = 0.5, growth_interval: int = 2000) -> ScalerTrace:
    """Replay GradScaler's rule over ``n_steps`` steps where the steps in ``overflow_steps`` produce
    inf/NaN gradients at the scale in force (as large scales do)."""
    check_positive("n_steps", n_steps, integer=True)
    if n_steps > MAX_STEPS:
        raise ValueError(f"n_steps must be at most {MAX_STEPS:,}, got {n_steps}")
    overflow = check_list("overflow_steps", overflow_steps)
    for step in overflow:
        check_positive("overflow_steps", step, integer=True, allow_zero=True)
    overflow = set(overflow)
    check_positive("growth_interval", growth_interval, integer=True)
    for name, value in (("init_scale", init_scale), ("growth_factor", growth_factor), ("backoff_factor", backoff_factor)):
        check_positive(name, value)
    if not (growth_factor > 1 and 0 < backoff_factor < 1):
        raise ValueError(f"need growth_factor > 1 and 0 < backoff_factor < 1, got {growth_factor}, {backoff_factor}")
    scale, clean, scales, skipped = float(init_scale), 0, [], []
    for step in range(n_steps):
        scales.append(scale)
        if step in overflow:
            skipped.append(step)
            scale, clean = scale * backoff_factor, 0
        else:
            clean += 1
            if clean == growth_interval:
                scale, clean = scale * growth_factor, 0
    check_result(max(scales), init_scale=init_scale, growth_factor=growth_factor, growth_interval=growth_interval,
                 n_steps=n_steps)
    return ScalerTrace(tuple(scales), tuple(skipped))
