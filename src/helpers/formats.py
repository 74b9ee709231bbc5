"""The number formats, the bits each stores, and the roles each can play: one vocabulary for
every function, widget and the selector (``data/number_formats.csv``).

Roles: ``weights`` (how inference weights may be stored), ``kv_cache`` (how a KV cache may be
stored), ``training`` (the compute format of a training step) and ``tensor_core`` (a format
with a peak rate in the GPU catalog). A stored weight format computes in ``computes_in`` where a
GPU has that tensor-core rate (FP8 on Hopper, FP4 on Blackwell) and, where ``native_vendors``
names some, is made by one of them (NVFP4's E4M3 block scales: NVIDIA only); elsewhere it is
dequantized to 16 bits on the CUDA cores like the kernel family ``dequantized_as`` (int8, int4),
or, where that is empty, read as it is.
"""

import warnings
from collections.abc import Callable
from functools import cache

import pandas as pd

from . import _data

ROLES = ("weights", "kv_cache", "training", "tensor_core")


@cache
def _table() -> pd.DataFrame:
    table = _data.table("number_formats").set_index("dtype")
    return table.assign(roles=table["roles"].fillna("").str.split(";"), computes_in=table["computes_in"].fillna(""),
                        dequantized_as=table["dequantized_as"].fillna(""),
                        native_vendors=table["native_vendors"].fillna("").str.split(";"))


@cache
def names(role: str | None = None) -> tuple[str, ...]:
    """The formats that can play ``role`` (one of :data:`ROLES`), in the table's order; all of
    them that play any role when ``role`` is None."""
    if role is not None and role not in ROLES:
        raise ValueError(f"role={role!r} is not supported; choose one of {', '.join(ROLES)}")
    roles = _table()["roles"]
    return tuple(d for d, r in roles.items() if (role in r if role else any(r)))


@cache
def storage_bits() -> dict[str, float]:
    """Bits per stored value of every format with a role, block scales included (the table's
    ``storage_bits``, sourced per row)."""
    bits = _table()["storage_bits"]
    return {d: float(bits[d]) for d in names()}


def computes_in(dtype: str) -> str:
    """The tensor-core format weights stored as ``dtype`` feed, where a GPU has it ('' if none)."""
    return _column("computes_in")[_known(dtype)]


def native_on(dtype: str, vendor: str) -> bool:
    """Whether ``vendor``'s tensor cores can read ``dtype`` as it is, given the rate of its
    ``computes_in`` format (every vendor's, unless the table's ``native_vendors`` names some)."""
    vendors = _column("native_vendors")[_known(dtype)]
    return vendors == [""] or vendor in vendors


def dequantized_as(dtype: str) -> str:
    """The dequantizing kernel family (int8, int4) of ``dtype`` weights on GPUs that cannot
    compute in it ('' for formats read as they are)."""
    return _column("dequantized_as")[_known(dtype)]


def _known(dtype: object) -> str:
    if isinstance(dtype, str) and dtype in names():
        return dtype
    raise ValueError(f"dtype={dtype!r} is not supported; choose one of {', '.join(names())}")


@cache
def _column(name: str) -> dict[str, str]:
    return _table()[name].to_dict()


def lazy_constants(module: str, constants: dict[str, Callable[[], object]],
                   renamed: dict[str, str] | None = None) -> Callable[[str], object]:
    """A module ``__getattr__`` (PEP 562) that computes ``constants`` from the data files on first
    use, so that importing a module reads nothing, and answers the old names in ``renamed`` (old ->
    new) with a DeprecationWarning for one release."""
    renamed = renamed or {}

    def __getattr__(name: str) -> object:
        if name in renamed:
            warnings.warn(f"{module}.{name} is now {module}.{renamed[name]}", DeprecationWarning, stacklevel=2)
            name = renamed[name]
        if name in constants:
            return constants[name]()
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
