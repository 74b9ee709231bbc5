"""GPU datasheet figures: memory, bandwidth, dense and sparse peak FLOP/s, power, links.

Every row of ``data/gpus.csv`` names its source and the date it was checked. Tensor-core
figures are stored dense; NVIDIA's headline figures with 2:4 structured sparsity are kept
apart and never used for estimates.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import pandas as pd

from . import _data, _lookup, formats
from .units import GB, GiB, MiB, TFLOPS, argument, check_bool, check_dtype, check_list

#: Share of a GDDR6 card's memory left to software with ECC on, as data-centre cards ship (ECC
#: keeps 1/16 aside: the same L40 and RTX A6000 print 49,140 MiB with ECC off and 46,068 with it
#: on, and a T4 prints 15,360 MiB of 16 GiB; the printouts are cited in ``data/gpus.csv``).
ECC_GDDR6_SHARE = 15 / 16

#: ``COMPUTE_DTYPES``: dtypes with a peak rate in the catalog (:func:`formats.names`, role
#: "tensor_core", read on first use; int8 in TOPS, the rest in TFLOP/s).
__getattr__ = formats.lazy_constants(__name__, {"COMPUTE_DTYPES": lambda: formats.names("tensor_core")})


def _rate_column(dtype: str, kind: str) -> str | None:
    """CSV column of the ``kind`` ("dense" or "sparse") peak of ``dtype``; fp32 has no sparse rate."""
    if dtype == "fp32":
        return "fp32_tflops" if kind == "dense" else None
    return f"{dtype}_{kind}_{'tops' if dtype == 'int8' else 'tflops'}"


@dataclass(frozen=True)
class GPU:
    """One GPU variant. SI units: bytes, bytes/s, FLOP/s, watts. ``memory_bytes`` is the
    datasheet's memory; ``reported_memory_bytes`` what the driver reports (nvidia-smi's or
    rocm-smi's total, ECC as shipped) where a printout is cited, else the datasheet's less ECC's
    share on data-centre GDDR6 cards (:data:`ECC_GDDR6_SHARE`)."""

    name: str
    vendor: str
    architecture: str
    form_factor: str
    segment: str
    launch_year: int
    memory_gb_vendor: float
    memory_bytes: float
    reported_memory_bytes: float
    memory_type: str
    memory_bandwidth: float
    dense_flops: tuple[tuple[str, float], ...]
    sparse_flops: tuple[tuple[str, float], ...]
    tdp_watts: float
    nvlink: str
    nvlink_bandwidth: float
    gpu_link: str
    gpu_link_domain: int
    pcie_gen: int
    mig_instances: int | None  # None where no source states it
    accumulate_note: str
    source: str
    verified_on: str

    def peak_flops(self, dtype: str, *, sparse: bool = False) -> float:
        """Peak FLOP/s (OP/s for int8) of the tensor cores for ``dtype``; dense unless ``sparse``.

        fp32 is the non-tensor rate. Raises a ValueError naming the dtypes this GPU has.
        """
        check_dtype(dtype)
        check_bool("sparse", sparse)
        rates = dict(self.sparse_flops if sparse else self.dense_flops)
        if dtype not in rates:
            kind = "sparse " if sparse else ""
            have = ", ".join(rates) or "none"
            raise ValueError(f"{self.name} has no {kind}{dtype!r} rate; dtype must be one of: {have}")
        return rates[dtype]

    def supports(self, dtype: str) -> bool:
        """Whether the GPU has a dense peak rate for ``dtype`` (a ValueError for an unknown dtype)."""
        return check_dtype(dtype) in dict(self.dense_flops)


def _text(value: object) -> str:
    return "" if pd.isna(value) else str(value)


def _reported_memory(row: pd.Series) -> float:
    if not pd.isna(row["memory_reported_mib"]):
        return float(row["memory_reported_mib"]) * MiB
    ecc = row["segment"] == "datacenter" and str(row["memory_type"]).startswith("GDDR6")
    return float(row["memory_gib"]) * GiB * (ECC_GDDR6_SHARE if ecc else 1.0)


def _from_row(row: pd.Series) -> GPU:
    def rates(kind: str) -> tuple[tuple[str, float], ...]:
        columns = ((d, _rate_column(d, kind)) for d in formats.names("tensor_core"))
        return tuple((d, float(row[c]) * TFLOPS) for d, c in columns if c and not pd.isna(row[c]))

    return GPU(
        name=row["name"],
        vendor=row["vendor"],
        architecture=row["architecture"],
        form_factor=row["form_factor"],
        segment=row["segment"],
        launch_year=int(row["launch_year"]),
        memory_gb_vendor=float(row["memory_gb_vendor"]),
        memory_bytes=float(row["memory_gib"]) * GiB,
        reported_memory_bytes=_reported_memory(row),
        memory_type=row["memory_type"],
        memory_bandwidth=float(row["memory_bandwidth_gbs"]) * GB,
        dense_flops=rates("dense"),
        sparse_flops=rates("sparse"),
        tdp_watts=float(row["tdp_watts"]),
        nvlink=_text(row["nvlink"]),
        nvlink_bandwidth=float(row["nvlink_oneway_gbs"]) * GB,
        gpu_link=_text(row["gpu_link"]),
        gpu_link_domain=int(row["gpu_link_domain"]),
        pcie_gen=int(row["pcie_gen"]),
        mig_instances=None if pd.isna(row["mig_instances"]) else int(row["mig_instances"]),
        accumulate_note=_text(row["accumulate_note"]),
        source=row["source"],
        verified_on=row["verified_on"],
    )


@cache
def _gpus() -> dict[str, GPU]:
    return {row["name"]: _from_row(row) for _, row in _data.table("gpus").iterrows()}


@cache
def _index() -> dict[str, str]:
    index = {}
    for _, row in _data.table("gpus").iterrows():
        for alias in [row["name"], *str(row["aliases"]).split(";")]:
            index.setdefault(_lookup.normalize(alias), row["name"])
    return index


@cache
def vendor_of(architecture: str) -> str | None:
    """The vendor whose catalog GPUs have ``architecture`` (None when no catalog GPU has it)."""
    return next((g.vendor for g in _gpus().values() if g.architecture == architecture), None)


def fitted_value(values: Iterable[tuple[str, float]], architecture: str, default: float) -> float:
    """What a fitted model gives ``architecture`` of its ``(architecture, value)`` pairs: its own value,
    else the mean of those whose architecture comes from the same vendor, else ``default``; a vendor's
    kernel libraries (cuBLAS on NVIDIA's GPUs, hipBLASLt on AMD's) set how close to peak they run."""
    values = list(values)
    own = [v for a, v in values if a == architecture]
    if own:
        return own[0]
    vendor = vendor_of(architecture)
    same = [v for a, v in values if vendor is not None and vendor_of(a) == vendor]
    return sum(same) / len(same) if same else default


def get(name: str) -> GPU:
    """The GPU called ``name``: canonical ("A100-SXM4-80GB") or an alias ("A100 80GB", "4090")."""
    if isinstance(name, GPU):
        return name
    catalog_ = _gpus()
    if isinstance(name, str) and name in catalog_:  # a canonical name: no need to normalise it
        return catalog_[name]
    return catalog_[_lookup.resolve(name, _index(), "GPU")]


def get_all(argument_name: str, names: object) -> list[GPU]:
    """The GPUs of a non-empty list of names; a ValueError names the argument and the bad entry."""
    names = check_list(argument_name, names)
    if not names:
        raise ValueError(f"{argument_name} must name at least one GPU, got an empty list")
    out = []
    for i, name in enumerate(names):
        with argument(f"{argument_name}[{i}]", name):
            out.append(get(name))
    return out


def names() -> list[str]:
    """Canonical names of every GPU in the catalog, in catalog order."""
    return list(_gpus())


def catalog() -> pd.DataFrame:
    """The GPU catalog as stored (TFLOP/s, GB/s, W), one row per variant, with sources."""
    return _data.table("gpus").drop(columns="aliases").copy()
