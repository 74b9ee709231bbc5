"""Units and storage sizes of number formats.

Everything inside the package is SI (bytes, seconds, FLOP, FLOP/s, bytes/s, watts);
these constants convert for display only.
"""

import functools
import numbers
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from math import isfinite

from . import formats

KB, MB, GB, TB = 1e3, 1e6, 1e9, 1e12
KiB, MiB, GiB = 2.0**10, 2.0**20, 2.0**30
TFLOPS = 1e12  # FLOP/s
HOUR, DAY = 3600.0, 86400.0
YEAR = 365.25 * DAY  # a Julian year
MONTH = YEAR / 12

#: ``DTYPE_BITS``: bits per stored element of every number format with a role
#: (:func:`formats.storage_bits`: tf32 tensors stay 32-bit in memory; 4-bit formats include their
#: block scales); ``DTYPES``: those formats. Both are read from the data file on first use.
__getattr__ = formats.lazy_constants(__name__, {"DTYPE_BITS": formats.storage_bits, "DTYPES": formats.names})


#: Largest integer argument: beyond 2**53 integers are no longer exact as floats, and products of
#: such sizes overflow.
MAX_INT = 2**53


def check_choice(name: str, value: object, allowed: tuple) -> object:
    """Return ``value`` if it is one of ``allowed``, else raise a ValueError naming ``name``, the
    value and the choices (a bool or a float is never taken for an int choice)."""
    if isinstance(value, (bool, float)) or value not in allowed:
        raise ValueError(f"{name}={value!r} is not supported; choose one of {', '.join(map(str, allowed))}")
    return value


def check_dtype(dtype: str, allowed: tuple[str, ...] | None = None, name: str = "dtype") -> str:
    """Return ``dtype`` if it is one of ``allowed`` (None: every format with a role), else raise a
    ValueError naming it."""
    return check_choice(name, dtype, formats.names() if allowed is None else allowed)


def dtype_bytes(dtype: str, name: str = "dtype") -> float:
    """Bytes per element of ``dtype`` (fractional for 4-bit formats with their scales)."""
    return formats.storage_bits()[check_dtype(dtype, name=name)] / 8


def check_positive(name: str, value: float, *, integer: bool = False, allow_zero: bool = False) -> None:
    """Raise a ValueError unless ``value`` is a positive (``allow_zero``: non-negative) finite number,
    an int of at most :data:`MAX_INT` when ``integer``; a bool is never a number here."""
    kind = type(value)
    if kind is int or kind is float:  # the common case, without the slower ABC checks
        number = kind is int or not integer
    else:
        number = not isinstance(value, bool) and isinstance(value, numbers.Integral if integer else numbers.Real)
    if number:
        if integer and value > MAX_INT:
            raise ValueError(f"{name} must be at most 2**53, got {value!r}")
        try:
            finite = isfinite(value)
        except OverflowError:  # an int beyond the float range
            finite = False
        if finite and (value >= 0 if allow_zero else value > 0):
            return
    what = ("a non-negative " if allow_zero else "a positive ") + ("integer" if integer else "number")
    raise ValueError(f"{name} must be {what}, got {value!r}")


def check_range(name: str, value: float, low: float, high: float, *, low_open: bool = False,
                high_open: bool = False) -> float:
    """Return ``value`` if it is a finite number in the interval from ``low`` to ``high`` (ends
    excluded where open), else raise a ValueError naming ``name``, the value and the interval."""
    number = not isinstance(value, bool) and isinstance(value, numbers.Real)
    if number and isfinite(value) and (low < value if low_open else low <= value) and \
            (value < high if high_open else value <= high):
        return value
    interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    raise ValueError(f"{name} must be a number in {interval}, got {value!r}")


def check_bool(name: str, value: object) -> None:
    """Raise a ValueError unless ``value`` is True or False."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def check_instance(name: str, value: object, kind: type, what: str) -> object:
    """Return ``value`` if it is a ``kind``, else raise a ValueError naming ``name`` and ``what``
    it must be."""
    if not isinstance(value, kind):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return value


def check_list(name: str, values: object) -> list:
    """``values`` as a list; a ValueError unless it is a list, tuple or other collection (not a string)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ValueError(f"{name} must be a list or tuple, got {values!r}")
    return list(values)


def check_result(value: float, **inputs: object) -> float:
    """Return ``value`` if it is finite and non-negative, else raise a ValueError naming the
    ``inputs`` that produced it (an overflow of the float range)."""
    if not (isfinite(value) and value >= 0):
        given = ", ".join(f"{k}={v!r}" for k, v in inputs.items())
        raise ValueError(f"{given} out of range: the result would be {value}")
    return value


@contextmanager
def argument(name: str, value: object) -> Iterator[None]:
    """Prefix any ValueError raised inside with ``name=value``, so that the message names the
    argument it came from (for example the second of two GPUs)."""
    try:
        yield
    except ValueError as error:
        raise ValueError(f"{name}={value!r}: {error}") from None


def gb(n_bytes: float) -> str:
    """Bytes as decimal gigabytes for prose: 3.5e11 -> '350 GB', 2.1e12 -> '2,100 GB', 1.55e10 -> '15.5 GB'."""
    check_positive("n_bytes", n_bytes, allow_zero=True)
    value = n_bytes / GB
    return f"{value:,.0f} GB" if value >= 100 else f"{value:.3g} GB"


def renamed_keywords(**old_to_new: str) -> Callable[[Callable], Callable]:
    """Decorator: let a function still take the old names of renamed keyword arguments for one
    release (``@renamed_keywords(n_gpus="tp")``), with a DeprecationWarning; both at once is an error."""
    def wrap(function: Callable) -> Callable:
        @functools.wraps(function)
        def call(*args, **kwargs):
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise ValueError(f"{function.__name__}: give {new}= or its old name {old}=, not both")
                    warnings.warn(f"{function.__name__}({old}=...) is now {new}=...", DeprecationWarning, stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)
        return call
    return wrap
