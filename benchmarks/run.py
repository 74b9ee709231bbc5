"""Measure how fast and how light the book is; write benchmarks/results.md.

    python benchmarks/run.py          # panels, their computations alone, the selector's sweep
    python benchmarks/run.py --full   # also: a clean build, the test suite, each notebook's kernel
                                      # peak memory and each HTML page's weight (several minutes)

Panel times run from ``panel.set(...)`` to the redrawn PNG and table over a sweep of realistic
control moves; the same moves timed on the panel's computation alone show what drawing costs.
"""

import argparse
import gc
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import matplotlib

matplotlib.use("Agg")

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from helpers import _data, calibration, memory, planner, plots, select, serving, steptime, traffic, validation, widgets  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"panel p95 (ms)": 100, "selector sweep (ms)": 50, "clean build (s)": 180, "kernel peak (MB)": 300}
REPEATS = 3  # each sweep is stepped through three times (panels cache nothing, so a revisit costs a full redraw)
SWEEPS = {  # control values to step through for each panel: realistic slider moves
    "training_memory": [{"micro_batch_size": b} for b in (2, 4, 8, 16, 32)] + [{"zero_stage": z} for z in (1, 2, 3, 0)],
    "inference_memory": [{"batch_size": b} for b in (4, 16, 64, 2)] + [{"weight_dtype": d} for d in ("int8", "int4", "fp8")],
    "engine_start": [{"max_model_len": n} for n in (8192, 131072, 65536)] + [{"tp": n} for n in (4, 8, 2)],
    "training_vs_inference": [{"gpu": g} for g in ("A100-SXM4-80GB", "L4-24GB", "RTX-4090-24GB", "B200-HGX-192GB")],
    "training_time": [{"n_gpus": n} for n in (8, 64, 512, 4096)],
    "serving": [{"batch_size": b} for b in (8, 32, 128, 2)],
    "data_parallel": [{"nics_per_node": n} for n in (1, 2, 4, 8)],
    "parallelism": [{"n_gpus": n} for n in (64, 1024, 4096, 512)] + [{"gpu": g} for g in ("L40S-48GB", "H100-SXM5-80GB")],
    "training_cost": [{"n_gpus": n} for n in (8, 512, 2048)],
    "rent_or_buy": [{"utilization": u} for u in (0.3, 0.5, 0.9, 0.6)],
    "selector": [{"task": t} for t in ("serve", "qlora", "finetune", "pretrain")],
    "wait_or_start": [{"wait_months": m} for m in (3.0, 6.0, 12.0, 1.0)],
}


def _dense() -> pd.DataFrame:
    return select.recommend("llama-2-70b", tokens=2e12)


def _moe() -> pd.DataFrame:
    return select.recommend("qwen3-30b-a3b", tokens=1e12)


def _long() -> pd.DataFrame:
    return select.recommend("llama-3-70b", tokens=1e11, seq_len=131072)


def _traffic() -> pd.DataFrame:
    return select.recommend("llama-3-70b", task="serve", requests_per_s=5, prompt_len=2048, output_len=512,
                            ttft_s=2.0, tpot_s=0.05)


SELECTOR = {
    "pretrain Llama 2 70B on 2T tokens (a deadline or budget move)": _dense,
    "pretrain Llama 2 70B on 2T tokens (cold caches: a new model)": lambda: _cold(_dense),
    "pretrain Qwen3-30B-A3B on 1T tokens (cold caches: a mixture of experts, expert parallelism tried)": lambda: _cold(_moe),
    "pretrain Llama 3 70B on 100B tokens of 131k-token sequences (cold caches: context parallelism tried)":
        lambda: _cold(_long),
    "serve Llama 2 7B at batch 1 (a latency or budget move)": lambda: select.recommend("llama-2-7b", task="serve"),
    "serve Llama 2 7B at batch 1 (cold caches)": lambda: _cold(lambda: select.recommend("llama-2-7b", task="serve")),
    "serve Llama 3 70B at 5 requests/s (a latency or budget move)": _traffic,
    "serve Llama 3 70B at 5 requests/s (cold caches)": lambda: _cold(_traffic),
    "QLoRA Llama 2 70B (a deadline or budget move)": lambda: select.recommend("llama-2-70b", task="qlora", tokens=1e8),
}


