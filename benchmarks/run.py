"""Measure how fast the book answers: each panel's redraw, the selector's sweep, the pure
computations alone. Writes benchmarks/results.md.

    python benchmarks/run.py
"""

import platform
import statistics
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from helpers import compute, memory, select, widgets  # noqa: E402

SWEEPS = {  # control values to step through for each panel: realistic slider moves
    "training_memory": [{"micro_batch_size": b} for b in (1, 2, 4, 8, 16)] + [{"zero_stage": z} for z in (0, 1, 2, 3)],
    "inference_memory": [{"batch_size": b} for b in (1, 4, 16, 64)] + [{"weight_dtype": d} for d in ("int8", "int4", "bf16")],
    "training_vs_inference": [{"gpu": g} for g in ("A100-SXM4-80GB", "H100-SXM5-80GB", "L4-24GB", "RTX-4090-24GB")],
    "training_time": [{"n_gpus": n} for n in (8, 64, 512, 4096)],
    "serving": [{"batch_size": b} for b in (1, 8, 32, 128)],
    "data_parallel": [{"nics_per_node": n} for n in (1, 2, 4, 8)],
    "training_cost": [{"n_gpus": n} for n in (8, 64, 512)],
    "rent_or_buy": [{"utilization": u} for u in (0.3, 0.5, 0.7, 0.9)],
    "selector": [{"task": t} for t in ("pretrain", "serve", "qlora")],
    "wait_or_start": [{"wait_months": m} for m in (0.0, 3.0, 6.0, 12.0)],
}
PURE = {
    "memory.training": lambda: memory.training("llama-2-70b", zero_stage=3, dp=64),
    "memory.longest_context_table": lambda: memory.longest_context_table("llama-3-8b"),
    "compute.decode_throughput": lambda: compute.decode_throughput("llama-2-70b", "H100", n_gpus=2),
    "select.recommend (pretrain)": lambda: select.recommend("llama-2-70b", tokens=2e12),
    "select.recommend (serve)": lambda: select.recommend("llama-2-7b", task="serve"),
}


def timed(f, repeat: int = 1) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        out.append(time.perf_counter() - start)
    return out


def p95(values: list[float]) -> float:
    return sorted(values)[min(len(values) - 1, round(0.95 * (len(values) - 1)))]


def main() -> None:
    lines = ["# Benchmarks", "", f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}.",
             "Times in milliseconds; panels include recomputing, redrawing and rendering the PNG.", "",
             "| panel | median | 95th percentile | moves |", "| --- | --- | --- | --- |"]
    for name, factory in widgets.panels().items():
        panel = factory()
        times = [t for values in SWEEPS[name] * 2 for t in timed(lambda: panel.set(**values))]
        lines.append(f"| {name} | {statistics.median(times) * 1000:.0f} | {p95(times) * 1000:.0f} | {len(times)} |")
    lines += ["", "| computation | median | 95th percentile |", "| --- | --- | --- |"]
    for name, f in PURE.items():
        times = timed(f, repeat=10)
        lines.append(f"| {name} | {statistics.median(times) * 1000:.1f} | {p95(times) * 1000:.1f} |")
    Path(__file__).with_name("results.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
