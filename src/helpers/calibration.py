"""The step model's few efficiency parameters, fitted on published runs, and its error measured
on runs it was not fitted on.

Every row of ``data/training_runs.csv`` that states its parallel layout is a steady-state
throughput measurement: tokens per second per GPU, as published or converted from the
publication's TFLOP/s or MFU with the publication's own FLOP count. Rows belong to a family (one
paper or benchmark suite) and to a split:

- **calibration** rows fit the parameters of :class:`steptime.Calibration` (GEMM efficiency per
  architecture and dtype, attention efficiency per architecture, element-wise passes, overlap
  efficiency) by least squares on the log of throughput;
- **test** rows are never used for fitting, and report the error of the default estimate.

The band of an estimate comes from leave-one-family-out residuals of the calibration rows: each
family is predicted by a fit on the other families, and the band spans the 5th to 95th
percentile of those out-of-sample errors. Test rows take no part in either.
"""

from dataclasses import replace
from functools import cache

import numpy as np
import pandas as pd

from . import _data, comm, gpus, memory, models, planner, serving, steptime, traffic
from .flops import flops_per_token
from .memory import RECOMPUTE
from .steptime import Calibration, Layout

SPLITS = ("calibration", "test")
#: Quantiles of the out-of-sample errors that bound the band.
BAND_QUANTILES = (0.05, 0.95)
#: Search range of each fitted parameter.
BOUNDS = {"gemm": (0.3, 1.0), "elementwise_passes": (0.0, 12.0), "overlap_efficiency": (0.0, 1.0),
          "attention_efficiency": (0.2, 1.0)}


