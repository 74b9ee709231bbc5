"""Ask the peer tool llm-analysis for the training step time of each validation run.

llm-analysis (PyPI ``llm-analysis``, github.com/cli99/llm-analysis, by Cheng Li) estimates training
latency from a model shape, a GPU, a parallel layout and a batch. For every row of training_runs.csv
this script asks it for the step time and the per-GPU TFLOP/s under two settings:

* ``defaults``: its own defaults, every efficiency 1 (its documented lower bound on latency);
* ``tuned``: ``flops_efficiency=0.5`` and ``hbm_memory_efficiency=0.9``, the values its README
  ("How to Set FLOPS and Memory Efficiency": "up to 0.5 for large scale model training", "0.9 can be
  an aggressive target for memory efficiency") and examples/llama (run_train.sh, README) use for
  training. ``intra_node_memory_efficiency`` and ``inter_node_memory_efficiency`` have no documented
  typical value and stay at their default of 1. Its examples/megatron-lm pass the paper's measured
  ``achieved_tflops`` instead, which would make the comparison circular.

In llm-analysis 0.2.2 the training step time is its FLOP count (recomputation included) over
``tp * pp * flops_efficiency * peak``: the memory and network efficiencies only enter its
forward-pass breakdown, and pipeline bubbles and data-parallel communication are not modelled.

How: llm-analysis is installed (pinned, without the Hugging Face packages it only needs to look
models up online) into a virtual environment of its own, never into the book's. The WORKER below,
run by that environment's Python, reads the jobs as JSON on stdin, calls ``LLMAnalysis.training``
and writes JSON on stdout, so this script runs under the project's Python without importing it.
A job that llm-analysis refuses records the error as its status; the others go on.

Mapping a row to llm-analysis:

* shape: n_layers, d_model and seq_len from the row; n_heads, key-value heads, d_ff, gated MLP and
  vocab_size from the row if it has them, else from the book's catalog for a named model
  (``helpers.models.get``; a mixture of experts' experts' width as d_ff), else d_model/128, MHA,
  4*d_model, plain and 51200; experts from the catalog for a named model, else from the row
  (experts, top-k, their width as its one MLP width; it has no shared experts), else 1; the
  row's expert parallelism as its ep_size.
* layout: tp, pp, dp and global_batch (sequences) are required, else status "no layout"; an empty
  micro_batch is 1 (its step time does not depend on it, and left to pick one it refuses runs
  whose activations it thinks do not fit), an empty zero_stage 0 and an empty recompute none.
* what it cannot express: context parallelism (cp is folded into dp, exact for its compute-only
  step time), the interleaved schedule (vpp is ignored, as it models no bubble), FP8 (skipped: it
  models 16-bit and 8/4-bit integer formats only) and GPUs without a shipped config.

    python benchmarks/peer_llm_analysis.py [--runs PATH] [--out PATH] [--venv DIR]

writes benchmarks/peer_llm_analysis.csv: id, setting, predicted_step_seconds,
predicted_tflops_per_gpu (its FLOP count per GPU over its step time), status.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from helpers import models

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "src" / "helpers" / "data"
PEER = ["llm-analysis==0.2.2", "fire>=0.5,<0.6"]  # fire is its one import outside the standard library
# the book's GPU names -> llm-analysis's shipped gpu_configs/*.json, whose figures match the datasheets
# (A100 SXM: 312 dense TFLOP/s, 2039 / 1555 GB/s HBM, 300 GB/s NVLink, 200 GB/s of InfiniBand;
# H100 SXM: 989 TFLOP/s, 3350 GB/s, 450 GB/s, 400 GB/s; V100 SXM2: 125 TFLOP/s, 900 GB/s, 150 GB/s)
GPUS = {"A100-SXM4-80GB": "a100-sxm-80gb", "A100-SXM4-40GB": "a100-sxm-40gb",
        "H100-SXM5-80GB": "h100-sxm-80gb", "V100-SXM2-32GB": "v100-sxm-32gb"}
SETTINGS = {"defaults": {}, "tuned": {"flops_efficiency": 0.5, "hbm_memory_efficiency": 0.9}}
RECOMPUTE = {"none": "NONE", "selective": "SELECTIVE", "full": "FULL"}  # its ActivationRecomputation
LAYOUT = ["tp", "pp", "dp", "global_batch"]
OPTIONAL = ["cp", "micro_batch", "zero_stage", "recompute", "n_heads", "n_kv_heads", "d_ff", "mlp", "vocab_size", "ep",
            "n_experts", "experts_per_token", "moe_d_ff"]

WORKER = r"""
import json, logging, sys
from llm_analysis.analysis import ActivationRecomputation, DSZeRO, LLMAnalysis
from llm_analysis.config import DtypeConfig, ModelConfig, ParallelismConfig, get_gpu_config_by_name
from llm_analysis.logger import logger

logger.setLevel(logging.ERROR)
results = []
for job in json.load(sys.stdin):
    try:
        parallel = ParallelismConfig(**job["parallelism"])
        analysis = LLMAnalysis(ModelConfig(**job["model"]), get_gpu_config_by_name(job["gpu"]),
                               DtypeConfig(), parallel, **job["efficiency"])
        s = analysis.training(activation_recomputation=ActivationRecomputation[job["recompute"]],
                              ds_zero=DSZeRO(job["zero_stage"]), **job["batch"])
        flops = s["num_flops_total_per_micro_batch"] * s["gradient_accumulation_steps"]
        step = s["latency_per_iter"]
        results.append({"predicted_step_seconds": step, "status": "ok",
                        "predicted_tflops_per_gpu": flops / (parallel.tp_size * parallel.pp_size) / step / 1e12})
    except Exception as e:
        results.append({"status": f"{type(e).__name__}: {e}".strip()})
