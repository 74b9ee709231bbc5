from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import comm


def test_links_are_sourced_and_one_way():
    for name in comm.links():
        ln = comm.link(name)
        assert ln.source and ln.bandwidth > 0 and 0 < ln.achieved_fraction <= 1
        assert ln.bandwidth_vendor == pytest.approx(2 * ln.bandwidth)  # vendors quote both directions
    assert comm.link("nvlink4").bandwidth == pytest.approx(450e9)
    with pytest.raises(ValueError, match="unknown link 'nvlink9'"):
        comm.link("nvlink9")


def test_small_message_latencies_reproduce_measurements():
    """2 A100 NVLink: 10.1 us (nccl issue 583); 8 H100 NVSwitch: 19.2 us (Triton-distributed issue 57);
    8 RTX 4090 over PCIe: 42.1 us (nccl issue 1530)."""
    assert comm.allreduce_time(32, 2, "nvlink3").expected == pytest.approx(10.1e-6, rel=0.05)
    assert comm.allreduce_time(128, 8, "nvlink4").expected == pytest.approx(19.2e-6, rel=0.05)
    assert comm.allreduce_time(8, 8, "pcie4").expected == pytest.approx(42.1e-6, rel=0.05)


def test_large_message_bus_bandwidth_matches_nccl_tests():
    """8 A100 SXM4: about 230 GB/s all-reduce bus bandwidth at 1 GB and above (nccl-tests issues 149, 175)."""
    n, size = 8, 8e9
    t = comm.allreduce_time(size, n, "nvlink3")
    busbw = 2 * (n - 1) / n * size / t.expected
    assert busbw == pytest.approx(230e9, rel=0.05)
    assert t.low < t.expected < t.high


def test_pcie_collectives_run_at_what_eight_cards_across_two_sockets_reach():
    """8 RTX 5090 on PCIe 5.0 in a two-socket server: 28 GB/s all-reduce bus bandwidth at 1-8 GB
    (NVIDIA/nccl issue 1639), under half the link's 63 GB/s each way: the traffic runs through the CPUs."""
    n, size = 8, 8e9
    busbw = comm.bus_bandwidth("allreduce", size, n, comm.allreduce_time(size, n, "pcie5").expected)
    assert busbw == pytest.approx(28e9, rel=0.02)
    assert comm.link("pcie4").achieved_fraction == comm.link("pcie5").achieved_fraction < 0.5


def test_gpu_link_choice():
    assert comm.gpu_link("H100", 8).name == "nvlink4"
    assert comm.gpu_link("H100 PCIe", 2).name == "nvlink4-bridge"
    assert comm.gpu_link("H100 PCIe", 4).name == "pcie5"
    assert comm.gpu_link("4090", 2).name == "pcie4"
    assert comm.gpu_link("A6000", 2).name == "nvlink3-ga102-bridge"
    assert comm.allreduce_time(1e6, 1, "pcie4").expected == 0


@given(st.floats(0, 1e10), st.integers(2, 64))
def test_allreduce_time_grows_with_size_and_gpus(size, n):
    t = comm.allreduce_time(size, n, "nvlink4").expected
    assert comm.allreduce_time(size * 2 + 1, n, "nvlink4").expected >= t
    assert comm.allreduce_time(size, n + 1, "nvlink4").expected >= t


def test_nvls_all_reduce_beats_the_line_rate_on_8_hopper_gpus():
    """NVLink SHARP adds in the switch: 8 H100 reach about 480 GB/s of bus bandwidth (NCCL
    maintainer, nccl-tests issue 212; fitted) and 8 H200 475 GB/s (nccl-tests issue 272; not fitted),
    above the 450 GB/s line rate; with NCCL_ALGO=RING the same GPUs reach 370 GB/s."""
    size = 4e9
    auto = comm.bus_bandwidth("allreduce", size, 8, comm.allreduce_time(size, 8, "nvlink4").expected) / 1e9
    ring = comm.bus_bandwidth("allreduce", size, 8, comm.allreduce_time(size, 8, "nvlink4", algorithm="ring").expected) / 1e9
    assert auto == pytest.approx(475, rel=0.03) and auto > 450
    assert ring == pytest.approx(370, rel=0.02)
    assert comm.allreduce_time(size, 8, "nvlink4") == comm.allreduce_time(size, 8, "nvlink4", algorithm="nvls")