def run_model(row: pd.Series) -> models.Model:
    """The preset named in the row, or a GPT shape with the row's layers, width, heads, key-value
    heads, MLP (width and kind), block (:data:`models.BLOCKS`), vocabulary and, for a mixture of
    experts, its experts (``n_experts``, ``experts_per_token``, ``moe_d_ff``, ``n_shared_experts`` of
    that width, and ``n_active_params``); where the row does not say, heads of 128, as many
    key-value heads as heads, a GELU MLP 4 x d_model wide, a sequential block, a 50,257-token
    vocabulary and no experts."""
    if isinstance(row.get("model"), str):
        return models.get(row["model"])
    d = int(row["d_model"])

    def stated(column: str, default: int) -> int:
        return default if pd.isna(row.get(column)) else int(row[column])

    heads = stated("n_heads", d // 128)
    moe = {} if pd.isna(row.get("n_experts")) else dict(
        n_experts=int(row["n_experts"]), experts_per_token=int(row["experts_per_token"]), moe_d_ff=int(row["moe_d_ff"]),
        n_shared_experts=stated("n_shared_experts", 0), n_active_params=float(row["n_active_params"]))
    return replace(models.dense(float(row["n_params"]), name=row["run"]), n_layers=int(row["n_layers"]), d_model=d,
                   n_heads=heads, n_kv_heads=stated("n_kv_heads", heads), d_ff=stated("d_ff", 4 * d),
                   mlp=row["mlp"] if isinstance(row.get("mlp"), str) else "gelu",
                   block=row["block"] if isinstance(row.get("block"), str) else "sequential",
                   vocab_size=stated("vocab_size", models.dense(1e9).vocab_size), **moe)


def megatron_flops_per_token(model: models.Model, seq_len: int) -> float:
    """FLOPs per token as Megatron-LM 2021 counted them, with full recompute: 96*l*h^2*(1 + s/(6h)
    + V/(16*l*h)) per sequence token (Narayanan et al. 2021, arXiv:2104.04473, Eq. 3)."""
    l, h, v = model.n_layers, model.d_model, model.vocab_size
    return 96 * l * h * h * (1 + seq_len / (6 * h) + v / (16 * l * h))


def published_throughput(row: pd.Series) -> float:
    """Steady-state tokens per second per GPU that the row publishes (an iteration time, tokens/s,
    TFLOP/s or MFU, the first it has), directly or converted with
    the publication's FLOP count (Megatron-LM 2021's Eq. 3 for 'full recompute' rows, else the
    model FLOPs of :func:`flops.flops_per_token`)."""
    m, s = run_model(row), int(row["seq_len"])
    if not pd.isna(row["iteration_seconds"]):
        return float(row["global_batch"]) * s / float(row["iteration_seconds"]) / float(row["n_gpus"])
    if not pd.isna(row["tokens_per_sec_per_gpu"]):
        return float(row["tokens_per_sec_per_gpu"])
    if not pd.isna(row["tflops_per_gpu"]):
        per_token = megatron_flops_per_token(m, s) if row["flops_basis"] == "full recompute" else flops_per_token(m, seq_len=s)
        return float(row["tflops_per_gpu"]) * 1e12 / per_token
    return float(row["mfu"]) * gpus.get(row["gpu"]).peak_flops(row["dtype"]) / flops_per_token(m, seq_len=s)


FLAGS = ("sequence_parallel", "flash_attention", "dropout", "overlap", "tp_overlap", "gather_overlap")


def candidates(row: pd.Series, n_layers: int) -> dict[str, np.ndarray]:
    """The layouts consistent with the row, as arrays for :func:`steptime.terms`: its published
    fields, and every micro-batch (:data:`planner.MICRO_BATCHES`, dividing the batch of one
    replica) and interleaving depth (:data:`planner.VPP_DEGREES`) where the row does not state them.
    The authors tuned what they did not publish, so the fastest that fits stands for their run."""
    dp, gb, pp = int(row["dp"]), int(row["global_batch"]), int(row["pp"])
    micro = [int(row["micro_batch"])] if not pd.isna(row["micro_batch"]) else \
        [b for b in planner.MICRO_BATCHES if (gb // dp) % b == 0] or [1]
    chunks = [int(row["vpp"])] if not pd.isna(row["vpp"]) else \
        [v for v in planner.VPP_DEGREES
         if pp > 1 and v <= steptime.max_vpp(n_layers, pp) and (gb // dp // min(micro)) >= pp] or [1]
    combos = [(b, v) for b in micro for v in chunks]
    fixed = {k: int(row[k]) for k in ("tp", "pp", "dp", "global_batch", "zero_stage")}
    fixed |= {k: _degree(row, k) for k in ("ep", "cp")}
    arrays = {k: np.full(len(combos), v) for k, v in fixed.items()}
    arrays["micro_batch"] = np.array([b for b, _ in combos])
    arrays["vpp"] = np.array([v for _, v in combos])
    arrays["recompute"] = np.full(len(combos), RECOMPUTE.index(row["recompute"]))
    return arrays


def layout_row(row: pd.Series) -> dict:
    """What the step model needs of a row that states its layout: id, run, family, split, GPU,
    dtype, GPUs, source, model, sequence length, layout candidates, flags (with the attention
    kernel and, where the row states them, the bytes per gradient element reduced) and servers."""
    m = run_model(row)
    return {"id": row["id"], "run": row["run"], "family": row["family"], "split": row["split"],
            "GPU": row["gpu"], "dtype": row["dtype"], "GPUs": int(row["tp"] * row["pp"] * row["dp"] * _degree(row, "cp")),
            "model": m, "seq_len": int(row["seq_len"]), "candidates": candidates(row, m.n_layers),
            "flags": {**{k: bool(row[k]) for k in FLAGS}, "attention_kernel": _attention_kernel(row, m),
                      "grad_bytes": None if pd.isna(row.get("grad_bytes")) else int(row["grad_bytes"])},
            "network": run_network(row), "source": row["source"]}


def _degree(row: pd.Series, name: str) -> int:
    """The row's expert- or context-parallel degree ``name`` (1 where it states none)."""
    return 1 if pd.isna(row.get(name)) else int(row[name])


def _attention_kernel(row: pd.Series, model: models.Model) -> str:
    """The fused attention kernel the row names (``attention_kernel``), else FlashAttention-2's;
    a ``ValueError`` where the row runs it on heads wider than it takes
    (:data:`steptime.ATTENTION_MAX_HEAD_DIM`)."""
    kernel = row["attention_kernel"] if isinstance(row.get("attention_kernel"), str) else "flash2"
    widest = steptime.ATTENTION_MAX_HEAD_DIM[kernel]
    if row["flash_attention"] and model.head_dim > widest:
        raise ValueError(f"row {row['id']}: {kernel} runs heads up to {widest} wide, not {model.head_dim}; "
                         "set flash_attention false")
    return kernel


def run_network(row: pd.Series) -> steptime.Network:
    """The servers a run was trained on: the row's ``server`` (``data/servers.csv``) where the
    publication names or implies one, else the servers its GPU ships in."""
    return steptime.server(row["server"]) if isinstance(row["server"], str) else steptime.network_for(row["gpu"])


@cache
def runs() -> pd.DataFrame:
    """The steady-state rows that state a layout (:func:`layout_row`), with their published
    tokens/s per GPU."""
    table = _data.table("training_runs")
    steady = table[table["tp"].notna() & table["gpu_hours"].isna()]
    return pd.DataFrame([{**layout_row(row), "published": published_throughput(row)} for _, row in steady.iterrows()])


def best_layouts(rows: pd.DataFrame, calibration: Calibration) -> list[tuple[Layout, steptime.StepTime]]:
    """For each row, the fastest of its candidate layouts that fits in memory, and its step."""
    out = []
    for _, r in rows.iterrows():
        g, m, c = gpus.get(r["GPU"]), r["model"], r["candidates"]
        t = steptime.terms(m, g, **c, seq_len=r["seq_len"], dtype=r["dtype"], **r["flags"],
                           network=r["network"], calibration=calibration)
        total = sum(t[k] for k in steptime.StepTime.TERMS)
        flags = {k: r["flags"][k] for k in ("flash_attention", "sequence_parallel", "dropout")}
        fits = planner.layout_memory(m, c, r["seq_len"], r["dtype"], **flags) <= g.reported_memory_bytes
        i = int(np.argmin(np.where(fits, total, np.inf))) if fits.any() else int(np.argmin(total))
        out += steptime.picked(m, g, c, t, [i], seq_len=r["seq_len"], dtype=r["dtype"], **r["flags"])
    return out


def predict(rows: pd.DataFrame, calibration: Calibration) -> np.ndarray:
    """Predicted tokens/s per GPU of each row under ``calibration``: its best candidate layout on the
    row's servers (:func:`run_network`)."""
    return np.array([step.tokens_per_second_per_gpu for _, step in best_layouts(rows, calibration)])


def _keys(rows: pd.DataFrame) -> list[str]:
    """The GEMM-efficiency parameters these rows can fit: architecture/bf16 (16-bit) or /fp8."""
    return sorted(set(_row_keys(rows)))


def _attention_keys(rows: pd.DataFrame) -> list[str]:
    """The attention-efficiency parameters these rows can fit: the architectures whose fused-attention
    runs outnumber the parameters they would fit (the architecture's GEMM efficiencies and its attention
    efficiency); with no more runs than that, the fit could trade one for another at no cost."""
    architectures = pd.Series([gpus.get(g).architecture for g in rows["GPU"]], index=rows.index)
    gemm = pd.Series([k.split("/")[0] for k in _keys(rows)]).value_counts()
    fused = architectures[[f["flash_attention"] for f in rows["flags"]]].value_counts()
    return sorted(a for a, n in fused.items() if n > gemm.get(a, 0) + 1)


def _calibration(keys: list[str], attention: list[str], x: list[float]) -> Calibration:
    n = len(keys)
    return Calibration.fitted(tuple(zip(keys, x[:n])), x[n], x[n + 1], tuple(zip(attention, x[n + 2:])))


def _golden(f, low: float, high: float, iterations: int = 24) -> float:
    """The minimum of a unimodal ``f`` on [low, high] by golden-section search."""
    ratio = (5**0.5 - 1) / 2
    a, b = low, high
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iterations):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = f(d)
    return (a + b) / 2


def fit(rows: pd.DataFrame, *, sweeps: int = 3) -> Calibration:
    """Parameters minimising the mean squared log error of predicted throughput on ``rows``
    (coordinate descent, golden-section search within :data:`BOUNDS` per parameter)."""
    if rows.empty:
        raise ValueError("rows must hold at least one run to fit on")
    keys, attention = _keys(rows), _attention_keys(rows)
    bounds = [BOUNDS["gemm"]] * len(keys) + [BOUNDS[k] for k in ("elementwise_passes", "overlap_efficiency")] + \
        [BOUNDS["attention_efficiency"]] * len(attention)
    x = [0.7] * len(keys) + [2.0, 0.5] + [0.7] * len(attention)
    published = np.log(rows["published"].to_numpy())

    def loss(values: list[float]) -> float:
        return float(np.mean((np.log(predict(rows, _calibration(keys, attention, values))) - published) ** 2))

    for _ in range(sweeps):
        for i, (low, high) in enumerate(bounds):
            x[i] = _golden(lambda v: loss(x[:i] + [v] + x[i + 1:]), low, high)
    return _calibration(keys, attention, x)


def errors(rows: pd.DataFrame, calibration: Calibration) -> np.ndarray:
    """Error of the predicted step time on each row: predicted / published time - 1 (that is,
    published / predicted throughput - 1; positive when the prediction is too slow)."""
    return rows["published"].to_numpy() / predict(rows, calibration) - 1


def leave_one_family_out(rows: pd.DataFrame) -> pd.DataFrame:
    """Out-of-sample time error of every row, its family predicted by a fit on the other families,
    and whether those families calibrated the row's architecture and dtype (``covered``; when not,
    the row was predicted with the mean efficiency, as an architecture without published runs is)."""
    error, covered = pd.Series(np.nan, index=rows.index), pd.Series(False, index=rows.index)
    for family in rows["family"].unique():
        held = rows["family"] == family
        others = rows[~held]
        error[held] = errors(rows[held], fit(others))
        covered[held] = [k in _keys(others) for k in _row_keys(rows[held])]
    return pd.DataFrame({"error": error, "covered": covered})


def _row_keys(rows: pd.DataFrame) -> list[str]:
    return [f"{gpus.get(g).architecture}/{'fp8' if d == 'fp8' else 'bf16'}" for g, d in zip(rows["GPU"], rows["dtype"])]


def fitted_table() -> pd.DataFrame:
    """What ``data/calibration.csv`` holds: the training step model's parameters fitted on every
    calibration run (then the serving model's, :func:`serving_entries`), and two
    bands (time factors at :data:`BAND_QUANTILES` of the leave-one-family-out errors, widened to
    include 1): for GPUs whose architecture the calibration runs cover, the errors of rows whose
    architecture the other families covered; for the others, all the errors."""
    rows = runs()
    calibration = rows[rows["split"] == "calibration"]
    fitted = fit(calibration)
    residuals = leave_one_family_out(calibration)
    entries = [("parameter", f"gemm_efficiency/{k}", v) for k, v in fitted.gemm_efficiency]
    entries += [("parameter", name, getattr(fitted, name)) for name in ("elementwise_passes", "overlap_efficiency")]
    entries += [("parameter", f"attention_efficiency/{k}", v) for k, v in fitted.attention_efficiency]
    # An architecture without runs errs at least as much as one with: its band spans every residual's.
    ends = {}
    for label, errs in (("calibrated", residuals[residuals["covered"]]["error"]), ("uncalibrated", residuals["error"])):
        low, high = (float(np.quantile(1 / (1 + errs), q)) for q in BAND_QUANTILES)  # published / predicted time
        ends[label] = (min(low, 1, *ends.get("calibrated", ())), max(high, 1, *ends.get("calibrated", ())))
        entries += [("band", f"{label}_q{int(q * 100):02d}", v) for q, v in zip(BAND_QUANTILES, ends[label])]
        entries += [("band", f"{label}_rows", float(len(errs)))]
    families = ", ".join(sorted(calibration["family"].unique()))
    table = pd.DataFrame(entries, columns=["kind", "parameter", "value"])
    table["basis"] = f"{len(calibration)} calibration runs ({families}); bands: leave-one-family-out errors"
    table["value"] = table["value"].round(4)
    inference = serving_runs()
    inference = inference[inference["split"] == "calibration"]
    served = pd.DataFrame([(k, p, float(f"{v:.4g}")) for k, p, v in serving_entries()], columns=["kind", "parameter", "value"])
    served["basis"] = (f"{len(inference)} inference calibration rows ({', '.join(sorted(inference['group'].unique()))});"
                       " bands: leave-one-group-out errors")
    served.loc[served["parameter"] == "serving/kv_block_bandwidth", "basis"] = \
        f"{len(single_client_runs())} NIM single-client runs (loaded_serving_runs.csv): the trend of the error with the context"
    served.loc[served["parameter"] == "serving/host_seconds", "basis"] = \
        f"NIM closed-loop runs of {HOST_FIT_MODEL} with 2 clients or more and prompts no longer than their outputs " \
        "(loaded_serving_runs.csv): time per token"
    served.loc[served["parameter"].isin(RESERVE_PARAMETERS), "basis"] = \
        f"TensorRT-LLM 0.9 static batches on {' and '.join(MEMORY_CALIBRATION_GPUS)} (static_batch_runs.csv): " \
        "peak memory per GPU beyond the model's count, fixed and per other GPU of the group, and NVLS's part of each"
    return pd.concat([table, served], ignore_index=True)


def band(gpu: "gpus.GPU | str", dtype: str) -> tuple[float, float]:
    """(low, high) factors that take a predicted steady-state time to the range of the real one for
    ``gpu`` in ``dtype``: quantiles of published / predicted time out of sample, for calibrated
    architectures, or for all when no calibration run used this architecture."""
    values, g = _data.calibrated(), gpus.get(gpu)
    calibrated = f"gemm_efficiency/{g.architecture}/{'fp8' if dtype == 'fp8' else 'bf16'}" in values
    label = "calibrated" if calibrated else "uncalibrated"
    return tuple(values[f"{label}_q{int(q * 100):02d}"] for q in BAND_QUANTILES)


# --- serving -------------------------------------------------------------------------------

#: Search range of each fitted serving parameter (layer_seconds in seconds per layer and step).
SERVING_BOUNDS = {"bandwidth_fraction": (0.3, 1.0), "overlap": (0.0, 1.0), "layer_seconds": (0.0, 300e-6),
                  "kv_rereads": (0.0, 1.0),
                  "compute_fraction": (0.15, 1.0), "dequant_ops": (0.0, 40.0)}


def _serving_steps(row: pd.Series) -> tuple[serving.Steps, ...]:
    kw = dict(tp=int(row["n_gpus"]), batch_size=int(row["batch_size"]), weight_dtype=row["weight_dtype"],
              kv_dtype=row["kv_dtype"])
    prompt, context = int(row["prompt_len"]), int(row["context_len"])
    grouped = bool(row["grouped_kv_kernel"])
    if row["kind"] == "decode":
        return (serving.decode_steps(row["model"], row["gpu"], context_len=context, grouped_kv_kernel=grouped, **kw),)
    if row["kind"] == "prefill":
        return (serving.prefill_steps(row["model"], row["gpu"], prompt, **kw),)
    return serving.static_batch_steps(row["model"], row["gpu"], prompt_len=prompt, output_len=context - prompt,
                                      grouped_kv_kernel=grouped, **kw)


def published_seconds(row: pd.Series) -> float:
    """Seconds of what an inference row times: a decoding step (batch / tokens per second, or the
    inter-token latency), a prefill (time to first token), or a whole static batch (batch x output
    tokens over the output tokens per second of all its GPUs)."""
    value, batch = float(row["value"]), int(row["batch_size"])
    if row["metric"] in ("inter_token_latency", "first_token_latency"):
        return value / 1000
    if row["metric"] == "tokens_per_s":
        return batch / value
    return batch * (int(row["context_len"]) - int(row["prompt_len"])) / (value * int(row["n_gpus"]))


@cache
def serving_runs() -> pd.DataFrame:
    """Every row of ``data/inference_runs.csv`` with its published seconds and its steps."""
    table = _data.table("inference_runs")
    return table.assign(published=[published_seconds(r) for _, r in table.iterrows()],
                        steps=[_serving_steps(r) for _, r in table.iterrows()])


def predict_serving(rows: pd.DataFrame, calibration: serving.ServingCalibration) -> np.ndarray:
    """Predicted seconds of each row under ``calibration``."""
    return np.array([sum(s.seconds(calibration)["total"].sum() for s in steps) for steps in rows["steps"]])


def _serving_keys(rows: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Architectures and weight-only kernel families these rows can fit."""
    archs = sorted({gpus.get(g).architecture for g in rows["gpu"]})
    kernels = sorted({serving.kernel_family(g, d) for g, d in zip(rows["gpu"], rows["weight_dtype"])} - {""})
    return archs, kernels


def fit_serving(rows: pd.DataFrame, *, sweeps: int = 3) -> serving.ServingCalibration:
    """Serving parameters minimising the mean squared log error of predicted seconds on ``rows``
    (coordinate descent, golden-section search within :data:`SERVING_BOUNDS`)."""
    if rows.empty:
        raise ValueError("rows must hold at least one inference run to fit on")
    archs, kernels = _serving_keys(rows)
    names = (["bandwidth_fraction", "overlap", "layer_seconds", "kv_rereads"] + [f"compute_fraction/{a}" for a in archs]
             + [f"dequant_ops/{k}" for k in kernels])
    x = {"bandwidth_fraction": 0.8, "overlap": 0.5, "layer_seconds": 50e-6, "kv_rereads": 0.0,
         **{n: 0.6 for n in names if n.startswith("compute_fraction/")},
         **{n: 2.0 for n in names if n.startswith("dequant_ops/")}}
    published = np.log(rows["published"].to_numpy())

    def made(values: dict) -> serving.ServingCalibration:
        return serving.ServingCalibration.from_entries({f"serving/{k}": v for k, v in values.items()})

    def loss(values: dict) -> float:
        return float(np.mean((np.log(predict_serving(rows, made(values))) - published) ** 2))

    for _ in range(sweeps):
        for name in names:
            low, high = SERVING_BOUNDS[name.split("/")[0]]
            x[name] = _golden(lambda v: loss({**x, name: v}), low, high)
    return made(x)


def serving_errors(rows: pd.DataFrame, calibration: serving.ServingCalibration) -> np.ndarray:
    """Predicted / published seconds - 1 of each row (negative when the prediction is too fast)."""
    return predict_serving(rows, calibration) / rows["published"].to_numpy() - 1


def serving_leave_one_group_out(rows: pd.DataFrame) -> pd.Series:
    """Out-of-sample error in seconds of every row, its group (one publication or benchmark table)
    predicted by a fit on the other groups."""
    error = pd.Series(np.nan, index=rows.index)
    for group in rows["group"].unique():
        held = rows["group"] == group
        error[held] = serving_errors(rows[held], fit_serving(rows[~held]))
    return error


#: Search range of ``kv_block_bandwidth``, bytes/s per thread block.
KV_BLOCK_BOUNDS = (5e9, 500e9)


@cache
def single_client_runs() -> pd.DataFrame:
    """NIM's closed-loop runs with one client (``data/loaded_serving_runs.csv``), each as the
    decoding step of one sequence at its prompt plus half its output of context, read with one
    thread block per KV head (TensorRT-LLM without multi-block mode), against its inter-token
    latency in seconds; ``config`` names the model, GPU count and weights, whose runs differ only
    in their prompt and output lengths."""
    table = _data.table("loaded_serving_runs")
    table = table[table["concurrency"] == 1]
    steps = [serving.decode_steps(r["model"], r["gpu"], tp=int(r["n_gpus"]), context_len=int(r["prompt_len"]) +
                                  int(r["output_len"]) // 2, weight_dtype=r["weight_dtype"],
                                  kv_dtype=memory.serving_kv_dtype(r["weight_dtype"]), split_kv=False)
             for _, r in table.iterrows()]
    return table.assign(published=table["itl_ms"] / 1000, steps=steps,
                        config=table["model"] + " " + table["n_gpus"].astype(str) + " x " + table["gpu"] + " " +
                        table["weight_dtype"])


def fit_kv_block_bandwidth(rows: pd.DataFrame, calibration: serving.ServingCalibration) -> float:
    """The ``kv_block_bandwidth`` that best explains how each configuration's single-client time
    per token drifts from the model as its context grows (:func:`single_client_runs`): least
    squares of the log errors less each configuration's mean, so that only the trend with the
    context enters, not the level, which the other parameters set (golden-section search on a log
    scale within :data:`KV_BLOCK_BOUNDS`)."""
    published = np.log(rows["published"].to_numpy())

    def loss(log_bandwidth: float) -> float:
        made = replace(calibration, kv_block_bandwidth=10 ** log_bandwidth)
        error = pd.Series(np.log([s.seconds(made)["total"][0] for s in rows["steps"]]) - published, index=rows.index)
        return float(((error - error.groupby(rows["config"]).transform("mean")) ** 2).mean())

    return 10 ** _golden(loss, *np.log10(KV_BLOCK_BOUNDS))


#: The model whose closed-loop runs with two clients or more fit ``host_seconds``; the other
#: model's runs test it.
HOST_FIT_MODEL = "llama-3-8b"
#: Search range of ``host_seconds``, seconds per sequence and step.
HOST_BOUNDS = (0.0, 500e-6)


def host_runs(model: str = HOST_FIT_MODEL) -> pd.DataFrame:
    """NIM's closed-loop runs of ``model`` with two clients or more (``data/loaded_serving_runs.csv``);
    those of :data:`HOST_FIT_MODEL` are the family ``host_seconds`` is fitted on."""
    table = _data.table("loaded_serving_runs")
    return table[(table["model"] == model) & (table["concurrency"] >= 2)]


def fit_host_seconds(rows: pd.DataFrame, calibration: serving.ServingCalibration) -> float:
    """The ``host_seconds`` that best explain the time per output token of the closed-loop runs
    ``rows`` (:func:`host_runs`) whose batch fits the KV cache and whose prompt is no longer than
    their output, under :func:`traffic.closed_loop` with NIM's unsplit cache read and
    ``calibration``'s other parameters: least squares of the log errors (golden-section search
    within :data:`HOST_BOUNDS`). Longer prompts are left out: the model misses them for another
    reason (most likely the prefill of later requests within everyone's decoding steps, which the
    first-wave model leaves out), and a fit on them would take that for the host's time."""
    rows = rows[rows["prompt_len"] <= rows["output_len"]]

    def loaded(host: float) -> list[traffic.Load]:
        made = replace(calibration, host_seconds=host)
        return [traffic.closed_loop(traffic.replica(r["model"], r["gpu"], tp=int(r["n_gpus"]),
                                                    prompt_len=int(r["prompt_len"]), output_len=int(r["output_len"]),
                                                    weight_dtype=r["weight_dtype"], split_kv=False, calibration=made),
                                    int(r["concurrency"])) for _, r in rows.iterrows()]

    fits = np.array([at.fits for at in loaded(0.0)])
    published = np.log(rows["itl_ms"].to_numpy()[fits] / 1000)

    def loss(host: float) -> float:
        predicted = np.log([at.time_per_token for at, fit in zip(loaded(host), fits) if fit])
        return float(((predicted - published) ** 2).mean())

    return _golden(loss, *HOST_BOUNDS)


def serving_entries() -> list[tuple[str, str, float]]:
    """The serving rows of ``data/calibration.csv``: the parameters fitted on every calibration
    row (``kv_block_bandwidth`` then on NIM's single-client runs, :func:`fit_kv_block_bandwidth`,
    and ``host_seconds`` on its loaded runs of one model, :func:`fit_host_seconds`),
    and one band of time factors for every kind of measurement (quantiles
    :data:`BAND_QUANTILES` of published / predicted seconds out of sample, pooled over decoding,
    prefill and static batches, which are too few apart; widened to include 1)."""
    rows = serving_runs()
    calibration = rows[rows["split"] == "calibration"]
    fitted = fit_serving(calibration)
    fitted = replace(fitted, kv_block_bandwidth=fit_kv_block_bandwidth(single_client_runs(), fitted))
    fitted = replace(fitted, host_seconds=fit_host_seconds(host_runs(), fitted))
    entries = [("parameter", k, v) for k, v in fitted.to_entries()]
    ratio = 1 / (1 + serving_leave_one_group_out(calibration))  # published / predicted seconds
    ends = (min(float(np.quantile(ratio, BAND_QUANTILES[0])), 1), max(float(np.quantile(ratio, BAND_QUANTILES[1])), 1))
    entries += [("band", f"serving/q{int(q * 100):02d}", v) for q, v in zip(BAND_QUANTILES, ends)]
    entries += [("band", "serving/rows", float(len(ratio)))]
    return entries + [("parameter", k, v) for k, v in fit_communication_reserve().items()]


#: The GPUs whose static batches the communication reserve is fitted on (:func:`fit_communication_reserve`);
#: the runs on the other GPUs of ``data/static_batch_runs.csv`` test it.
MEMORY_CALIBRATION_GPUS = ("A100-SXM4-80GB", "H100-SXM5-80GB")


def static_batch_memory(row: pd.Series) -> float:
    """Bytes per GPU of a TensorRT-LLM static batch (a row of ``data/static_batch_runs.csv``) that
    the memory model counts: :func:`memory.inference` of the batch at its
    full context, but with a workspace for the whole batch's prompts, which a static batch prefills
    at once, rather than one chunk, and without the communication reserve."""
    m, batch, tp = models.get(row["model"]), int(row["batch_size"]), int(row["n_gpus"])
    weights, kv = memory._served_states(m, row["weight_dtype"], row["kv_dtype"], batch,
                                       int(row["prompt_len"]) + int(row["output_len"]), tp)
    whole = memory.inference_workspace(m, batch * int(row["prompt_len"]), batch, tp)
    return weights + kv + whole + memory.RUNTIME_OVERHEAD


#: The parameters of :func:`memory.communication_reserve`, bytes per GPU of a group of two or more:
#: a fixed part and one per other GPU, and what NVLink SHARP adds to each where the link has it.
RESERVE_PARAMETERS = ("serving/comm_bytes_fixed", "serving/comm_bytes_per_peer", "serving/nvls_bytes_fixed",
                      "serving/nvls_bytes_per_peer")


def fit_communication_reserve() -> dict[str, float]:
    """:data:`RESERVE_PARAMETERS` from what TensorRT-LLM 0.9's static batches on
    :data:`MEMORY_CALIBRATION_GPUS` used beyond :func:`static_batch_memory` (peak memory per GPU as
    gptSessionBenchmark reports it), by least squares on 1 and tp - 1, each also where the group's
    link has NVLS (:func:`comm.gpu_link`; the H100's, not the A100's)."""
    table = _data.table("static_batch_runs")
    rows = table[table["gpu"].isin(MEMORY_CALIBRATION_GPUS)]
    counted = np.array([static_batch_memory(r) for _, r in rows.iterrows()])
    n = rows["n_gpus"].to_numpy(dtype=int)
    nvls = np.array([t > 1 and comm.gpu_link(gpus.get(g), t).has_nvls for g, t in zip(rows["gpu"], n)], dtype=float)
    group, peers = (n > 1).astype(float), n - 1.0
    design = np.column_stack([group, peers, group * nvls, peers * nvls])
    beyond = rows["peak_memory_gb"].to_numpy(dtype=float) * 1e9 - counted
    return dict(zip(RESERVE_PARAMETERS, np.linalg.lstsq(design, beyond, rcond=None)[0].tolist()))


def serving_band() -> tuple[float, float]:
    """(low, high) factors that take a predicted serving time (a decoding step, a prefill, a static
    batch) to the range of the real one, out of sample."""
    values = _data.calibrated()
    return tuple(values[f"serving/q{int(q * 100):02d}"] for q in BAND_QUANTILES)
