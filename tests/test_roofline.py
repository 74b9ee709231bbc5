import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import gpus, models, precision, roofline


def test_ridge_points():
    assert roofline.ridge_point("H100", "bf16") == pytest.approx(989.5e12 / 3.35e12)
    assert roofline.ridge_point("A100 80GB", "bf16") == pytest.approx(312e12 / 2039e9)
    with pytest.raises(ValueError, match="no 'fp8' rate"):
        roofline.ridge_point("A100", "fp8")


def test_attainable_is_the_roofline():
    h100 = gpus.get("H100")
    assert roofline.attainable(h100, "bf16", 1.0) == pytest.approx(h100.memory_bandwidth)
    assert roofline.attainable(h100, "bf16", 1e5) == h100.peak_flops("bf16")
    with pytest.raises(ValueError, match="intensity"):
        roofline.attainable(h100, "bf16", 0)


@given(st.integers(1, 100_000))
def test_square_matmul_intensity_is_two_thirds_n(n):
    assert roofline.matmul_intensity(n, n, n, 1) == pytest.approx(2 * n / 3)  # 2n^3 FLOP over 3n^2 bytes


def test_batch1_decoding_is_about_one_flop_per_byte_and_memory_bound_everywhere():
    x = roofline.decode_intensity("llama-2-7b", 1, 128)
    assert 0.9 < x < 1.05
    for name in gpus.names():
        g = gpus.get(name)
        dtype = "bf16" if g.supports("bf16") else "fp16"
        assert roofline.bound(g, dtype, x) == "memory"
        assert roofline.bound(g, dtype, roofline.training_intensity("llama-2-7b", 8 * 2048, dtype)) == "compute"


def test_kv_cache_caps_decode_intensity():
    small = roofline.decode_intensity("llama-2-7b", 256, 4096)
    assert small < 10
    assert roofline.decode_intensity("llama-3-8b", 256, 4096) > 2.5 * small  # GQA: 4x fewer KV bytes
    assert roofline.decode_intensity("llama-2-7b", 256, 128) > 100


def test_workloads_table():
    table = roofline.table("llama-2-7b", "H100")
    assert list(table.columns) == ["workload", "FLOP/byte", "attainable TFLOP/s", "bound"]
    assert table["attainable TFLOP/s"].max() == pytest.approx(989.5)


def test_number_formats_follow_their_bits():
    f = precision.formats().set_index("dtype")
    for dtype in ("fp32", "fp16", "bf16", "fp8-e5m2"):
        e, m = int(f.loc[dtype, "exponent_bits"]), int(f.loc[dtype, "mantissa_bits"])
        ieee_max = (2 - 2.0**-m) * 2.0 ** (2 ** (e - 1) - 1)
        assert f.loc[dtype, "max_normal"] == pytest.approx(ieee_max, rel=1e-6)
    assert f.loc["fp8", "max_normal"] == 448  # E4M3 gives up infinities for one more binade
    assert f["source"].str.len().min() > 10


def test_grad_scaler_backs_off_skips_and_grows():
    t = precision.grad_scaler_trace(4500, {10}, init_scale=2.0**16)
    assert t.skipped == (10,)
    assert t.scales[10] == 2.0**16 and t.scales[11] == 2.0**15
    assert t.scales[11 + 1999] == 2.0**15 and t.scales[11 + 2000] == 2.0**16
    assert t.scales[-1] == 2.0**17
    with pytest.raises(ValueError, match="growth_factor"):
        precision.grad_scaler_trace(10, set(), growth_factor=0.5)


def test_flops_per_token_moe_uses_active_parameters():
    from helpers import compute
    mixtral = models.get("mixtral-8x7b")
    assert compute.flops_per_token(mixtral) == pytest.approx(6 * mixtral.n_active_params)
