import pytest

from helpers import compute, cost, trends


def test_generations_table():
    table = trends.generations()
    assert list(table["GPU"]) == list(trends.FLAGSHIPS)
    assert table["year"].is_monotonic_increasing
    h = table.set_index("GPU")
    assert h.loc["H200-SXM-141GB", "16-bit growth"] == pytest.approx(1.0)  # same tensor cores as the H100
    assert h.loc["H100-SXM5-80GB", "16-bit growth"] == pytest.approx(989.5 / 312)


def test_a_lineup_is_in_si_units_and_its_table_converts_them():
    """The H100 SXM by its data sheet: 989.5 TFLOP/s dense BF16, 1,979 FP8, 80 GB, 3.35 TB/s, 700 W; the
    V100 and the A100 have no FP8 (NaN, an empty cell in the table)."""
    v100, _, h100, *_ = trends.lineup()
    assert (h100.flops_16bit, h100.flops_fp8, h100.memory_bytes, h100.bandwidth, h100.power) == pytest.approx(
        (989.5e12, 1979e12, 80e9, 3.35e12, 700))
    assert v100.flops_fp8 != v100.flops_fp8
    row = trends.generations().set_index("GPU").loc[h100.gpu]
    assert (row["16-bit TFLOP/s"], row["memory (GB)"], row["bandwidth (TB/s)"]) == pytest.approx((989.5, 80, 3.35))
    assert trends.generations()["FP8 TFLOP/s"].isna().tolist()[:3] == [True, True, False]


def test_wait_or_start():
    """Seconds and dollars by hand: the run now is the planner's on H100, its cost 512 GPU-hours per hour at
    the median price; a month is a twelfth of 365.25 days; past the break-even wait, waiting finishes later."""
    plan = trends.wait_or_start("llama-2-70b", 2e12, 512, wait_months=0, later_price=6.0)
    assert plan.finish_later < plan.run_now and plan.wait == 0
    t_now = compute.training_time("llama-2-70b", 2e12, "H100", 512).expected
    assert plan.run_now == pytest.approx(t_now)
    assert plan.cost_now == pytest.approx(t_now / 3600 * 512 * cost.hourly_rate("H100").expected)
    assert plan.cost_later == pytest.approx(plan.run_later / 3600 * 512 * 6.0)
    months = plan.break_even_wait / (365.25 / 12 * 86400)
    assert plan.row()["break-even wait (months)"] == pytest.approx(months)
    late = trends.wait_or_start("llama-2-70b", 2e12, 512, wait_months=months + 1, later_price=6.0)
    assert late.finish_later > late.run_now
    assert late.to_frame().iloc[0]["wait: finish (days)"] == pytest.approx(late.finish_later / 86400)
    with pytest.raises(ValueError, match="wait_months"):
        trends.wait_or_start("llama-2-70b", 2e12, 512, wait_months=-1, later_price=6.0)


def test_the_generations_chart_names_every_point_once():
    import matplotlib.pyplot as plt

    from helpers import plots
    lineup = trends.lineup()
    fig, (compute, memory) = plt.subplots(1, 2)
    plots.generations(compute, memory, lineup)
    labels = [t.get_text() for ax in (compute, memory) for t in ax.texts]
    named = [n for label in labels for n in label.split("/")]
    expected = sum(getattr(g, a) == getattr(g, a) for g in lineup for _, a, *_ in plots.GENERATION_SERIES)
    assert len(named) == expected  # every point, shared labels counted per part
    assert "B300/GB300" in labels  # the same 288 GB in the same year: one label, not two on top of each other
    plt.close(fig)
