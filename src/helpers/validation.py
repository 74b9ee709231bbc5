"""Published measurements set against this package's estimates.

Training (``data/training_runs.csv``): each run's published figure (GPU-hours, tokens/s per GPU,
TFLOP/s per GPU or MFU) is turned into model-FLOP utilization with :func:`compute.flops_per_token`;
the default band of :func:`compute.efficiency` should contain it (times the goodput band for
end-to-end runs reported in GPU-hours). Predicted time scales as 1/MFU, so the error of the
expected time is published MFU / expected MFU - 1.

Inference (``data/inference_runs.csv``): batch-1 decoding speed and time to first token, each
predicted by :func:`compute.decode_throughput` or :func:`compute.prefill_time` with defaults.
"""

from dataclasses import replace

import pandas as pd

from . import _data, comm, compute, gpus, models, scaling
from .estimate import Estimate
from .units import HOUR


def run_model(row: pd.Series) -> models.Model:
    """The preset named in the row, or a dense shape with the row's layers and width."""
    if isinstance(row["model"], str):
        return models.get(row["model"])
    d = int(row["d_model"])
    return replace(models.dense(float(row["n_params"]), name=row["run"]), n_layers=int(row["n_layers"]), d_model=d,
                   n_heads=d // 128, n_kv_heads=d // 128, d_ff=4 * d)


def published_mfu(row: pd.Series) -> float:
    """Model-FLOP utilization implied by the row's published figure (first of GPU-hours,
    tokens/s per GPU, TFLOP/s per GPU, MFU that the row has)."""
    peak = gpus.get(row["gpu"]).peak_flops(row["dtype"])
    per_token = compute.flops_per_token(run_model(row), seq_len=int(row["seq_len"]))
    if not pd.isna(row["gpu_hours"]):
        return per_token * row["tokens"] / (row["gpu_hours"] * HOUR) / peak
    if not pd.isna(row["tokens_per_sec_per_gpu"]):
        return per_token * row["tokens_per_sec_per_gpu"] / peak
    if not pd.isna(row["tflops_per_gpu"]):
        recompute = 3 / 4 if row["flops_basis"] == "full recompute" else 1.0
        return row["tflops_per_gpu"] * 1e12 * recompute / peak
    return float(row["mfu"])


def training_runs() -> pd.DataFrame:
    """Every published run with its implied MFU, the default band and the error of the expected time."""
    rows = []
    for _, row in _data.table("training_runs").iterrows():
        arch = gpus.get(row["gpu"]).architecture
        band = compute.efficiency("mfu", arch, row["dtype"])
        end_to_end = not pd.isna(row["gpu_hours"])
        if end_to_end:
            goodput = compute.efficiency("goodput", arch, row["dtype"])
            band = Estimate(band.low * goodput.low, band.expected * goodput.expected, band.high * goodput.high)
        mfu = published_mfu(row)
        rows.append({"id": row["id"], "run": row["run"], "GPU": row["gpu"], "dtype": row["dtype"],
                     "end to end": end_to_end, "published MFU": mfu, "band low": band.low,
                     "band expected": band.expected, "band high": band.high,
                     "inside band": band.contains(round(mfu, 3)), "time error": mfu / band.expected - 1,
                     "source": row["source"]})
    return pd.DataFrame(rows)


def inference_runs() -> pd.DataFrame:
    """Every published inference measurement with the default prediction: decoding in tokens/s
    per sequence (batch 1), prefill in seconds to the first token. For decoding, the fraction of
    peak memory bandwidth the published speed implies (bytes read per step times steps per second)."""
    rows = []
    for _, row in _data.table("inference_runs").iterrows():
        n = int(row["n_gpus"])
        if row["kind"] == "decode":
            band = compute.decode_throughput(row["model"], row["gpu"], n_gpus=n, batch_size=int(row["batch_size"]),
                                             context_len=int(row["context_len"]), weight_dtype=row["weight_dtype"],
                                             kv_dtype=row["kv_dtype"])
            published = row["value"] if row["metric"] == "tokens_per_s" else 1000 / row["value"]
            unit = "tokens/s"
            _, read = compute.decode_step(row["model"], batch_size=int(row["batch_size"]),
                                          context_len=int(row["context_len"]), weight_dtype=row["weight_dtype"],
                                          kv_dtype=row["kv_dtype"], n_gpus=n)
            achieved = published / int(row["batch_size"]) * read / gpus.get(row["gpu"]).memory_bandwidth
        else:
            band = compute.prefill_time(row["model"], row["gpu"], int(row["prompt_len"]), n_gpus=n,
                                        batch_size=int(row["batch_size"]), dtype=row["weight_dtype"])
            published, unit, achieved = row["value"] / 1000, "s", None
        rows.append({"id": row["id"], "kind": row["kind"], "model": row["model"], "GPU": row["gpu"], "GPUs": n,
                     "weights": row["weight_dtype"], "unit": unit, "published": published, "band low": band.low,
                     "expected": band.expected, "band high": band.high, "inside band": band.contains(published),
                     "error": band.expected / published - 1, "bandwidth fraction": achieved,
                     "framework": row["framework"], "source": row["source"]})
    return pd.DataFrame(rows)


def communication_runs() -> pd.DataFrame:
    """Every NCCL all-reduce measurement (bus bandwidth of large messages, time of small ones)
    with the prediction of :mod:`comm` and its error."""
    rows = []
    for _, row in _data.table("nccl_runs").iterrows():
        nodes, per_node, size = int(row["n_nodes"]), int(row["gpus_per_node"]), float(row["message_bytes"])
        if nodes > 1:
            t = comm.multinode_allreduce_time(size, nodes, per_node, row["intra"], row["inter"],
                                              nics_per_node=int(row["nics_per_node"]))
        else:
            t = comm.allreduce_time(size, per_node, row["intra"])
        if row["metric"] == "busbw":
            predicted = comm.bus_bandwidth("allreduce", size, nodes * per_node, t.expected) / 1e9
        else:
            predicted = t.expected * 1e6
        rows.append({"id": row["id"], "GPU": row["gpu"], "GPUs": nodes * per_node, "nodes": nodes,
                     "link": row["intra"] if nodes == 1 else f"{row['intra']} + {int(row['nics_per_node'])} x {row['inter']}",
                     "message (bytes)": size, "metric": row["metric"], "unit": row["unit"], "published": row["value"],
                     "predicted": predicted, "error": predicted / row["value"] - 1, "source": row["source"]})
    return pd.DataFrame(rows)


def ddp_runs(*, overlap: float = 1.0) -> pd.DataFrame:
    """Published data-parallel weak-scaling runs (ResNet-152, PyTorch DDP): measured efficiency
    against the step model, with the single-GPU step time as the compute time and fp32 gradients
    (DDP all-reduces the fp32 ``.grad`` of each parameter, also under autocast)."""
    table = _data.table("ddp_runs")
    rows = []
    for _, row in table.iterrows():
        single = table[(table["gpu"] == row["gpu"]) & (table["n_gpus"] == 1)].iloc[0]
        compute_s = row["batch_per_gpu"] / single["images_per_s_per_gpu"]
        step = scaling.data_parallel_step(row["params"] * 4, compute_s, int(row["n_gpus"]), row["link"], overlap=overlap)
        rows.append({"id": row["id"], "model": row["model"], "GPU": row["gpu"], "link": row["link"],
                     "GPUs": int(row["n_gpus"]), "batch per GPU": int(row["batch_per_gpu"]),
                     "measured efficiency": row["images_per_s_per_gpu"] / single["images_per_s_per_gpu"],
                     "predicted efficiency": step.efficiency, "source": row["source"]})
    return pd.DataFrame(rows)
