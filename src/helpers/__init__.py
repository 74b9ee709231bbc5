"""Sourced, tested figures behind the book *Choosing GPUs for Large Models*.

The model layer (``gpus``, ``models``, ``memory``, ``compute``, ``comm``, ``cost``, ``select``,
``claims`` and the modules they use) is pure: numbers in,
frozen dataclasses or DataFrames out, SI units throughout. ``plots`` and ``widgets`` draw
and wire them; import those explicitly (they pull in matplotlib and ipywidgets).
"""

from . import claims, comm, compute, cost, gpus, memory, models, select

__all__ = ["claims", "comm", "compute", "cost", "gpus", "memory", "models", "select"]
