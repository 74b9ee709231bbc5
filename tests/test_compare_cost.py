import pandas as pd
import pytest

from helpers import _data, compare, compute, cost, gpus, serving
from helpers.estimate import Estimate


def test_prices_are_dated_sourced_and_known_gpus():
    table = cost.prices()
    assert set(table["gpu"]) <= set(gpus.names())
    assert table["date"].str.match(r"^\d{4}(-\d{2})?$").all()
    assert (table["source"].str.len() > 15).all()
    assert set(table["kind"]) <= {*cost.PRICE_KINDS, cost.NOT_RENTED}
    assert set(table["confidence"]) <= {"high", "medium", "low"}
    priced = table["kind"] != cost.NOT_RENTED
    assert (table.loc[priced, "usd"] > 0).all() and table.loc[~priced, "usd"].isna().all()


def test_every_gpu_has_a_rental_price_or_says_it_is_not_rented():
    table = cost.prices()
    said = set(table.loc[table["kind"].isin(["cloud_hour", cost.NOT_RENTED]), "gpu"])
    assert set(gpus.names()) == said


def test_price_lookup():
    assert cost.price("4090", "purchase") == 1599
    assert cost.price("H200 NVL") is None
    h100 = cost.prices().query("gpu == 'H100-SXM5-80GB' and kind == 'cloud_hour'")
    assert h100["provider"].nunique() >= 3
    assert cost.price("H100") == pytest.approx(h100["usd"].median())
    with pytest.raises(ValueError, match="kind='monthly'"):
        cost.price("H100", "monthly")


def test_training_table_covers_gpus_with_the_dtype_and_flags_fit():
    table = compare.training_table("llama-2-7b", 1e12, 8, dtype="fp8")
    assert set(table["GPU"]) == {n for n in gpus.names() if gpus.get(n).supports("fp8")}
    assert (table["days low"] <= table["days"]).all() and (table["days"] <= table["days high"]).all()
    h100 = table.set_index("GPU").loc["H100-SXM5-80GB"]
    assert h100["days"] == pytest.approx(compute.training_time("llama-2-7b", 1e12, "H100", 8, dtype="fp8").expected / 86400)
    assert not compare.training_table("llama-3.1-405b", 1e12, 8).set_index("GPU").loc["H100-SXM5-80GB", "fits"]


def test_training_estimates_are_typed_in_seconds_and_bytes_and_the_table_shows_them_in_days_and_gb():
    from helpers import planner
    estimates = compare.training_estimates("llama-2-70b", 2e12, 512)
    h100 = next(e for e in estimates if e.gpu == "H100-SXM5-80GB")
    plan = planner.plan("llama-2-70b", "H100", 512, tokens=2e12)
    assert h100.time == compute.training_time("llama-2-70b", 2e12, "H100", 512) and h100.layout == plan.layout
    assert h100.memory_per_gpu == plan.memory_per_gpu and h100.n_gpus == 512  # bytes, not GB
    row = compare.training_table("llama-2-70b", 2e12, 512).set_index("GPU").loc["H100-SXM5-80GB"]
    assert row["days"] == pytest.approx(h100.time.expected / 86400)
    assert row["GPU-hours"] == pytest.approx(h100.time.expected * 512 / 3600)
    assert row["memory per GPU (GB)"] == pytest.approx(h100.memory_per_gpu / 1e9)
    assert row["layout"] == plan.layout.describe() and [e.gpu for e in estimates] == list(
        compare.training_table("llama-2-70b", 2e12, 512)["GPU"])
    served = compare.serving_estimates("llama-2-7b", batch_size=4)
    assert list(served) == gpus.names() and served["H100-SXM5-80GB"] == compare.serving_estimate(
        "llama-2-7b", "H100", batch_size=4)


def test_serving_estimate_and_table():
    e = compare.serving_estimate("llama-2-7b", "A100 80GB", batch_size=4, context_len=1024)
    assert e.time_per_token.expected == pytest.approx(4 / e.tokens_per_s.expected)
    assert e.fits and e.bound == "memory"
    table = compare.serving_table("llama-2-70b", weight_dtype="int4")
    fits = dict(zip(table["GPU"], table["fits"]))
    assert fits["A100-SXM4-80GB"] and not fits["RTX-4090-24GB"]


