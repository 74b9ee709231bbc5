"""Sourced, tested figures behind the book *Choosing GPUs for Large Models*.

The model layer (``gpus``, ``models``, ``memory``, ``compute``, ``claims``) is pure: numbers in,
frozen dataclasses or DataFrames out, SI units throughout. ``plots`` and ``widgets`` draw
and wire them; import those explicitly (they pull in matplotlib and ipywidgets).
"""

from . import claims, compute, gpus, memory, models

__all__ = ["claims", "compute", "gpus", "memory", "models"]
