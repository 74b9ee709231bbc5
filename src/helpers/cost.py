"""Prices of GPUs: purchase and rental, each dated and sourced (``data/prices.csv``).

Prices move fast and differ by provider; every figure carries its date, provider and a
confidence (high: vendor launch price; medium: a provider's list price; low: third-party report).
"""

import pandas as pd

from . import _data, gpus

PRICE_KINDS = ("purchase", "cloud_hour", "reserved_hour")


def prices() -> pd.DataFrame:
    """Every price row: gpu, kind (purchase, cloud_hour, reserved_hour), usd, date, provider, source, confidence."""
    return _data.table("prices").copy()


def price(gpu: "gpus.GPU | str", kind: str = "cloud_hour") -> float | None:
    """The most recent ``kind`` price of ``gpu`` in US dollars (per GPU-hour for rentals), or None."""
    if kind not in PRICE_KINDS:
        raise ValueError(f"kind={kind!r} is not supported; choose one of {', '.join(PRICE_KINDS)}")
    name = gpus.get(gpu).name
    table = _data.table("prices")
    rows = table[(table["gpu"] == name) & (table["kind"] == kind)].sort_values("date")
    return None if rows.empty else float(rows["usd"].iloc[-1])