@pytest.mark.parametrize("model,tp,batch,context", [("llama-2-7b", 1, 1, 4096), ("llama-3-70b", 4, 32, 2048),
                                                     ("mixtral-8x7b", 2, 8, 8192)])
def test_the_sweep_fast_path_gives_every_format_the_estimate_of_asking_alone(model, tp, batch, context):
    """compare.serving_estimates_for (one array of steps for all formats, the selector's sweep) gives
    each format exactly serving_estimate's answer, on every GPU of the catalog that can split the model."""
    for g in gpus.names():
        dtypes = serving.serving_formats(g)
        together = compare.serving_estimates_for(model, g, tp=tp, weight_dtypes=dtypes, batch_size=batch, context_len=context)
        assert together == tuple(compare.serving_estimate(model, g, tp=tp, weight_dtype=d, batch_size=batch,
                                                          context_len=context) for d in dtypes)


def test_assumptions_are_sourced_bands():
    table = _data.table("cost_assumptions")
    assert (table["low"] <= table["expected"]).all() and (table["expected"] <= table["high"]).all()
    assert (table["source"].str.len() > 20).all()
    assert cost.assumption("pue").expected == pytest.approx(1.58)
    with pytest.raises(ValueError, match="name='tax' is not a known assumption"):
        cost.assumption("tax")


def test_spot_overhead_follows_young():
    """One instance, 10 interruptions a month, 5-minute checkpoints, no restart cost: Young's interval
    tau = sqrt(2 * 5 * M) and an overhead of 5/tau + tau/(2M)."""
    from math import sqrt
    m = cost.HOURS_PER_MONTH * 60 / 10
    tau = sqrt(2 * 5 * m)
    o = cost.spot_overhead(8, interruptions_per_month=10, checkpoint_minutes=5, restart_minutes=0)
    assert o.expected == pytest.approx(5 / tau + tau / (2 * m))
    assert cost.spot_overhead(1024).expected > cost.spot_overhead(8).expected


def test_training_cost_by_pricing():
    runs = {p: cost.training_cost("llama-2-7b", 1e12, "H100", 64, pricing=p) for p in cost.PRICING}
    hours = compute.training_time("llama-2-7b", 1e12, "H100", 64)
    assert runs["on_demand"].expected == pytest.approx(hours.expected * 64 / 3600 * cost.price("H100"))
    assert runs["reserved_3y"].expected < runs["reserved_1y"].expected < runs["on_demand"].expected
    assert runs["spot"].expected < runs["on_demand"].expected
    mine = cost.training_cost("llama-2-7b", 1e12, "H100", 64, price_per_gpu_hour=2.0)
    assert mine.expected == pytest.approx(hours.expected * 64 / 3600 * 2.0)
    with pytest.raises(ValueError, match="no dated on-demand price for H200-NVL-141GB"):
        cost.training_cost("llama-2-7b", 1e12, "H200 NVL", 8)
    with pytest.raises(ValueError, match="pricing='lease'"):
        cost.training_cost("llama-2-7b", 1e12, "H100", 8, pricing="lease")


def test_ownership_and_break_even():
    own = cost.ownership("H100", 8, years=3, utilization=1.0, gpu_price_usd=25000)
    assert own.capex == pytest.approx(8 * 25000 / 0.8)
    kwh = 8 * 0.7 * 1.8 * 3 * cost.HOURS_PER_YEAR
    assert own.energy.expected == pytest.approx(kwh * 0.0835 * 1.58)
    table = cost.rent_vs_buy("H100", 8, price_per_gpu_hour=100)
    assert cost.break_even_months(table) <= 1
    assert cost.break_even_months(cost.rent_vs_buy("H100", 8, price_per_gpu_hour=0.01)) is None
    with pytest.raises(ValueError, match="utilization"):
        cost.ownership("H100", 8, utilization=0)


