import pytest

from helpers import compare, compute, cost, gpus


def test_prices_are_dated_sourced_and_known_gpus():
    table = cost.prices()
    assert set(table["gpu"]) <= set(gpus.names())
    assert table["date"].str.match(r"^\d{4}(-\d{2})?$").all()
    assert (table["source"].str.len() > 15).all()
    assert set(table["kind"]) <= set(cost.PRICE_KINDS) and set(table["confidence"]) <= {"high", "medium", "low"}
    assert (table["usd"] > 0).all()


def test_price_lookup():
    assert cost.price("4090", "purchase") == 1599
    assert cost.price("V100") is None
    with pytest.raises(ValueError, match="kind='monthly'"):
        cost.price("H100", "monthly")


def test_training_table_covers_gpus_with_the_dtype_and_flags_fit():
    table = compare.training_table("llama-2-7b", 1e12, 8, dtype="fp8")
    assert set(table["GPU"]) == {n for n in gpus.names() if gpus.get(n).supports("fp8")}
    assert (table["days low"] <= table["days"]).all() and (table["days"] <= table["days high"]).all()
    h100 = table.set_index("GPU").loc["H100-SXM5-80GB"]
    assert h100["days"] == pytest.approx(compute.training_time("llama-2-7b", 1e12, "H100", 8, dtype="fp8").expected / 86400)
    assert not compare.training_table("llama-3.1-405b", 1e12, 8).set_index("GPU").loc["H100-SXM5-80GB", "fits"]


def test_serving_estimate_and_table():
    e = compare.serving_estimate("llama-2-7b", "A100 80GB", batch_size=4, context_len=1024)
    assert e["time per output token (s)"].expected == pytest.approx(4 / e["tokens/s"].expected)
    assert e["fits"] and e["bound"] == "memory"
    table = compare.serving_table("llama-2-70b", weight_dtype="int4")
    fits = dict(zip(table["GPU"], table["fits"]))
    assert fits["A100-SXM4-80GB"] and not fits["RTX-4090-24GB"]
