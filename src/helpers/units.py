"""Units and storage sizes of number formats.

Everything inside the package is SI (bytes, seconds, FLOP, FLOP/s, bytes/s, watts);
these constants convert for display only.
"""

import numbers

KB, MB, GB, TB = 1e3, 1e6, 1e9, 1e12
KiB, MiB, GiB = 2.0**10, 2.0**20, 2.0**30
TFLOPS = 1e12  # FLOP/s
HOUR, DAY = 3600.0, 86400.0

#: Bits per stored element. fp32/tf32: tf32 is a compute mode; tensors stay 32-bit in memory.
#: int4: 4 bits plus one fp16 scale and one fp16 zero point per group of 128 weights, as in
#: GPTQ (Frantar et al. 2022, arXiv:2210.17323) and AWQ (Lin et al. 2023, arXiv:2306.00978).
#: nf4: 4 bits plus double-quantized block constants, 0.127 bits/parameter
#: (Dettmers et al. 2023, QLoRA, arXiv:2305.14314, Sec. 3 "Double Quantization").
DTYPE_BITS: dict[str, float] = {
    "fp32": 32.0,
    "tf32": 32.0,
    "fp16": 16.0,
    "bf16": 16.0,
    "fp8": 8.0,
    "int8": 8.0,
    "int4": 4.0 + 32.0 / 128,
    "nf4": 4.0 + 0.127,
}
DTYPES = tuple(DTYPE_BITS)


def check_dtype(dtype: str, allowed: tuple[str, ...] = DTYPES, name: str = "dtype") -> str:
    """Return ``dtype`` if it is one of ``allowed``, else raise a ValueError naming it."""
    if dtype not in allowed:
        raise ValueError(f"{name}={dtype!r} is not supported; choose one of {', '.join(allowed)}")
    return dtype


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of ``dtype`` (fractional for 4-bit formats with their scales)."""
    return DTYPE_BITS[check_dtype(dtype)] / 8


def check_positive(name: str, value: float, *, integer: bool = False) -> None:
    """Raise a ValueError unless ``value`` is a positive number (an int when ``integer``)."""
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind) or not value > 0 or value != value or value == float("inf"):
        what = "a positive integer" if integer else "a positive number"
        raise ValueError(f"{name} must be {what}, got {value!r}")


def gb(n_bytes: float) -> str:
    """Bytes as decimal gigabytes for prose: 3.5e11 -> '350 GB', 2.1e12 -> '2,100 GB', 1.55e10 -> '15.5 GB'."""
    value = n_bytes / GB
    return f"{value:,.0f} GB" if value >= 100 else f"{value:.3g} GB"