def _cold(f):
    """``f()`` after emptying the planner's and the serving caches, as when a reader picks another
    model or moves the prompt or output length."""
    for cached in (planner._block, planner._needs, planner._catalog, select._serving, traffic._replicas,
                   serving._per_gpu):
        cached.cache_clear()
    return f()


def timed(f, repeat: int = 1) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        out.append(time.perf_counter() - start)
    return out


def host_reference() -> float:
    """Seconds this host takes for a fixed workload that does not depend on the book's code (a
    pure-Python loop and small numpy operations, the mix the panels and the step model run): the
    yardstick to compare before comparing this file's times across hosts."""
    def work():
        sum(i * i for i in range(300_000))
        a = np.arange(4096.0)
        for _ in range(2000):
            a = np.maximum(a * 1.0001, a - 1.0)
    return statistics.median(timed(work, repeat=5))


def p95(values: list[float]) -> float:
    return sorted(values)[min(len(values) - 1, round(0.95 * (len(values) - 1)))]


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} | {p95(values) * 1000:.0f}"


def panels() -> list[str]:
    lines = ["A move redraws in place: the figure keeps its axes and ticks (`plots.subplots`, `plots.empty`), bars are "
             "one collection per style (`plots.bars`), the first layout is reused until a drawn text would leave the "
             "figure, the canvas keeps each string's bitmap (set once, when the string is first measured) and its "
             "layout (matplotlib lays each tick label out up to three times a drawing) and checks each text's ink "
             "while drawing (`plots.Canvas`), each axis whose place, limits, ticks, labels and their colours did not "
             "change is drawn again from what its last drawing drew (`plots._replayed`: its tick marks, grid lines "
             "and texts, the same pixels, tested panel by panel), value labels are reused (`plots.value_labels`), "
             "and the PNG (RGB: the figures are opaque; rows unfiltered, zlib level 1: about 4 ms, half of what Pillow's "
             "encoder takes) is written from the canvas without a second drawing. A "
             "training plan for one GPU count plans the panels' other counts in the same vectorised search "
             "(`planner.COUNTS`), so the next slider stop is planned already. As in every chapter's setup cell, "
             "what the imports built is frozen out of the garbage collector's scans (`gc.freeze()`), which "
             "otherwise stall a move now and then by about 0.1 s. What remains is mostly the artists that change "
             "(bars, value labels of 33-GPU charts, legends), the PNG and the pandas Styler table; the slowest moves are "
             "the first ones, whose labels are new strings. Times depend on the host: an earlier 2-core host took up to "
             "twice these times (inference_memory's p95 88-107 ms there, before the PNG writer).", "",
             "| panel | redraw median | redraw p95 | computation median | computation p95 | moves |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name, factory in widgets.panels().items():
        panel, pure = factory(), factory()
        redraw = [t for values in SWEEPS[name] * REPEATS for t in timed(lambda: panel.set(**values))]
        compute = []
        for values in SWEEPS[name] * REPEATS:  # the same moves, computing only (result and table, no figure)
            state = pure.values() | values
            compute += timed(lambda: pure._table(pure._compute(**state), **state))
        lines.append(f"| {name} | {ms(redraw)} | {ms(compute)} | {len(redraw)} |")
    return lines


def _rows(sweep, function: str) -> int:
    """Rows ``steptime.<function>`` computed in a cold ``sweep``: the layouts ``terms`` timed, or the
    distinct combinations ``_micro_batch`` and ``_data_parallel`` were given."""
    with mock.patch.object(steptime, function, wraps=getattr(steptime, function)) as spy:
        _cold(sweep)
    return sum(len(c.kwargs["tp"]) if function == "terms" else np.size(c.args[-1]["bw"]) for c in spy.call_args_list)


def selector() -> list[str]:
    lines = ["Training sweeps plan 13 GPU counts per GPU. The candidate layouts of all counts are one masked numpy grid "
             "per model (`planner._block`, built for an 8-GPU NVLink domain: tensor parallelism stops at 8, so a "
             "72-GPU domain plans as one, and a narrower domain's grid and memory are the 8-GPU grid's rows with "
             "no wider tensor parallelism), their memory one vectorised call (`planner._needs`). Where two global "
             "batches qualify for a layout, the grid holds only the larger: the same layout with more micro-batches "
             "a step is never slower per sequence and needs the same memory (a property test checks both), and "
             "dropping the smaller takes nearly half of the layouts out of the sweep with the same plan chosen for "
             "every count where a layout fits. Only layouts that fit (full recompute only where the same layout without recompute "
             "does not) are kept, and of those only the plain 1F1B sibling (vpp 1) is timed, in one vectorised call "
             "for the whole catalog (`planner.catalog`: each GPU's rates, `steptime.rates`, repeated over its own "
             f"layouts, `steptime.stacked`; {_rows(_dense, 'terms'):,} layouts for Llama 2 70B, half the time of one "
             "call per GPU, whose fixed cost of some 150 numpy operations was a third of the sweep; "
             f"{_rows(_moe, 'terms'):,} layouts for Qwen3-30B-A3B, whose expert parallelism multiplies them; "
             f"{_rows(_long, 'terms'):,} for Llama 3 70B at 131k tokens, whose context parallelism of "
             f"{planner.CP_DEGREES[1]} to {planner.CP_DEGREES[-1]} "
             "does too, where a sequence is long enough to split: `planner.context_degrees`, none at 2k or 4k "
             "tokens, so that the sweeps above time the layouts they did without it). A micro-batch's work and the data-parallel "
             "collectives depend on a few of a layout's values only, so `steptime.terms` computes them once per "
             "distinct GPU, tensor-parallel degree, micro-batch and expert-parallel degree (the collectives: per "
             "GPU, tp, pp, dp and ep) and spreads them back (`steptime._per_distinct`, a hash of the "
             f"combinations with `pandas.factorize`: {_rows(_moe, '_micro_batch'):,} micro-batch shapes and "
             f"{_rows(_moe, '_data_parallel'):,} data-parallel groups among the MoE sweep's layouts; "
             "bit-identical, tested, and half the time of the MoE call). An interleaved variant differs from its "
             "plain sibling only in its pipeline sends and bubble, which `steptime.interleaved` derives where the "
             "sibling was timed, as one array of times per sequence for each vpp (less than half the layouts are "
             "timed, and only the plan a count keeps gets its interleaved terms). The best of each count is "
             "picked in one pass over every GPU's counts (`planner._first_of_each`) and built without re-checking the "
             "grid's valid values (neither its `Layout` nor its `StepTime`); of a GPU's options only the one it "
             "keeps gets its verdict attached. Plans are cached per model, catalog and batch: a deadline or budget move re-ranks the "
             "catalog without re-planning it; a new model (the cold rows) plans it all again. A serving sweep "
             "times all of a GPU's formats at one tensor-parallel degree in one array of decoding steps and prefills "
             "(`serving.batch_seconds`; at a fixed batch `compare.serving_estimates_for`, bit-identical to asking "
             "format by format and half the time); at a traffic level it sizes one replica per GPU, degree and "
             "format, its largest batch from the memory total as a function of the batch.",
             "",
             "| sweep | median | p95 | GPUs ranked |", "| --- | --- | --- | --- |"]
    # Each sweep is timed 30 times in three rounds over all sweeps, a minute or so apart: a burst of
    # load on a shared 2-core host, which doubled one sweep's every time in some runs, spoils one round at most.
    times = {name: [] for name in SELECTOR}
    for _ in range(3):
        for name, f in SELECTOR.items():
            f()  # warm the data caches, as a live panel has
            times[name] += timed(f, repeat=10)
    lines += [f"| {name} | {ms(times[name])} | {len(f())} |" for name, f in SELECTOR.items()]
    return lines


def kernel_peak_mb(path: Path) -> float:
    """Peak resident memory of a fresh kernel that runs the notebook at ``path`` (Linux VmHWM)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    peak = {}

    def record(**_):
        status = Path(f"/proc/{client.km.provisioner.process.pid}/status").read_text()
        peak["kB"] = int(re.search(r"VmHWM:\s+(\d+) kB", status)[1])

    client.on_cell_executed = record  # VmHWM is a high-water mark: the last reading is the peak
    client.execute()
    return peak["kB"] / 1024


def page_weights(html: Path) -> list[str]:
    """Each page of the table of contents: its HTML and the images it shows, in kB."""
    lines = ["| page | HTML (kB) | images (kB) | total (kB) |", "| --- | --- | --- | --- |"]
    for page in sorted(html.glob("book/*.html")) + sorted(html.glob("notebooks/*.html")):
        text = page.read_text(encoding="utf-8")
        images = sum((page.parent / src).stat().st_size for src in set(re.findall(r'<img[^>]+src="([^"]+)"', text))
                     if not src.startswith(("http", "data:")))
        size = page.stat().st_size
        lines.append(f"| {page.relative_to(html)} | {size / 1e3:.0f} | {images / 1e3:.0f} | {(size + images) / 1e3:.0f} |")
    return lines


def full() -> list[str]:
    lines = []
    with tempfile.TemporaryDirectory() as out:
        command = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(ROOT), "--path-output", out,
                   "--warningiserror", "--nitpick", "--keep-going", "--quiet"]
        build = timed(lambda: subprocess.run(command, check=True, capture_output=True))
        weights = page_weights(Path(out) / "_build" / "html")
    tests = timed(lambda: subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ROOT,
                                         check=True, capture_output=True))
    lines += ["## Build and tests", "", "| what | seconds |", "| --- | --- |",
              f"| clean build, every chapter executed (target {TARGETS['clean build (s)']} s) | {build[0]:.0f} |",
              f"| test suite (`pytest`, browser tests included) | {tests[0]:.0f} |", "",
              f"## Kernel peak memory (target under {TARGETS['kernel peak (MB)']} MB; Binder gives 2 GB)", "",
              "| notebook | peak resident memory (MB) |", "| --- | --- |"]
    lines += [f"| {p.name} | {kernel_peak_mb(p):.0f} |" for p in sorted((ROOT / "notebooks").glob("*.ipynb"))]
    return lines + ["", "## Page weight", ""] + weights


def training_validation() -> list[str]:
    """The step model against published runs: the calibration/test split, out-of-sample errors by family,
    and, where benchmarks/peer_llm_analysis.csv exists, llm-analysis on the same rows."""
    runs = validation.training_runs()
    steady = runs[~runs["end to end"]].copy()
    peer_path = Path(__file__).with_name("peer_llm_analysis.csv")
    peer = pd.read_csv(peer_path) if peer_path.exists() else None
    table = _data.table("training_runs").set_index("id")
    published_step = {i: table.loc[i, "global_batch"] * table.loc[i, "seq_len"] / (p * n)
                      for i, p, n in zip(steady["id"], steady["published"], steady["GPUs"])}
    cal = calibration.steptime.default_calibration()
    params = ", ".join([f"GEMM efficiency {k} {v:.3f}" for k, v in cal.gemm_efficiency] +
                       [f"element-wise passes {cal.elementwise_passes:.2f}"] +
                       [f"attention efficiency {k} {v:.3f}" for k, v in cal.attention_efficiency] +
                       [f"overlap efficiency {cal.overlap_efficiency:.2f}"])
    low, high = calibration.band("H100", "bf16")
    lines = ["## Training step time against published runs (out of sample)", "",
             f"Fitted on the calibration families only ({params}); band {low:.3f}-{high:.3f} x the predicted time, from "
             "the calibration runs' leave-one-family-out errors. Test families took part in neither. Error: predicted / "
             "published step time - 1. llm-analysis 0.2.2 (`benchmarks/peer_llm_analysis.py`) with its defaults and with its "
             "documented training efficiency (0.5 of peak), on the same rows and layouts; it models neither FP8 nor "
             "pipeline bubbles nor data-parallel communication.", "",
             "| split | family | runs | ours: median abs. error | ours: inside band | llm-analysis defaults | llm-analysis tuned |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for (split, family), g in steady.groupby(["split", "family"], sort=False):
        cells = [split, family, str(len(g)), f"{g['time error'].abs().median():.1%}", f"{g['inside band'].mean():.0%}"]
        for setting in ("defaults", "tuned"):
            if peer is None:
                cells.append("not run")
                continue
            p = peer[(peer["setting"] == setting) & peer["id"].isin(g["id"]) & (peer["status"] == "ok")]
            errors = [s / published_step[i] - 1 for i, s in zip(p["id"], p["predicted_step_seconds"])]
            cells.append(f"{statistics.median(map(abs, errors)):.1%} ({len(errors)} runs)" if errors else "cannot model")
        lines.append("| " + " | ".join(cells) + " |")
    test = steady[steady["split"] == "test"]
    e2e = runs[runs["end to end"]]
    named = test[test["family"].isin(validation.REFERENCE_FAMILIES)]
    lines += ["", f"All {len(test)} test runs: median abs. error {test['time error'].abs().median():.1%}, "
              f"{test['inside band'].mean():.0%} inside the band. The {len(named)} runs of the families the "
              f"model set out to match (`validation.REFERENCE_FAMILIES`, target 5 %): {named['time error'].abs().median():.1%}, "
              f"{named['inside band'].mean():.0%} inside. The {test['short step'].sum()} whose step the model puts under "
              f"{steptime.SHORT_STEP_S * 1000:.0f} ms (`steptime.SHORT_STEP_S`, a known miss; families: "
              f"{', '.join(sorted(set(test.loc[test['short step'], 'family'])))}) are "
              f"{test.loc[test['short step'], 'time error'].abs().median():.0%} off in median; "
              f"without them, {test.loc[~test['short step'], 'time error'].abs().median():.1%} and "
              f"{test.loc[~test['short step'], 'inside band'].mean():.0%} inside.", "",
              f"Whole runs ({len(e2e)}, GPU-hours; the published layout where there is one, else the planner's; the goodput "
              f"band unless the GPU-hours were derived from a steady throughput): median abs. error "
              f"{e2e['time error'].abs().median():.1%}, {e2e['inside band'].mean():.0%} inside the band. llm-analysis, "
              "where the run published its layout: its step time x the run's steps x its GPUs (no downtime).", "",
              "| run | GPUs | layout | published GPU-hours | predicted | error | inside band | llm-analysis defaults | "
              "llm-analysis tuned |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    peer_errors = {setting: whole_run_peer(e2e, table, peer, setting) for setting in ("defaults", "tuned")}
    for _, r in e2e.iterrows():
        cells = [r["run"], f"{r['GPUs']:,} {r['GPU']}", r["layout"], f"{r['published']:,.0f}", f"{r['predicted']:,.0f}",
                 f"{r['time error']:+.0%}", "yes" if r["inside band"] else "no"]
        cells += [f"{peer_errors[s][r['id']]:+.0%}" if r["id"] in peer_errors[s] else "cannot model" for s in peer_errors]
        lines.append("| " + " | ".join(cells) + " |")
    modelled = e2e[e2e["id"].isin(peer_errors["tuned"])]
    if len(modelled):
        lines += ["", f"On the {len(modelled)} whole runs llm-analysis can model: ours "
                  f"{modelled['time error'].abs().median():.1%} median abs. error, llm-analysis defaults "
                  f"{statistics.median(map(abs, peer_errors['defaults'].values())):.1%}, tuned "
                  f"{statistics.median(map(abs, peer_errors['tuned'].values())):.1%}."]
    lines += ["", "Against a plain constant (`half-peak error` of `validation.training_runs`: every FLOP of the layout, "
              "recomputation included, at half the dense peak, no communication, no downtime): steady-state test runs "
              f"{test['time error'].abs().median():.1%} (ours) against {test['half-peak error'].abs().median():.1%}; "
              f"whole runs {e2e['time error'].abs().median():.1%} against {e2e['half-peak error'].abs().median():.1%}."]
    return lines


def whole_run_peer(e2e: pd.DataFrame, table: pd.DataFrame, peer: pd.DataFrame | None, setting: str) -> dict[str, float]:
    """llm-analysis's GPU-hours error (predicted / published - 1) for each whole run it could model: its
    step time (``setting``) times the run's steps (tokens over the global batch) times its GPUs."""
    if peer is None:
        return {}
    ok = peer[(peer["setting"] == setting) & (peer["status"] == "ok")].set_index("id")["predicted_step_seconds"]
    out = {}
    for i, gpus_used, published in zip(e2e["id"], e2e["GPUs"], e2e["published"]):
        if i in ok.index:
            steps = table.loc[i, "tokens"] / (table.loc[i, "global_batch"] * table.loc[i, "seq_len"])
            out[i] = ok[i] * steps * gpus_used / 3600 / published - 1
    return out


def inference_validation() -> list[str]:
    """The serving step model against published inference runs: calibration and test groups, the
    out-of-sample errors by kind, and the rows outside the band."""
    runs = validation.inference_runs()
    cal = serving.default_calibration()
    params = ", ".join([f"bandwidth fraction {cal.bandwidth_fraction:.3f}", f"overlap {cal.overlap:.3f}",
                        f"{cal.layer_seconds * 1e6:.1f} us per layer and step", f"KV re-reads {cal.kv_rereads:.2f}"] +
                       [f"compute fraction {k} {v:.3f}" for k, v in cal.compute_fraction] +
                       [f"{k} dequantization {v:.2f} operations per byte" for k, v in cal.dequant_ops])
    low, high = calibration.serving_band()
    lines = ["## Serving step time against published runs (out of sample)", "",
             f"Fitted on the calibration groups only ({params}); band {low:.3f}-{high:.3f} x the predicted time, from the "
             "calibration rows' leave-one-group-out errors (pooled over kinds). Error: predicted / published - 1 in the "
             "row's unit (tokens/s for decoding and static batches, seconds for prefill). A decoding kernel that does not "
             f"split the KV cache (NIM and the static batches below) reads it at {cal.kv_block_bandwidth / 1e9:.1f} GB/s per thread "
             "block, fitted on NIM's single-client runs (the trend of their error with the context).", "",
             "| split | group | kind | rows | batch | median abs. error | inside band |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for (split, group, kind), g in runs.groupby(["split", "group", "kind"], sort=False):
        batch = f"{g['batch'].min()}" if g["batch"].nunique() == 1 else f"{g['batch'].min()}-{g['batch'].max()}"
        lines.append(f"| {split} | {group} | {kind} | {len(g)} | {batch} | {g['error'].abs().median():.1%} | "
                     f"{g['inside band'].mean():.0%} |")
    test = runs[runs["split"] == "test"]
    lines += ["", "Test rows by kind: " + "; ".join(
        f"{kind} {g['error'].abs().median():.1%} median abs. error ({len(g)} rows)" for kind, g in test.groupby("kind")) +
        f"; {int(test['inside band'].sum())} of {len(test)} inside the band. Outside: " +
        ", ".join(f"{r['id']} ({r['model']} on {r['GPUs']} {r['GPU']}, {r['framework']}, {r['error']:+.0%})"
                  for _, r in runs[~runs["inside band"]].iterrows()) + "."]
    loaded = validation.loaded_runs()
    fits = loaded[loaded["fits"]]
    lines += ["", f"Under load (`traffic.closed_loop`, {len(loaded)} closed-loop NIM rows at {loaded['clients'].min()}-"
              f"{loaded['clients'].max()} clients; the single-client rows fit the per-block bandwidth of NIM's unsplit "
              f"cache read, {calibration.HOST_FIT_MODEL}'s with more clients and prompts no longer than their outputs the "
              f"host's {cal.host_seconds * 1e6:.1f} us per sequence and step, and the other model's rows with more clients "
              "fit nothing; "
              f"{len(fits)} where the batch fits the KV cache): median error (signed median in brackets)", "",
              "| clients | rows | ms per token | output tokens/s | first token |", "| --- | --- | --- | --- | --- |"]
    tested = fits[fits["split"] == "test"]
    fitted = fits[(fits["split"] == "calibration") & (fits["clients"] > 1)]
    for clients, g in [(f"test ({', '.join(sorted(tested['model'].unique()))}), 2 or more", tested),
                       (f"calibration ({', '.join(sorted(fitted['model'].unique()))}), 2 or more", fitted),
                       ("1 (calibration)", fits[fits["clients"] == 1])] + \
            [(f"{c}, test", g) for c, g in tested.groupby("clients")]:
        cells = [f"{g['error ' + k].abs().median():.1%} ({g['error ' + k].median():+.0%})"
                 for k in ("ms per token", "output tokens/s", "first token (ms)")]
        lines.append(f"| {clients} | {len(g)} | " + " | ".join(cells) + " |")
    static = validation.static_batch_runs()
    lines += ["", f"Static batches of TensorRT-LLM 0.9 (`validation.static_batch_runs`: {len(static):,} runs of NVIDIA's DLI "
              "course data, five dense models on six GPUs in fp16 and FP8, none fitted): median abs. error (signed median in "
              "brackets), and the share inside the serving band", "",
              "| rows | runs | decoding step | inside band | first token | inside band |", "| --- | --- | --- | --- | --- | --- |"]
    groups = [("all", static)] + [(f"batch {name}", static[rows]) for name, rows in (
        ("1", static["batch"] == 1), ("2-31", static["batch"].between(2, 31)), ("32-511", static["batch"].between(32, 511)),
        ("512 or more", static["batch"] >= 512))] + [(f"{n} GPUs", g) for n, g in static.groupby("GPUs")] + \
        [(f"{gpu}, {w}", g) for (gpu, w), g in static.groupby(["GPU", "weights"])]
    for name, g in groups:
        cells = [f"{g['error ' + k].abs().median():.1%} ({g['error ' + k].median():+.0%}) | {g['inside band ' + k].mean():.0%}"
                 for k in ("ms per token", "first token (ms)")]
        lines.append(f"| {name} | {len(g)} | " + " | ".join(cells) + " |")
    peak = validation.throughput_runs()
    plain, fp4 = peak[~peak["caveat"]], " and ".join(g for g, _ in traffic.FORMAT_MISS)
    lines += ["", f"Maximum throughput of TensorRT-LLM (`validation.throughput_runs`: {len(peak)} runs of its published "
              "perf-overview tables, releases 0.17 and 1.0, every request queued at once, fixed prompt and output lengths, "
              "none fitted) against `traffic.saturated`, each request's whole output reserved at admission as TensorRT-LLM's "
              f"scheduler does, at most {validation.TRTLLM_BENCH_MAX_BATCH:,} sequences: median abs. error of the output "
              "tokens/s (signed median in brackets), the share inside the serving band, and the same replica holding "
              "sequences at their mean context instead (the default, an engine that grows the cache on demand). The "
              "selector's caveats (`traffic.peak_note`) mark the three misses: tensor parallelism over a GPU link that "
              f"leaves each GPU under {traffic.SMALL_SHARE_PARAMS / 1e9:.0f} B active parameters, NVFP4 on {fp4}, and "
              f"mixtures of experts whose routed experts hold under {traffic.SMALL_EXPERT_PARAMS / 1e6:.0f} M parameters "
              "each.", "",
              "| runs | rows | output tokens/s | inside band | on demand |", "| --- | --- | --- | --- | --- |"]
    groups = [("all", peak), ("without a caveat", plain)] + \
        [(f"without a caveat, {release}", g) for release, g in plain.groupby("release")] + \
        [(f"without a caveat, {n} GPU{'s' * (n > 1)}", g) for n, g in plain.groupby("GPUs")] + \
        [(f"caveat: under {traffic.SMALL_SHARE_PARAMS / 1e9:.0f} B active parameters per linked GPU", peak[peak["small share"]]),
         (f"caveat: NVFP4 on {fp4}, dense models", peak[peak["format miss"] & ~peak["small experts"]]),
         (f"caveat: routed experts under {traffic.SMALL_EXPERT_PARAMS / 1e6:.0f} M parameters, on other GPUs",
          peak[peak["small experts"] & ~peak["format miss"]]),
         (f"caveats: such experts in NVFP4 on {fp4}", peak[peak["small experts"] & peak["format miss"]])]
    for name, g in groups:
        lines.append(f"| {name} | {len(g)} | {g['error'].abs().median():.1%} ({g['error'].median():+.0%}) | "
                     f"{g['inside band'].mean():.0%} | {g['on demand error'].abs().median():.1%} |")
    return lines


def communication_validation() -> list[str]:
    """NCCL all-reduce measurements against comm, the rows that set no parameter apart."""
    runs = validation.communication_runs()
    held = runs[runs["sets"] == ""]
    lines = ["## All-reduce against nccl-tests (targets: 8-GPU HGX within 10 %, several servers within 15 %)", "",
             "Each interconnect's achieved fraction of its line rate (and NVLink SHARP's, NVLS) and each hop latency "
             "is taken from one measurement (`sets`); the other rows took part in nothing. Error: predicted / "
             "published - 1 (bus bandwidth for large messages, time for small ones).", "",
             "| row | GPUs | link | message | published | predicted | error | sets |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for _, r in runs.iterrows():
        size = r["message (bytes)"]
        message = f"{size / 1e9:g} GB" if size >= 1e9 else f"{size / 1e6:g} MB" if size >= 1e6 else f"{size:,.0f} B"
        lines.append(f"| {r['id']} | {r['GPUs']} {r['GPU']} | {r['link']} | {message} | "
                     f"{r['published']:g} {r['unit']} | {r['predicted']:.1f} | {r['error']:+.1%} | {r['sets'] or '–'} |")
    groups = (("one server, large messages", (held["nodes"] == 1) & (held["metric"] == "busbw")),
              ("several servers, large messages", held["nodes"] > 1),
              ("small messages (time)", held["metric"] == "time"))
    lines += ["", "Rows that set nothing: " + "; ".join(
        f"{name}: {int(mask.sum())} rows, largest abs. error {held.loc[mask, 'error'].abs().max():.1%}"
        for name, mask in groups) + "."]
    return lines


def memory_validation() -> list[str]:
    """Measured fine-tuning memory against memory.training, every row a test row (nothing is fitted)."""
    runs = validation.memory_runs()
    lines = ["## Memory against measured runs (nothing fitted; fine-tuning target within 15 %)", "",
             "GPU: NVML readings (\"device\") against the whole estimate, allocator peaks against it less the CUDA context. "
             "Host: the growth over the same script without offload.", "",
             "| run | measured GPU (GiB) | predicted | error | measured host (GiB) | predicted | error |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for _, r in runs.iterrows():
        host = ("| – | – | – |" if pd.isna(r["measured host (GiB)"]) else
                f"| {r['measured host (GiB)']:.1f} | {r['predicted host (GiB)']:.1f} | {r['host error']:+.0%} |")
        lines.append(f"| {r['run']} | {r['measured GPU (GiB)']:.1f} | {r['predicted GPU (GiB)']:.1f} | "
                     f"{r['GPU error']:+.0%} " + host)
    errors = runs["GPU error"].abs()
    lines += ["", f"GPU: median abs. error {errors.median():.1%}, {int((errors <= 0.15).sum())} of {len(runs)} within 15 %."]
    probe = validation.memory_probe()
    lines += ["", "What PyTorch keeps, measured on the CPU (`benchmarks/probe_memory.py`, torch and transformers in a virtual "
              "environment of their own; `validation.memory_probe`), against the model's count:", "",
              "| quantity | setting | measured | model | unit | error |", "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r.quantity} | {r.setting} | {r.measured:,.4g} | {r.model:,.4g} | {r.unit} | {r.error:+.1%} |"
              for r in probe.itertuples()]
    static = validation.static_batch_runs()
    test = static[static["memory split"] == "test"]
    error = test["error memory (GB)"]
    lines += ["", f"Serving memory against the peak per GPU of {len(static):,} TensorRT-LLM 0.9 static batches "
              "(`validation.static_batch_runs`; the workspace holds the whole batch's prompts, prefilled at once, and keeps "
              "four hidden-size vectors a token whole on every GPU of a tensor-parallel group). Only the communication reserve "
              "of a group is fitted (`memory.communication_reserve`: a fixed part and one per other GPU, and NCCL's NVLS buffers "
              f"on top where the link has NVLink SHARP; {memory.communication_reserve(8, 'A100') / 1e9:.2f} GB a GPU on eight "
              f"A100, {memory.communication_reserve(8, 'H100') / 1e9:.2f} GB on eight H100), "
              f"on the runs on {' and '.join(calibration.MEMORY_CALIBRATION_GPUS)}; the {len(test):,} runs on the other GPUs: "
              f"median abs. error {error.abs().median():.1%} (signed {error.median():+.1%}), "
              f"{(error.abs() <= 0.15).mean():.0%} within 15 %; signed median by tensor-parallel GPUs: " +
              ", ".join(f"{n}: {g.median():+.0%}" for n, g in error.groupby(test["GPUs"])) + "; at 8 GPUs by GPU: " +
              ", ".join(f"{gpu} {g.median():+.0%}" for gpu, g in test[test["GPUs"] == 8].groupby("GPU")["error memory (GB)"]) + "."]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="also time a clean build and the tests, and weigh kernels and pages")
    args = parser.parse_args()
    plots.use_book_style()  # as every chapter's setup cell does, and it freezes what the imports built
    gc.freeze()
    lines = ["# Benchmarks", "",
             f"Machine: {platform.machine()}, {len(os.sched_getaffinity(0))} cores, Python "
             f"{platform.python_version()}, matplotlib {matplotlib.__version__}. Written by `python benchmarks/run.py"
             f"{' --full' if args.full else ''}`; times in milliseconds unless said otherwise. Host reference "
             f"(`run.host_reference`, a fixed pure-Python and numpy workload that runs none of the book's code): "
             f"{host_reference() * 1000:.0f} ms; compare it before comparing these times across hosts.", "",
             f"## Panels (target: p95 at most {TARGETS['panel p95 (ms)']} ms from a control move to the redrawn output)",
             ""] + panels() + ["", f"## Selector sweep (target {TARGETS['selector sweep (ms)']} ms)", ""] + selector() + \
        [""] + training_validation() + [""] + inference_validation() + [""] + communication_validation() + [""] + \
        memory_validation()
    lines += ["", "## Mutation testing of the model layer", ""]
    lines += Path(__file__).with_name("mutation.md").read_text(encoding="utf-8").splitlines()
    if args.full:
        lines += [""] + full()
    Path(__file__).with_name("results.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
