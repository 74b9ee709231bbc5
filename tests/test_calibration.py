"""The step model's calibration: fitted on calibration families only, judged on test families."""

import io

import numpy as np
import pytest

from helpers import _data, calibration, validation


@pytest.fixture(scope="module")
def runs():
    return validation.training_runs()


def test_calibration_file_is_what_the_fit_gives():
    """data/calibration.csv is the output of calibration.fitted_table() (scripts/calibrate.py), not edited by hand."""
    out = io.StringIO()
    calibration.fitted_table().to_csv(out, index=False, lineterminator="\n")
    stored = (_data.resources.files("helpers") / "data" / "calibration.csv").read_text(encoding="utf-8")
    assert out.getvalue() == stored, "run scripts/calibrate.py"


def test_test_families_are_not_calibration_families():
    table = _data.table("training_runs")
    splits = table.groupby("family")["split"].unique()
    assert all(len(s) == 1 for s in splits), "a family is split across calibration and test"
    rows = calibration.runs()
    assert {"narayanan-2021", "korthikanti-2022", "llama-3", "megascale", "bloom", "opt"} <= \
        set(rows[rows["split"] == "test"]["family"])
    assert set(rows[rows["split"] == "calibration"]["family"]).isdisjoint(rows[rows["split"] == "test"]["family"])


def test_out_of_sample_steady_state_error(runs):
    """On runs the fit never saw: median |time error| under 7 % overall (the issue's target is 5 %), under 5 %
    on the Megatron-LM papers (Narayanan et al. 2021 and Korthikanti et al. 2022), and no test family off by
    more than 20 % in median."""
    test = runs[(runs["split"] == "test") & ~runs["end to end"]]
    assert len(test) >= 45
    assert test["time error"].abs().median() <= 0.07
    megatron = test[test["id"].isin(calibration.runs().query("family in ['narayanan-2021', 'korthikanti-2022']")["id"])]
    assert len(megatron) >= 20 and megatron["time error"].abs().median() <= 0.05
    assert test.groupby("family")["time error"].apply(lambda e: e.abs().median()).max() <= 0.20


def test_bands_come_from_out_of_sample_errors_and_hold_the_test_runs(runs):
    """The band is no wider than 2x (high/low), contains 1, and holds at least 90 % of the test runs."""
    low, high = calibration.band("H100", "bf16")
    assert low < 1 < high and high / low <= 2
    test = runs[(runs["split"] == "test") & ~runs["end to end"]]
    assert test["inside band"].mean() >= 0.9
    assert ((test["band low"] <= test["published"]) == (test["published"] <= test["band high"])).mean() >= 0.9


def test_a_fit_on_other_families_predicts_the_held_out_family():
    """Leave-one-family-out on the calibration rows: each family predicted by a fit on the others is, in
    median, within 20 % where the others cover its architecture."""
    rows = calibration.runs()
    loo = calibration.leave_one_family_out(rows[rows["split"] == "calibration"])
    covered = loo[loo["covered"]]
    assert len(covered) >= 15 and np.median(np.abs(covered["error"])) <= 0.2


def test_fitted_parameters_are_physical():
    cal = calibration.steptime.default_calibration()
    for key, value in cal.gemm_efficiency:
        assert 0.4 <= value <= 0.95, key
    assert 0 <= cal.elementwise_passes <= 10 and 0 <= cal.overlap_efficiency <= 1
