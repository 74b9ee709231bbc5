"""Generations of GPUs side by side, and whether to wait for the next one."""

from dataclasses import dataclass
from math import isnan, nan

import pandas as pd

from . import compute, cost, gpus
from .memory import as_model
from .models import Model
from .units import DAY, GB, HOUR, MONTH, TB, TFLOPS, argument, check_positive, check_result

#: The flagship training GPU of each generation in the catalog, oldest first.
FLAGSHIPS = ("V100-SXM2-32GB", "A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB", "B200-HGX-192GB", "GB200-NVL72",
             "B300-HGX-288GB", "GB300-NVL72")


@dataclass(frozen=True)
class Generation:
    """One GPU of a lineup, in SI units: launch year, dense 16-bit (BF16; FP16 on the V100) and FP8
    peaks (FLOP/s; NaN without FP8), memory as its vendor states it (bytes, decimal), memory
    bandwidth (bytes/s) and board power (W)."""

    gpu: str
    year: int
    flops_16bit: float
    flops_fp8: float
    memory_bytes: float
    bandwidth: float
    power: float


def lineup(names: tuple[str, ...] = FLAGSHIPS) -> tuple[Generation, ...]:
    """Each GPU of ``names`` (oldest first by default: :data:`FLAGSHIPS`) as a :class:`Generation`."""
    out = []
    for g in gpus.get_all("names", names):
        half = "bf16" if g.supports("bf16") else "fp16"
        out.append(Generation(gpu=g.name, year=g.launch_year, flops_16bit=g.peak_flops(half),
                              flops_fp8=g.peak_flops("fp8") if g.supports("fp8") else nan,
                              memory_bytes=g.memory_gb_vendor * GB, bandwidth=g.memory_bandwidth, power=g.tdp_watts))
    return tuple(out)


def generations(names: tuple[str, ...] = FLAGSHIPS) -> pd.DataFrame:
    """:func:`lineup` as a table: launch year, dense 16-bit and FP8 TFLOP/s, memory (GB),
    bandwidth (TB/s), power (W) and 16-bit TFLOP/s per kW, with the 16-bit growth over the previous row."""
    table = pd.DataFrame([{"GPU": g.gpu, "year": g.year, "16-bit TFLOP/s": g.flops_16bit / TFLOPS,
                           "FP8 TFLOP/s": None if isnan(g.flops_fp8) else g.flops_fp8 / TFLOPS,
                           "memory (GB)": g.memory_bytes / GB, "bandwidth (TB/s)": g.bandwidth / TB,
                           "power (W)": g.power, "16-bit TFLOP/s per kW": g.flops_16bit / TFLOPS / g.power * 1e3}
                          for g in lineup(names)])
    table["16-bit growth"] = table["16-bit TFLOP/s"] / table["16-bit TFLOP/s"].shift()
    return table


def _rate(gpu: str, price: float | None, name: str) -> float:
    """Your price, else the median on-demand price of the data, in US dollars per GPU-hour."""
    if price is None and cost.price(gpu) is None:
        raise ValueError(f"no dated on-demand price for {gpus.get(gpu).name}; give {name}")
    return cost.hourly_rate(gpu, price_per_gpu_hour=price).expected


@dataclass(frozen=True)
class WaitOrStart:
    """A training run started now on the GPUs available, against one on the next generation after a
    wait: each run's length (seconds) and on-demand cost (US dollars), and the wait (seconds)."""

    run_now: float
    run_later: float
    wait: float
    cost_now: float
    cost_later: float

    @property
    def finish_later(self) -> float:
        """Seconds from today until the run that waited finishes."""
        return self.wait + self.run_later

    @property
    def break_even_wait(self) -> float:
        """The longest wait (seconds) after which waiting still finishes first; negative: never."""
        return self.run_now - self.run_later

    def row(self) -> dict:
        """For display: finish days, costs in US dollars and the break-even wait in months."""
        return {"start now: finish (days)": self.run_now / DAY, "wait: finish (days)": self.finish_later / DAY,
                "start now: cost (USD)": self.cost_now, "wait: cost (USD)": self.cost_later,
                "break-even wait (months)": self.break_even_wait / MONTH}

    def to_frame(self) -> pd.DataFrame:
        """:meth:`row` as a one-row table."""
        return pd.DataFrame([self.row()])


def wait_or_start(model: "Model | str | float", tokens: float, n_gpus: int, *, now: str = "H100-SXM5-80GB",
                  later: str = "B200-HGX-192GB", wait_months: float = 6.0, now_price: float | None = None,
                  later_price: float | None = None) -> WaitOrStart:
    """Start a training run now on ``now`` GPUs, or wait ``wait_months`` for ``later`` ones.

    Both runs use the same GPU count and the planner's layout on each (:func:`compute.training_time`,
    expected values); prices in US dollars per GPU-hour (each defaults to the median on-demand
    price of the data; a GPU without one needs yours); a month is a twelfth of 365.25 days.
    """
    model = as_model(model)
    check_positive("tokens", tokens)
    check_positive("n_gpus", n_gpus, integer=True)
    check_positive("wait_months", wait_months, allow_zero=True)
    for name, price in (("now_price", now_price), ("later_price", later_price)):
        if price is not None:
            check_positive(name, price)
    with argument("now", now):
        rate_now = _rate(now, now_price, "now_price")
        t_now = compute.training_time(model, tokens, now, n_gpus).expected
    with argument("later", later):
        rate_later = _rate(later, later_price, "later_price")
        t_later = compute.training_time(model, tokens, later, n_gpus).expected
    plan = WaitOrStart(run_now=t_now, run_later=t_later, wait=wait_months * MONTH,
                       cost_now=t_now / HOUR * n_gpus * rate_now, cost_later=t_later / HOUR * n_gpus * rate_later)
    check_result(max(plan.run_now, plan.finish_later, plan.cost_now, plan.cost_later), tokens=tokens, n_gpus=n_gpus,
                 wait_months=wait_months, now_price=now_price, later_price=later_price)
    return plan
