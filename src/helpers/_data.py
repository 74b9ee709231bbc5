"""Read the package's own CSV files, once each."""

from functools import cache
from importlib import resources

import pandas as pd


@cache
def table(name: str) -> pd.DataFrame:
    """The data file ``data/<name>.csv`` as a DataFrame (cached; callers must not mutate it)."""
    with resources.files("helpers").joinpath(f"data/{name}.csv").open(encoding="utf-8") as f:
        return pd.read_csv(f, dtype={"section": str})  # article sections ("2.1") are labels, not numbers


@cache
def calibrated() -> dict[str, float]:
    """``data/calibration.csv`` (the fitted parameters and bands, written by ``scripts/calibrate.py``)
    as parameter -> value (cached; callers must not mutate it)."""
    values = table("calibration")
    return dict(zip(values["parameter"], values["value"].astype(float)))