def test_auto_takes_the_ring_where_it_is_faster():
    """NVLS pays 23 us up front and moves S bytes per GPU whatever n; the ring moves 2(n-1)/n S. So
    small messages and pairs of GPUs stay on the ring, and NVLink 3 (no SHARP) never leaves it."""
    for size, n in ((16384, 8), (1e9, 2)):
        assert comm.allreduce_time(size, n, "nvlink4") == comm.allreduce_time(size, n, "nvlink4", algorithm="ring")
    assert comm.allreduce_time(1e9, 8, "nvlink3") == comm.allreduce_time(1e9, 8, "nvlink3", algorithm="ring")
    nvls = comm.allreduce_time(1e9, 8, "nvlink4", algorithm="nvls").expected
    assert nvls == pytest.approx(comm.NVLS_LATENCY + 1e9 / (450e9 * 0.611))
    with pytest.raises(ValueError, match="needs NVLink SHARP, which nvlink3"):
        comm.allreduce_time(1e9, 8, "nvlink3", algorithm="nvls")
    with pytest.raises(ValueError, match="one NVSwitch domain only"):
        comm.multinode_allreduce_time(1e9, 2, 8, "nvlink4", "ib-ndr", nics_per_node=8, algorithm="nvls")


@pytest.mark.parametrize("link_name", ["nvlink4", "nvlink3", "pcie4", "infinity-fabric-mi300x"])
def test_vectorised_allreduce_is_allreduce_time(link_name):
    """The serving fast path's all-reduce gives allreduce_time's expected seconds, ring or NVLS alike."""
    sizes = np.array([0.0, 1e3, 64e3, 1e6, 64e6, 1e9])
    for n in (1, 2, 4, 8):
        fast = comm.allreduce_expected(sizes, n, comm.link(link_name))
        assert fast == pytest.approx([comm.allreduce_time(s, n, link_name).expected for s in sizes], rel=1e-12)


@pytest.mark.parametrize("alias, name", [("NVLink 4", "nvlink4"), ("PCIe 4.0", "pcie4"), ("pcie 5.0 x16", "pcie5"),
                                         ("InfiniBand NDR", "ib-ndr"), ("IB HDR", "ib-hdr"),
                                         ("NVLink 3 bridge", "nvlink3-bridge")])
def test_links_are_found_as_forgivingly_as_gpus(alias, name):
    assert comm.link(alias).name == name


def test_small_collectives_pay_their_steps_by_hand():
    """A 4-byte buffer costs the launch plus steps x hop latency (its traffic is negligible), by hand:
    8.6 us + 0.75 us per NVLink 4 step; the ring all-reduce's 8.6 + 14 x 0.75 = 19.1 us is the
    19.2 us measured on 8 H100 that the fit used (module docstring)."""
    us = 1e-6
    ring = comm.collective_time("allreduce", 4, 8, "nvlink4", algorithm="ring")
    assert ring.expected == pytest.approx(19.1 * us, rel=1e-3)
    assert comm.collective_time("allgather", 4, 8, "nvlink4").expected == pytest.approx((8.6 + 7 * 0.75) * us, rel=1e-3)
    tree = comm.collective_time("allreduce", 4, 5, "nvlink4", algorithm="tree")  # 2 * ceil(log2 5) = 6 steps
    assert tree.expected == pytest.approx((8.6 + 6 * 0.75) * us, rel=1e-3)
    assert comm.collective_time("allreduce", 4, 8, "nvlink4").expected == pytest.approx(19.1 * us, rel=1e-3)  # NVLS: 23 us
    # across 2 servers of 8 (16 GPUs), paced by the InfiniBand hop of 5 us: 2 x 15 steps, or 2 x 4 for the tree
    multi = comm.multinode_allreduce_time(4, 2, 8, "nvlink4", "ib-ndr", algorithm="ring")
    assert multi.expected == pytest.approx((8.6 + 30 * 5) * us, rel=1e-3)
    assert comm.multinode_allreduce_time(4, 2, 8, "nvlink4", "ib-ndr", algorithm="tree").expected == \
        pytest.approx((8.6 + 8 * 5) * us, rel=1e-3)


