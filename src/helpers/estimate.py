"""A predicted quantity with its uncertainty band."""

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from math import isfinite


@dataclass(frozen=True)
class Estimate:
    """low <= expected <= high, all in the same unit."""

    low: float
    expected: float
    high: float

    def __post_init__(self) -> None:
        for name in ("low", "expected", "high"):
            value = getattr(self, name)
            if type(value) is not float and (isinstance(value, bool) or not isinstance(value, numbers.Real)) \
                    or not isfinite(value):  # a plain float first: the common case, without the ABC check
                raise ValueError(f"Estimate {name} must be a finite number, got {value!r}")
        if not self.low <= self.expected <= self.high:
            raise ValueError(f"Estimate needs low <= expected <= high, got {self.low}, {self.expected}, {self.high}")

    @classmethod
    def exact(cls, value: float) -> "Estimate":
        """A band of zero width."""
        return cls(value, value, value)

    def map(self, f: Callable[[float], float]) -> "Estimate":
        """Apply a monotone ``f`` to each end and the middle (a decreasing f swaps the ends)."""
        low, high = sorted((f(self.low), f(self.high)))
        return Estimate(low, f(self.expected), high)

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def __mul__(self, factor: float) -> "Estimate":
        return self.map(lambda v: v * factor)

    __rmul__ = __mul__

    def __add__(self, other: "Estimate | float") -> "Estimate":
        """End to end (low + low, high + high): the range when every part is at its low or its high
        end together, as when costs that move with one market are added."""
        o = other if isinstance(other, Estimate) else Estimate.exact(other)
        return Estimate(self.low + o.low, self.expected + o.expected, self.high + o.high)

    __radd__ = __add__
