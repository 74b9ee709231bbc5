"""Interconnects and the time of collective operations (alpha-beta model).

An all-reduce of S bytes over n GPUs on a ring (Patarasuk & Yuan 2009; NCCL) sends 2(n-1)/n * S
bytes over each GPU's link and takes 2(n-1) steps; its time is modelled as

    t = launch + 2(n-1) * hop_latency + 2(n-1)/n * S / (bandwidth * achieved_fraction)

and likewise for the other collectives with their own step counts and traffic factors. The
traffic factor is what nccl-tests calls the bus-bandwidth factor (NVIDIA/nccl-tests,
doc/PERFORMANCE.md): bus bandwidth = algorithm bandwidth (S / t) times the factor, so that it is
comparable with the link's bandwidth whatever n is.

``launch`` and ``hop_latency`` are fitted to small-message all-reduce times: 10.1 us on 2 A100
(NVIDIA/nccl issue 583) and 19.2 us on 8 H100 over NVSwitch (ByteDance-Seed/Triton-distributed
issue 57) give 8.6 us and 0.75 us per step; 42.1 us on 8 RTX 4090 over PCIe (NVIDIA/nccl issue
1530) gives 2.4 us per PCIe step. Bandwidths are one direction per GPU.

On NVSwitch systems with NVLink SHARP (H100/H200 and B200 HGX, GB200 NVL72) NCCL's default
all-reduce is NVLS: the switch adds the buffers, so each GPU sends and receives S bytes once
whatever n, at a measured 275 GB/s on 8 H100 (the link's ``nvls_fraction`` of its line rate),
after a fixed 23 us (NCCL's own latency model, src/graph/tuning.cc: NVLS on NVLink). Its bus
bandwidth (algorithm bandwidth times 2(n-1)/n) then exceeds the line rate, as nccl-tests reports
on 8 H100 (about 480 GB/s) and H200 (475 GB/s). ``algorithm="auto"`` takes the faster of ring and
NVLS where the link has NVLS, as NCCL's tuner takes the algorithm of least modelled time; across
servers it is the ring (NVLS trees over InfiniBand SHARP are not modelled).
"""

from dataclasses import dataclass
from math import ceil, log2
from functools import cache

import numpy as np
import pandas as pd

from . import _data, _lookup, gpus
from .estimate import Estimate
from .gpus import GPU
from .units import GB, argument, check_choice, check_positive, check_result

#: Fixed cost of one collective call (kernel launch and synchronisation), seconds.
LAUNCH_LATENCY = 8.6e-6
#: Latency of an NVLS all-reduce inside an NVSwitch domain, seconds (NCCL src/graph/tuning.cc,
#: hwLat[NVLINK][NVLS][Simple] = 23 us, with no base latency).
NVLS_LATENCY = 23e-6


@dataclass(frozen=True)
class Link:
    """A GPU's link to its peers. SI units: bytes/s (one direction), seconds."""

    name: str
    kind: str
    bandwidth: float
    bandwidth_vendor: float
    achieved_fraction: float
    hop_latency: float
    source: str
    nvls_fraction: float | None = None

    @property
    def has_nvls(self) -> bool:
        """Whether the switch behind this link reduces in the network (NVLink SHARP)."""
        return self.nvls_fraction is not None


@cache
def _links() -> dict[str, Link]:
    return {row["name"]: Link(name=row["name"], kind=row["kind"], bandwidth=float(row["bandwidth_oneway_gbs"]) * GB,
                              bandwidth_vendor=float(row["bandwidth_vendor_gbs"]) * GB,
                              achieved_fraction=float(row["achieved_fraction"]),
                              hop_latency=float(row["hop_latency_us"]) * 1e-6, source=row["source"],
                              nvls_fraction=None if pd.isna(row["nvls_fraction"]) else float(row["nvls_fraction"]))
            for _, row in _data.table("interconnects").iterrows()}


@cache
def _link_index() -> dict[str, str]:
    """Normalized names and kinds ("NVLink 4", "PCIe 4.0 x16", "IB NDR") -> link name."""
    index = {}
    for row in _data.table("interconnects").itertuples():
        kind = row.kind.split(" (")[0]
        for alias in (row.name, kind, kind.removesuffix(" x16"), row.name.replace("ib-", "infiniband-")):
            index.setdefault(_lookup.normalize(alias), row.name)
    return index