def test_ownership_counts_network_storage_facility_and_staff():
    """Hand calculations at the sourced expected values: 10.08 kW of server power for eight 700 W
    H100s, colocated at $184.06 per kW and month; $1,139 of staff per GPU and year; storage 1.25 %
    and, beyond one 8-GPU server, the network 13 % of the server price."""
    one, eight = (cost.ownership("H100", n, years=3, utilization=0.5, gpu_price_usd=25000) for n in (8, 64))
    kw = 8 * 0.7 * 1.8
    assert one.facility.expected == pytest.approx(kw * 36 * 184.06)
    assert one.staff.expected == pytest.approx(8 * 3 * 1139)
    assert one.storage.expected == pytest.approx(0.0125 * one.capex)
    assert one.network == Estimate.exact(0.0)  # eight GPUs fit one HGX server: no scale-out fabric
    assert eight.network.expected == pytest.approx(0.13 * eight.capex)
    assert eight.facility.expected == pytest.approx(8 * one.facility.expected)
    assert one.total.expected == pytest.approx(sum(p.expected for p in one.parts().values()))
    assert one.per_gpu_hour.expected == pytest.approx(one.total.expected / one.gpu_hours_used)
    assert one.total.low < one.total.expected < one.total.high
    # The facility is billed per provisioned kW: halving the use doubles its cost per GPU-hour.
    busy = cost.ownership("H100", 8, years=3, utilization=1.0, gpu_price_usd=25000)
    assert one.facility.expected / one.gpu_hours_used == pytest.approx(2 * busy.facility.expected / busy.gpu_hours_used)
    # What a reader already has costs nothing: the bare servers and energy remain.
    bare = cost.ownership("H100", 64, years=3, utilization=0.5, gpu_price_usd=25000, **cost.SERVERS_AND_ENERGY)
    assert bare.total.expected == pytest.approx(bare.capex + bare.energy.expected)
    hidden = cost.break_even_months(cost.rent_vs_buy("H100", 64, years=5))
    assert hidden > cost.break_even_months(cost.rent_vs_buy("H100", 64, years=5, **cost.SERVERS_AND_ENERGY))
    with pytest.raises(ValueError, match=r"colocation_usd_per_kw_month must be a number in \[0, 10000\], got -5"):
        cost.ownership("H100", 8, colocation_usd_per_kw_month=-5)
    with pytest.raises(ValueError, match="network_share"):
        cost.ownership("H100", 64, network_share=float("nan"))


def test_used_prices_are_dated_and_below_or_near_new():
    used = cost.prices().query("kind == 'used_purchase'")
    assert len(used) >= 5 and used["date"].notna().all() and used["source"].str.len().gt(40).all()
    for name in used["gpu"]:
        new = cost.price(name, "purchase")
        assert new is None or cost.price(name, "used_purchase") <= 1.05 * new, name


def test_serving_cost_per_million_tokens():
    band = cost.serving_cost_per_million_tokens("llama-3-8b", "H100")
    tps = compute.decode_throughput("llama-3-8b", "H100", context_len=2048)
    assert band.expected == pytest.approx(cost.price("H100") / (tps.expected * 3600) * 1e6)
    assert cost.serving_cost_per_million_tokens("llama-3-8b", "H100", batch_size=32).expected < band.expected / 10