json.dump(results, sys.stdout)
"""


def peer_python(venv: Path) -> Path:
    """The Python of a virtual environment holding llm-analysis (made on first use; pip is a no-op later)."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run(pip + PEER[1:], check=True)
    subprocess.run(pip + ["--no-deps", "--no-warn-conflicts", PEER[0]], check=True)
    return python


def model_config(row) -> dict:
    named = models.get(row.model) if row.model in models.names() else None

    def pick(column, fallback):
        """The row's value, else the named model's (its experts' width for a mixture of experts), else the fallback."""
        if getattr(row, column):
            return getattr(row, column)
        if named is None:
            return fallback
        return named.expert_d_ff if column == "d_ff" and named.is_moe else getattr(named, column)

    d_ff = pick("d_ff", 4 * row.d_model)
    config = {"name": row.id, "num_layers": int(row.n_layers), "hidden_dim": int(row.d_model),
              "n_head": int(pick("n_heads", row.d_model // 128)), "ffn_embed_dim": int(d_ff),
              "expansion_ratio": d_ff / row.d_model, "max_seq_len": int(row.seq_len),
              "vocab_size": int(pick("vocab_size", 51200))}
    config["num_key_value_heads"] = int(pick("n_kv_heads", config["n_head"]))
    if named is not None:
        config.update(moe_num_experts=int(named.n_experts), moe_top_k=int(named.experts_per_token))
    elif row.n_experts:  # every layer a mixture of experts of moe_d_ff (llm-analysis has one MLP width)
        config.update(moe_num_experts=int(row.n_experts), moe_top_k=int(row.experts_per_token),
                      ffn_embed_dim=int(row.moe_d_ff), expansion_ratio=int(row.moe_d_ff) / row.d_model)
    return config


def job(row) -> dict | str:
    """The llm-analysis inputs for one row, or why it has none."""
    if any(pd.isna(getattr(row, c)) for c in LAYOUT):
        return "no layout"
    if row.dtype not in ("bf16", "fp16"):
        return f"{row.dtype} is not modelled by llm-analysis (16-bit floats and 8/4-bit integers only)"
    if row.gpu not in GPUS:
        return f"no llm-analysis GPU config for {row.gpu}"
    return {
        "model": model_config(row),
        "gpu": GPUS[row.gpu],
        "parallelism": {"tp_size": int(row.tp), "pp_size": int(row.pp), "dp_size": int(row.dp * (row.cp or 1)),
                        "ep_size": int(row.ep or 1)},
        "recompute": RECOMPUTE[row.recompute or "none"],
        "zero_stage": int(row.zero_stage or 0),
        "batch": {"seq_len": int(row.seq_len), "global_batch_size": int(row.global_batch),
                  "batch_size_per_gpu": int(row.micro_batch or 1),
                  "mlp_gated_linear_units": pick_mlp(row) == "swiglu"},
    }


def pick_mlp(row) -> str:
    """The row's MLP kind, else its named model's, else GELU."""
    return row.mlp or (models.get(row.model).mlp if row.model in models.names() else "gelu")


def run_peer(python: Path, jobs: list[dict]) -> list[dict]:
    """Run every job through the worker; if the worker itself fails, every job gets its error."""
    try:
        done = subprocess.run([str(python), "-c", WORKER], input=json.dumps(jobs), capture_output=True,
                              text=True, timeout=600, check=True)
        return json.loads(done.stdout)
    except (subprocess.SubprocessError, ValueError) as e:
        message = getattr(e, "stderr", None) or str(e)
        return [{"status": f"worker failed: {message.strip().splitlines()[-1]}"}] * len(jobs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=DATA / "training_runs.csv")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "peer_llm_analysis.csv")
    parser.add_argument("--venv", type=Path, default=Path(tempfile.gettempdir()) / "peer-llm-analysis-venv",
                        help="virtual environment for llm-analysis, made if missing")
    args = parser.parse_args()
    start = time.perf_counter()

    runs = pd.read_csv(args.runs)
    for column in LAYOUT + OPTIONAL:  # layout columns may not be there yet
        if column not in runs:
            runs[column] = pd.NA
    runs[OPTIONAL] = runs[OPTIONAL].astype(object).where(runs[OPTIONAL].notna(), None)

    rows, jobs = [], []  # jobs: (the output row it fills, llm-analysis inputs)
    for row in runs.itertuples(index=False):
        inputs = job(row)
        for setting, efficiency in SETTINGS.items():
            rows.append({"id": row.id, "setting": setting, "predicted_step_seconds": None,
                         "predicted_tflops_per_gpu": None, "status": inputs if isinstance(inputs, str) else None})
            if isinstance(inputs, dict):
                jobs.append((rows[-1], {**inputs, "efficiency": efficiency}))
    if jobs:
        results = run_peer(peer_python(args.venv), [inputs for _, inputs in jobs])
        for (out, _), result in zip(jobs, results):
            out.update(result)
    table = pd.DataFrame(rows)
    table.to_csv(args.out, index=False, float_format="%.4g")
    ok = (table.status == "ok").sum()
    print(f"{args.out}: {ok} of {len(table)} predictions ok in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
