"""Interconnects and the time of collective operations (alpha-beta model).

An all-reduce of S bytes over n GPUs on a ring (Patarasuk & Yuan 2009; NCCL) sends 2(n-1)/n * S
bytes over each GPU's link and takes 2(n-1) steps; its time is modelled as

    t = launch + 2(n-1) * hop_latency + 2(n-1)/n * S / (bandwidth * achieved_fraction)

``launch`` and ``hop_latency`` are fitted to small-message all-reduce times: 10.1 us on 2 A100
(NVIDIA/nccl issue 583) and 19.2 us on 8 H100 over NVSwitch (ByteDance-Seed/Triton-distributed
issue 57) give 8.6 us and 0.75 us per step; 42.1 us on 8 RTX 4090 over PCIe (NVIDIA/nccl issue
1530) gives 2.4 us per PCIe step. Bandwidths are one direction per GPU.
"""

from dataclasses import dataclass
from functools import cache

from . import _data, gpus
from .estimate import Estimate
from .gpus import GPU
from .units import GB, check_positive

#: Fixed cost of one collective call (kernel launch and synchronisation), seconds.
LAUNCH_LATENCY = 8.6e-6


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


@cache
def _links() -> dict[str, Link]:
    return {row["name"]: Link(name=row["name"], kind=row["kind"], bandwidth=float(row["bandwidth_oneway_gbs"]) * GB,
                              bandwidth_vendor=float(row["bandwidth_vendor_gbs"]) * GB,
                              achieved_fraction=float(row["achieved_fraction"]),
                              hop_latency=float(row["hop_latency_us"]) * 1e-6, source=row["source"])
            for _, row in _data.table("interconnects").iterrows()}


def link(name: "str | Link") -> Link:
    """The link called ``name`` ("nvlink3", "nvlink4", "pcie4", ...)."""
    if isinstance(name, Link):
        return name
    links = _links()
    if name not in links:
        raise ValueError(f"unknown link {name!r}; known: {', '.join(links)}")
    return links[name]


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


def allreduce_time(n_bytes: float, n_gpus: int, link_or_name: "Link | str") -> Estimate:
    """Seconds for a ring all-reduce of ``n_bytes`` over ``n_gpus`` GPUs joined by ``link_or_name``.

    The band spans the link's bandwidth from 85 % of its typical achieved fraction to all of it.
    """
    check_positive("n_gpus", n_gpus, integer=True)
    if n_bytes < 0:
        raise ValueError(f"n_bytes must be >= 0, got {n_bytes}")
    if n_gpus == 1:
        return Estimate.exact(0.0)
    ln = link(link_or_name)
    steps = 2 * (n_gpus - 1)
    latency = LAUNCH_LATENCY + steps * ln.hop_latency
    volume = steps / n_gpus * n_bytes
    fractions = (1.0, ln.achieved_fraction, 0.85 * ln.achieved_fraction)
    return Estimate(*(latency + volume / (ln.bandwidth * f) for f in fractions))
