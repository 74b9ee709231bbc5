import datetime

import pandas as pd
import pytest

from helpers import comm, gpus
from helpers.units import GB, GiB, MiB, TFLOPS

CATALOG = gpus.catalog()
REQUIRED = ["V100-SXM2-32GB", "A100-SXM4-40GB", "A100-SXM4-80GB", "A100-PCIe-80GB", "H100-SXM5-80GB",
            "H100-PCIe-80GB", "H100-NVL-94GB", "H200-SXM-141GB", "B200-HGX-192GB", "L40S-48GB", "L40-48GB",
            "L4-24GB", "A10-24GB", "T4-16GB", "RTX-4090-24GB", "RTX-3090-24GB", "RTX-A6000-48GB",
            "RTX-6000-Ada-48GB", "RTX-A4000-16GB", "MI300X-192GB"]
PAIRS = [("tf32_dense_tflops", "tf32_sparse_tflops"), ("fp16_dense_tflops", "fp16_sparse_tflops"),
         ("bf16_dense_tflops", "bf16_sparse_tflops"), ("fp8_dense_tflops", "fp8_sparse_tflops"),
         ("int8_dense_tops", "int8_sparse_tops")]


def test_catalog_has_every_required_variant():
    assert set(REQUIRED) <= set(CATALOG["name"])
    assert CATALOG["name"].is_unique


@pytest.mark.parametrize("column", ["source", "verified_on"])
def test_every_row_sourced_and_dated(column):
    assert CATALOG[column].notna().all() and (CATALOG[column].str.len() >= 10).all()
    if column == "verified_on":
        dates = pd.to_datetime(CATALOG[column], format="%Y-%m-%d")
        assert (dates <= pd.Timestamp(datetime.date.today())).all()


@pytest.mark.parametrize("dense,sparse", PAIRS)
def test_sparse_is_twice_dense(dense, sparse):
    both = CATALOG[[dense, sparse]].dropna()
    assert not both.empty
    ratio = both[sparse] / both[dense]
    assert ratio.between(1.98, 2.03).all(), both[~ratio.between(1.98, 2.03)]


def test_figures_in_plausible_ranges():
    assert CATALOG["memory_bandwidth_gbs"].between(250, 10_000).all()
    assert CATALOG["memory_gib"].between(16, 300).all()
    assert CATALOG["tdp_watts"].between(60, 1500).all()
    assert CATALOG["fp32_tflops"].between(5, 200).all()
    assert CATALOG["bf16_dense_tflops"].dropna().between(50, 3000).all()
    assert CATALOG["launch_year"].between(2016, 2026).all()
    # tensor cores beat the non-tensor fp32 rate wherever they exist
    fp16 = CATALOG[["fp16_dense_tflops", "fp32_tflops"]].dropna()
    assert (fp16["fp16_dense_tflops"] > fp16["fp32_tflops"]).all()


def test_units_are_si():
    h100 = gpus.get("H100")
    assert h100.peak_flops("bf16") == pytest.approx(989.5 * TFLOPS)
    assert h100.peak_flops("fp8") == pytest.approx(1979 * TFLOPS)
    assert h100.peak_flops("fp8", sparse=True) == pytest.approx(3958 * TFLOPS)
    assert h100.memory_bandwidth == pytest.approx(3.35e12)
    assert h100.nvlink_bandwidth == pytest.approx(450 * GB)  # 900 GB/s is both directions
    assert h100.memory_bytes == 80 * GiB
    assert h100.reported_memory_bytes == 81559 * MiB  # nvidia-smi's total, as printed


def test_reported_memory_is_the_datasheets_less_what_ecc_and_firmware_keep():
    """Where nvidia-smi's total is cited it lies within 1 % below the datasheet's, or 1/16 below
    (ECC on a data-centre GDDR6 card); without a printout, those cards lose ECC's 1/16."""
    for g in gpus.get_all("gpus", gpus.names()):
        share = g.reported_memory_bytes / g.memory_bytes
        ecc = g.segment == "datacenter" and g.memory_type.startswith("GDDR6")
        assert (0.99 * 15 / 16 <= share <= 15 / 16) if ecc else (0.99 <= share <= 1), g.name
    cited = CATALOG.dropna(subset=["memory_reported_mib"])
    assert len(cited) >= 15 and cited["memory_reported_source"].str.startswith("github.com/").all()
    assert gpus.get("L40").reported_memory_bytes == 48 * GiB * gpus.ECC_GDDR6_SHARE  # no printout cited: the rule