@pytest.mark.parametrize("call, message", [
    (lambda: cost.hourly_rate("H100", "reserved_1y", discount=1.5), r"discount must be a number in \[0, 1\), got 1.5"),
    (lambda: cost.hourly_rate("H100", discount=0.3), "discount applies to reserved_1y, reserved_3y and spot"),
    (lambda: cost.ownership("H100", 8, gpu_price_usd=-25000), "gpu_price_usd must be a positive number, got -25000"),
    (lambda: cost.ownership("H100", 8, utilization="0.5"), r"utilization must be a number in \(0, 1\], got '0.5'"),
    (lambda: cost.ownership("H100", 8, pue=0.9), r"pue must be a number in \[1, 10\], got 0.9"),
    (lambda: cost.rent_vs_buy("H100", 8, gpu_price_usd=float("nan")), "gpu_price_usd must be a positive number, got nan"),
    (lambda: cost.rent_vs_buy("H100", 8, years=2**53 + 1), r"years must be a number in \(0, 30\]"),
    (lambda: cost.spot_overhead(64, interruptions_per_month=-1), r"interruptions_per_month must be a number in \[0, "),
])
def test_costs_refuse_nonsense(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_spot_overhead_without_interruptions_or_checkpoint_cost():
    """No interruptions cost nothing; free checkpoints leave only the restarts: R/M with 8 instances
    at 0.1 interruptions per instance-month, 10 minutes each: 8 * 0.1 * 10 / (730.5 * 60)."""
    assert cost.spot_overhead(64, interruptions_per_month=0).expected == 0
    free = cost.spot_overhead(64, interruptions_per_month=0.1, checkpoint_minutes=0, restart_minutes=10)
    assert free.expected == pytest.approx(8 * 0.1 * 10 / (8766 / 12 * 60))


def test_training_cost_is_gpu_hours_times_the_rate_at_each_end():
    """Each end of the cost band is that end of the GPU-hours times that end of the rate; spot
    stretches each end of the time by that end of the restart overhead (1 + extra)."""
    t = compute.training_time(7e9, 1e11, "H100", 8)
    on_demand = cost.training_cost(7e9, 1e11, "H100", 8, price_per_gpu_hour=2.0)
    assert (on_demand.low, on_demand.expected, on_demand.high) == pytest.approx(
        (t.low * 8 / 3600 * 2.0, t.expected * 8 / 3600 * 2.0, t.high * 8 / 3600 * 2.0))
    extra, rate = cost.spot_overhead(8), cost.hourly_rate("H100", "spot", price_per_gpu_hour=2.0)
    spot = cost.training_cost(7e9, 1e11, "H100", 8, pricing="spot", price_per_gpu_hour=2.0)
    assert (spot.low, spot.expected, spot.high) == pytest.approx(
        tuple(end * (1 + x) * 8 / 3600 * r for end, x, r in zip((t.low, t.expected, t.high),
                                                                 (extra.low, extra.expected, extra.high),
                                                                 (rate.low, rate.expected, rate.high))))
    assert extra.expected > 0 and rate.expected < 2.0  # both change the answer


def test_rent_vs_buy_by_hand():
    """Two years month by month (months 0 to 24): renting 8 GPUs at $2.50 an hour, 60 % of the
    8,766 / 12 = 730.5 hours of a month, costs 8 x 730.5 x 0.6 x 2.5 = $8,766 a month; owning costs
    the up-front outlay, then the running costs of the two years spread evenly over 24 months."""
    result = cost.rent_or_buy("H100", 8, years=2, utilization=0.6, price_per_gpu_hour=2.5)
    assert result.rent[10] == pytest.approx(10 * 8766)  # US dollars, month by month
    table = cost.rent_vs_buy("H100", 8, years=2, utilization=0.6, price_per_gpu_hour=2.5)
    assert table.equals(result.to_frame())
    own = cost.ownership("H100", 8, years=2, utilization=0.6)
    assert list(table["month"]) == list(range(25))
    assert table["rent (USD)"].iloc[10] == pytest.approx(10 * 8766)
    assert table["own (USD)"].iloc[24] == pytest.approx(own.upfront.expected + own.running.expected)
    assert table["own (USD)"].iloc[6] == pytest.approx(own.upfront.expected + own.running.expected / 4)


def test_spot_overhead_by_hand():
    """12 GPUs fill 2 instances of 8; at 3 interruptions per instance-month (730.5 hours), 5-minute
    checkpoints and 10-minute restarts, the job is interrupted 6 / 43,830 times a minute, and
    Young's optimum loses sqrt(2 x 5 x 6 / 43,830) + 10 x 6 / 43,830 of its time."""
    per_minute = 2 * 3 / (730.5 * 60)
    extra = cost.spot_overhead(12, interruptions_per_month=3, checkpoint_minutes=5, restart_minutes=10)
    assert extra.expected == pytest.approx((2 * 5 * per_minute) ** 0.5 + 10 * per_minute)
    assert cost.spot_overhead(16, interruptions_per_month=3, checkpoint_minutes=5, restart_minutes=10) == extra


def test_energy_band_pairs_the_tariff_and_pue_ends_by_hand():
    """8 H100 (700 W, 1.8 x that per GPU at the server) for 3 years at 50 %: 10.08 kW over 13,149 hours;
    the cheap end at 6.6 cents and PUE 1.2, the dear end at 12.4 cents and PUE 1.8 (cost_assumptions.csv);
    a tariff and PUE of the reader's own replace the sourced bands."""
    kwh = 8 * 0.7 * 1.8 * 3 * cost.HOURS_PER_YEAR * 0.5
    e = cost.ownership("H100", 8, years=3, utilization=0.5, gpu_price_usd=25000).energy
    assert (e.low, e.expected, e.high) == pytest.approx((kwh * 0.066 * 1.20, kwh * 0.0835 * 1.58, kwh * 0.124 * 1.80))
    mine = cost.ownership("H100", 8, years=3, utilization=0.5, gpu_price_usd=25000, electricity_usd_per_kwh=0.2,
                          pue=Estimate(1.1, 1.3, 1.5)).energy
    assert (mine.low, mine.expected, mine.high) == pytest.approx((kwh * 0.2 * 1.1, kwh * 0.2 * 1.3, kwh * 0.2 * 1.5))


def test_rates_and_costs_pass_every_setting_on():
    """What a reader sets reaches the model: the owned rate is one GPU's ownership with the reader's
    price and tariff; a training cost uses the reader's format, sequence length and discount."""
    owned = cost.hourly_rate("H100", "owned", gpu_price_usd=40000, electricity_usd_per_kwh=0.3)
    assert owned == cost.ownership("H100", 1, gpu_price_usd=40000, electricity_usd_per_kwh=0.3).per_gpu_hour
    assert owned.expected > cost.hourly_rate("H100", "owned", gpu_price_usd=25000).expected
    t = compute.training_time("llama-2-7b", 1e11, "H100", 64, dtype="fp8", seq_len=4096)
    assert t.expected < compute.training_time("llama-2-7b", 1e11, "H100", 64).expected  # the settings matter
    run = cost.training_cost("llama-2-7b", 1e11, "H100", 64, pricing="reserved_1y", dtype="fp8", seq_len=4096,
                             price_per_gpu_hour=2.0, discount=0.5)
    assert run.expected == pytest.approx(t.expected * 64 / 3600 * 2.0 * 0.5)
    assert cost.rent_vs_buy("H100", 8, years=1, price_per_gpu_hour=3.0)["rent (USD)"].iloc[1] == \
        pytest.approx(8 * cost.HOURS_PER_MONTH * 0.7 * 3.0)


def test_break_evens_count_a_tie_as_breaking_even():
    """Owning breaks even in the first month it has cost no more than renting (a tie included); a
    curve of just the two columns a break-even needs is enough: $2 per million tokens at 50 %
    utilisation is $1 at 100 %, so a $4 API is matched from 25 %."""
    table = pd.DataFrame({"month": [0, 1, 2], "rent (USD)": [0.0, 10.0, 20.0], "own (USD)": [5.0, 10.0, 12.0]})
    assert cost.break_even_months(table) == 1
    assert cost.break_even_months(cost.RentOrBuy(rent=(0.0, 10.0, 20.0), own=(5.0, 10.0, 12.0))) == 1
    never = cost.RentOrBuy(rent=(0.0, 10.0), own=(5.0, 11.0))
    assert never.break_even_month is None and cost.break_even_months(never) is None
    curve = pd.DataFrame({"utilization": [0.5], "usd per million tokens": [2.0]})
    assert cost.break_even_utilization(curve, 4.0) == pytest.approx(0.25)
    assert cost.break_even_utilization(curve, 2.0) == pytest.approx(0.5)  # the curve's own end still counts
    point = cost.CostPoint(utilization=0.5, requests_per_s=1.0, usd_per_million_tokens=2.0, time_per_token=0.01,
                           time_to_first_token=0.1, fits=True)
    assert cost.break_even_utilization(cost.CostCurve((point,)), 4.0) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="curve must be"):
        cost.break_even_utilization(cost.CostCurve(()), 4.0)


def test_an_owned_run_costs_its_gpu_hours_at_the_readers_ownership_rate():
    t = compute.training_time("llama-2-7b", 1e11, "H100", 64)
    rate = cost.hourly_rate("H100", "owned", gpu_price_usd=40000, staff_usd_per_gpu_year=0)
    owned = cost.training_cost("llama-2-7b", 1e11, "H100", 64, pricing="owned", gpu_price_usd=40000,
                               staff_usd_per_gpu_year=0)
    assert owned.expected == pytest.approx(t.expected * 64 / 3600 * rate.expected)
    assert rate != cost.hourly_rate("H100", "owned", gpu_price_usd=40000)


def test_an_absurd_rental_price_is_named_not_summed_to_infinity():
    """Found by the property test: 1e304 USD per GPU-hour over two years overflows the cumulative rent;
    the error names the price instead of returning infinity."""
    with pytest.raises(ValueError, match="price_per_gpu_hour"):
        cost.rent_vs_buy("H100", 1, years=2.0, utilization=1.0, price_per_gpu_hour=1.025378242563493e304,
                         gpu_price_usd=100.0)