def link(name: "str | Link") -> Link:
    """The link called ``name`` ("nvlink4", "NVLink 4", "pcie4", "PCIe 4.0", "ib-ndr",
    "InfiniBand NDR", ...), case and punctuation ignored; a ValueError suggests the closest."""
    if isinstance(name, Link):
        return name
    if not isinstance(name, str):
        raise ValueError(f"unknown link {name!r}; known: {', '.join(_links())}")
    if name in _links():  # a catalog name: no need to normalise it
        return _links()[name]
    try:
        return _links()[_lookup.resolve(name, _link_index(), "link")]
    except ValueError as e:
        raise ValueError(f"{e}; known: {', '.join(_links())}") from None


def links() -> list[str]:
    """Names of every link in ``data/interconnects.csv``."""
    return list(_links())


def gpu_link(gpu: "GPU | str", n_gpus: int) -> Link:
    """The link ``n_gpus`` GPUs of this kind talk over inside one server: their NVLink (or
    Infinity Fabric) when all of them fit its domain, else PCIe of the GPU's generation."""
    g = gpus.get(gpu)
    check_positive("n_gpus", n_gpus, integer=True)
    if g.gpu_link and n_gpus <= g.gpu_link_domain:
        return link(g.gpu_link)
    return link(f"pcie{g.pcie_gen}")


COLLECTIVES = ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast")
ALGORITHMS = ("auto", "ring", "tree", "nvls")


def bus_factor(collective: str, n_gpus: int) -> float:
    """nccl-tests' bus-bandwidth factor: 2(n-1)/n for all-reduce, (n-1)/n for all-gather,
    reduce-scatter and all-to-all, 1 for broadcast."""
    check_positive("n_gpus", n_gpus, integer=True)
    check_choice("collective", collective, COLLECTIVES)
    if collective == "broadcast":
        return 1.0
    return (2 if collective == "allreduce" else 1) * (n_gpus - 1) / n_gpus


def alpha_beta(steps, hop_latency, traffic, bandwidth):
    """Seconds of a collective in the alpha-beta model (Hockney 1994, Parallel Computing 20(3)): one
    kernel launch, ``steps`` hops of ``hop_latency`` seconds and ``traffic`` bytes per GPU at
    ``bandwidth`` bytes/s. Numbers or numpy arrays."""
    return LAUNCH_LATENCY + steps * hop_latency + traffic / bandwidth


def collective_time(collective: str, n_bytes: float, n_gpus: int, link_or_name: "Link | str", *,
                    algorithm: str = "auto") -> Estimate:
    """Seconds for ``collective`` of ``n_bytes`` (the buffer each GPU holds at the end of an
    all-gather, or starts with otherwise) over ``n_gpus`` GPUs joined by one kind of link.

    Ring: 2(n-1) steps for all-reduce, n-1 for the others; traffic ``bus_factor`` * S per GPU.
    Tree (all-reduce only; NCCL's double binary tree, Sanders et al. 2009): 2*ceil(log2 n)
    steps, the same traffic. NVLS (all-reduce only, on links with NVLink SHARP): a fixed
    :data:`NVLS_LATENCY`, then S bytes per GPU at the link's ``nvls_fraction`` of its line rate.
    ``auto``: the faster of ring and NVLS for an all-reduce where the link has NVLS, else the
    ring. The band spans the link's bandwidth from 85 % of its typical achieved fraction to all of it.
    """
    factor = bus_factor(collective, n_gpus)
    check_choice("algorithm", algorithm, ALGORITHMS)
    if algorithm in ("tree", "nvls") and collective != "allreduce":
        raise ValueError(f"algorithm={algorithm!r} is modelled for allreduce only, not {collective!r}")
    check_positive("n_bytes", n_bytes, allow_zero=True)
    ln = link(link_or_name)
    if algorithm == "nvls" and not ln.has_nvls:
        raise ValueError(f"algorithm='nvls' needs NVLink SHARP, which {ln.name} ({ln.kind}) does not have; "
                         f"links with it: {', '.join(n for n, k in _links().items() if k.has_nvls)}")
    if n_gpus == 1:
        return Estimate.exact(0.0)
    if algorithm in ("auto", "nvls") and collective == "allreduce" and ln.has_nvls:
        check_result(n_bytes / ln.bandwidth, n_bytes=n_bytes)
        nvls = Estimate(*(_nvls_seconds(n_bytes, ln, f) for f in (1.0, ln.nvls_fraction, 0.85 * ln.nvls_fraction)))
        ring = collective_time(collective, n_bytes, n_gpus, ln, algorithm="ring")
        return nvls if algorithm == "nvls" or nvls.expected < ring.expected else ring
    if algorithm == "tree":
        steps = 2 * ceil(log2(n_gpus))
    else:
        steps = (2 if collective == "allreduce" else 1) * (n_gpus - 1)
    fractions = (1.0, ln.achieved_fraction, 0.85 * ln.achieved_fraction)
    traffic = check_result(factor * n_bytes, n_bytes=n_bytes)
    return Estimate(*(alpha_beta(steps, ln.hop_latency, traffic, ln.bandwidth * f) for f in fractions))