def test_figures_the_article_gets_wrong_are_right_here():
    l40s = gpus.get("L40S")
    assert (l40s.memory_gb_vendor, l40s.tdp_watts) == (48, 350)
    rtx4090 = gpus.get("4090")
    assert rtx4090.supports("fp8") and rtx4090.peak_flops("bf16") >= 2 * rtx4090.peak_flops("fp32")
    assert gpus.get("B200").memory_gb_vendor == 192
    assert gpus.get("A6000").memory_gb_vendor == 48
    a4000 = gpus.get("A4000")
    assert (a4000.memory_gb_vendor, a4000.tdp_watts) == (16, 140)


def test_volta_and_turing_lack_newer_formats():
    for name in ("V100", "T4"):
        g = gpus.get(name)
        assert not g.supports("bf16") and not g.supports("tf32") and not g.supports("fp8")
    with pytest.raises(ValueError, match="no 'tf32' rate.*fp16"):
        gpus.get("V100").peak_flops("tf32")


@pytest.mark.parametrize("alias,name", [("A100 80GB", "A100-SXM4-80GB"), ("a100-80gb", "A100-SXM4-80GB"),
                                        ("H100", "H100-SXM5-80GB"), ("4090", "RTX-4090-24GB"),
                                        ("nvidia h100 pcie", "H100-PCIe-80GB"), ("GeForce RTX 3090", "RTX-3090-24GB"),
                                        ("A100-SXM4-80GB", "A100-SXM4-80GB"), ("mi300x", "MI300X-192GB")])
def test_aliases(alias, name):
    assert gpus.get(alias).name == name


def test_unknown_gpu_lists_closest_names():
    with pytest.raises(ValueError, match=r"unknown GPU 'H300'; closest known: .*H200"):
        gpus.get("H300")
    with pytest.raises(ValueError, match="must be a string"):
        gpus.get(100)


def test_catalog_is_a_copy():
    copy = gpus.catalog()
    copy.loc[0, "tdp_watts"] = 0
    assert gpus.catalog().loc[0, "tdp_watts"] > 0


def test_china_market_variants_against_the_parts_they_derive_from():
    h100, h800, h20 = gpus.get("H100"), gpus.get("H800"), gpus.get("H20")
    a100, a800 = gpus.get("A100-SXM4-80GB"), gpus.get("A800")
    # H800 and A800: the same compute, NVLink cut to 400 GB/s (200 each way)
    assert h800.peak_flops("bf16") == h100.peak_flops("bf16") and h800.nvlink_bandwidth == 200e9 < h100.nvlink_bandwidth
    assert a800.peak_flops("bf16") == a100.peak_flops("bf16") and a800.nvlink_bandwidth == 200e9 < a100.nvlink_bandwidth
    # H20: under a sixth of the H100's tensor rate, more memory and bandwidth, full NVLink
    assert h20.peak_flops("bf16") < h100.peak_flops("bf16") / 6
    assert h20.memory_bandwidth > h100.memory_bandwidth and h20.nvlink_bandwidth == h100.nvlink_bandwidth
    assert gpus.get("L20").peak_flops("bf16") < gpus.get("L40S").peak_flops("bf16") / 3


def test_blackwell_ultra_and_links():
    b200, b300, gb300 = gpus.get("B200"), gpus.get("B300"), gpus.get("GB300")
    assert b300.peak_flops("fp4") > b200.peak_flops("fp4") and b300.peak_flops("int8") < b200.peak_flops("int8")
    assert gb300.gpu_link_domain == 72 and b300.gpu_link == "nvlink5"
    # the H200 NVL's 2- or 4-way bridge carries 900 GB/s per GPU, 450 each way
    h200nvl = gpus.get("H200 NVL")
    assert comm.link(h200nvl.gpu_link).bandwidth == h200nvl.nvlink_bandwidth == 450e9
    for g in gpus.names():  # every GPU's links and servers are known
        gpu = gpus.get(g)
        comm.link(f"pcie{gpu.pcie_gen}")
        assert not gpu.gpu_link or comm.link(gpu.gpu_link).bandwidth == gpu.nvlink_bandwidth