def test_large_collectives_span_line_rate_to_85_percent_of_achieved_by_hand():
    """1 GB all-gathered over 8 GPUs moves 7/8 GB per GPU: at NVLink 4's 450 GB/s line rate (the
    band's fast end), its achieved 82.2 %, and 85 % of that (the slow end). Two servers of 8 with
    4 NDR NICs each all-reduce 2 x 15/16 GB per GPU at the NICs' 4 x 50 GB/s x 0.96 = 192 GB/s
    (the NVLink's achieved 370 GB/s is faster), the band's fast end at their 200 GB/s line rate."""
    fixed = (8.6 + 7 * 0.75) * 1e-6
    t = comm.collective_time("allgather", 1e9, 8, "nvlink4")
    assert (t.low, t.expected, t.high) == pytest.approx(
        (fixed + 0.875e9 / 450e9, fixed + 0.875e9 / (450e9 * 0.822), fixed + 0.875e9 / (450e9 * 0.822 * 0.85)), rel=1e-6)
    multi = comm.multinode_allreduce_time(1e9, 2, 8, "nvlink4", "ib-ndr", nics_per_node=4, algorithm="ring")
    assert multi.expected == pytest.approx((8.6 + 30 * 5) * 1e-6 + 1.875e9 / (4 * 50e9 * 0.96), rel=1e-6)
    assert multi.low == pytest.approx((8.6 + 30 * 5) * 1e-6 + 1.875e9 / 200e9, rel=1e-6)
    assert multi.high == pytest.approx((8.6 + 30 * 5) * 1e-6 + 1.875e9 / (4 * 50e9 * 0.96 * 0.85), rel=1e-6)


def test_nvls_all_reduce_band_by_hand():
    """NVLS moves the 1 GB buffer once per GPU after its fixed latency: at NVLink 4's 450 GB/s line
    rate (the fast end), at the measured 61.1 % of it (the expected value), and at 85 % of that."""
    t = comm.collective_time("allreduce", 1e9, 8, "nvlink4", algorithm="nvls")
    assert (t.low, t.expected, t.high) == pytest.approx(
        (comm.NVLS_LATENCY + 1e9 / 450e9, comm.NVLS_LATENCY + 1e9 / (450e9 * 0.611),
         comm.NVLS_LATENCY + 1e9 / (450e9 * 0.611 * 0.85)), rel=1e-9)


def test_one_server_of_a_multinode_all_reduce_is_the_all_reduce_it_asks_for():
    """One node of 8 H100: the multinode model hands over to allreduce_time with the algorithm asked
    for (a ring here, slower than the NVLS all-reduce 'auto' would take)."""
    ring = comm.multinode_allreduce_time(1e9, 1, 8, "nvlink4", "ib-ndr", algorithm="ring")
    assert ring == comm.allreduce_time(1e9, 8, "nvlink4", algorithm="ring")
    assert ring.expected > comm.allreduce_time(1e9, 8, "nvlink4").expected


def test_the_formula_sheet_states_the_fractions_the_data_holds():
    """book/formulas.md types two achieved fractions into its formulas: NVLS's and PCIe collectives'."""
    sheet = (Path(__file__).resolve().parents[1] / "book" / "formulas.md").read_text(encoding="utf-8")
    assert f"S/({comm.link('nvlink4').nvls_fraction:.2f}\\,B)" in sheet
    assert f"$B = {comm.link('pcie5').achieved_fraction:.2f}\\,\\times$ the PCIe line rate" in sheet