def _nvls_seconds(n_bytes, ln: Link, fraction: float):
    """An NVLS all-reduce: its fixed latency, then the buffer at ``fraction`` of the line rate."""
    return NVLS_LATENCY + n_bytes / (ln.bandwidth * fraction)


def allreduce_time(n_bytes: float, n_gpus: int, link_or_name: "Link | str", *, algorithm: str = "auto") -> Estimate:
    """Seconds for an all-reduce of ``n_bytes`` over ``n_gpus`` GPUs joined by ``link_or_name``."""
    return collective_time("allreduce", n_bytes, n_gpus, link_or_name, algorithm=algorithm)


def allreduce_expected(n_bytes, n_gpus: int, ln: Link):
    """The expected seconds of :func:`allreduce_time` with the default algorithm, for a number or a
    numpy array of ``n_bytes`` at once (arguments unchecked: the fast path of :mod:`serving`)."""
    n_bytes = np.asarray(n_bytes, dtype=float)
    if n_gpus == 1:
        return np.zeros_like(n_bytes)
    ring = alpha_beta(2 * (n_gpus - 1), ln.hop_latency, bus_factor("allreduce", n_gpus) * n_bytes,
                      ln.bandwidth * ln.achieved_fraction)
    return np.minimum(ring, _nvls_seconds(n_bytes, ln, ln.nvls_fraction)) if ln.has_nvls else ring


def bus_bandwidth(collective: str, n_bytes: float, n_gpus: int, seconds: float) -> float:
    """nccl-tests' bus bandwidth (bytes/s): algorithm bandwidth n_bytes/seconds times the bus factor."""
    check_positive("n_bytes", n_bytes, allow_zero=True)
    check_positive("seconds", seconds)
    return check_result(n_bytes / seconds * bus_factor(collective, n_gpus), n_bytes=n_bytes, seconds=seconds)


def multinode_allreduce_time(n_bytes: float, n_nodes: int, gpus_per_node: int, intra: "Link | str",
                             inter: "Link | str", *, nics_per_node: int = 1, algorithm: str = "auto") -> Estimate:
    """Seconds for an all-reduce over ``n_nodes`` servers of ``gpus_per_node`` GPUs each, joined
    inside a server by ``intra`` and across servers by ``nics_per_node`` NICs of kind ``inter``.

    NCCL runs one ring (or tree) per NIC; every ring crosses each server boundary through one NIC,
    so the bus bandwidth is capped by the server's NICs together, or by the GPU link if that is
    slower (NCCL maintainer: 'about 24 GB/s per 200G NIC, so 96 GB/s' for 4 NICs,
    NVIDIA/nccl-tests issue 119). Steps are paced by the slower, cross-server hop.
    """
    for name, value in (("n_nodes", n_nodes), ("gpus_per_node", gpus_per_node), ("nics_per_node", nics_per_node)):
        check_positive(name, value, integer=True)
    check_positive("n_nodes * gpus_per_node", n_nodes * gpus_per_node, integer=True)
    check_positive("n_bytes", n_bytes, allow_zero=True)
    check_choice("algorithm", algorithm, ALGORITHMS)
    with argument("intra", intra):
        gpu_link_ = link(intra)
    if n_nodes == 1:
        return allreduce_time(n_bytes, gpus_per_node, gpu_link_, algorithm=algorithm)
    with argument("inter", inter):
        nic = link(inter)
    if algorithm == "nvls":
        raise ValueError("algorithm='nvls' is modelled inside one NVSwitch domain only (n_nodes=1); across servers use "
                         "'auto', 'ring' or 'tree'")
    n = n_nodes * gpus_per_node
    steps = 2 * ceil(log2(n)) if algorithm == "tree" else 2 * (n - 1)
    hop = max(nic.hop_latency, gpu_link_.hop_latency)
    traffic = check_result(bus_factor("allreduce", n) * n_bytes, n_bytes=n_bytes)
    achieved = min(gpu_link_.bandwidth * gpu_link_.achieved_fraction, nics_per_node * nic.bandwidth * nic.achieved_fraction)
    peak = min(gpu_link_.bandwidth, nics_per_node * nic.bandwidth)
    return Estimate(*(alpha_beta(steps, hop, traffic, bw) for bw in (peak, achieved, 0.85 * achieved)))
