"""Published measurements set against this package's estimates.

Training (``data/training_runs.csv``): steady-state throughput of runs with a stated layout
against the step model (:mod:`calibration`, which keeps calibration and test rows apart), and
GPU-hours of whole runs against :func:`compute.training_time`.

Inference (``data/inference_runs.csv``): decoding speed, time to first token and static-batch
throughput against the serving step model (:mod:`serving`), calibration and test rows apart; and
serving under load (``data/loaded_serving_runs.csv``) against :mod:`traffic`, out of sample but
for the single-client runs, on which the per-block bandwidth of an unsplit cache read is fitted,
and one model's runs with more clients, on which the host's time per sequence is fitted; and
maximum throughput (``data/throughput_runs.csv``, every request queued at once) against
:func:`traffic.saturated`, nothing fitted.

Memory (``data/memory_runs.csv``): measured peak GPU (and, with offload, host) memory of
fine-tuning runs with published settings against :func:`memory.training`, nothing fitted; and
(``data/memory_probe.csv``) what PyTorch keeps, measured tensor by tensor, against the model's count.
"""

from functools import cache

import pandas as pd

from . import _data, calibration, comm, compute, gpus, memory, models, planner, scaling, serving, steptime, traffic
from .units import GB, GiB, HOUR, check_choice


#: The test families the step model set out to match, with their published layouts: Megatron-LM 2021
#: (Narayanan et al.), Korthikanti et al. 2022, Llama 3 405B, MegaScale, BLOOM and OPT-175B (its target:
#: 5 % median error on their steady-state throughput).
REFERENCE_FAMILIES = ("narayanan-2021", "korthikanti-2022", "llama-3", "megascale", "bloom", "opt")


def training_runs() -> pd.DataFrame:
    """Every published training run set against the default estimate.

    Steady-state rows (a layout and a throughput): the step model of the row's layout
    (:mod:`calibration`), published and predicted tokens/s per GPU, the time error (predicted /
    published time - 1) and whether the published time lies in the band. End-to-end rows
    (GPU-hours of a whole run on a stated GPU count): :func:`compute.run_time` of the published layout,
    or where none is published of the planner's (:func:`planner.plan`, at the published batch where
    stated), with its band and goodput; where the publication derived its GPU-hours from a steady
    throughput (``gpu_hours_basis`` "throughput"), with no downtime (goodput 1). Test rows were
    used for neither the fit nor the band.

    ``short step``: whether the predicted step is shorter than :data:`steptime.SHORT_STEP_S`, where
    the model is known to be too fast. Beside each, ``half-peak error``: the time error of a plain
    constant, every FLOP of the layout (its recomputation included) at half the dense peak, with no communication and no downtime
    (:func:`compute.training_time` with ``mfu=0.5, goodput=1``): the baseline the step model has to beat."""
    rows = calibration.runs()
    cal = steptime.default_calibration()
    out = []
    for (layout, step), (_, r) in zip(calibration.best_layouts(rows, cal), rows.iterrows()):
        low, high = calibration.band(r["GPU"], r["dtype"])  # on time: throughput divides by them
        predicted = step.tokens_per_second_per_gpu
        seconds = _half_peak(r["model"], layout, r["GPU"], layout.tokens)  # one step
        out.append({"id": r["id"], "run": r["run"], "family": r["family"], "split": r["split"], "GPU": r["GPU"],
                    "GPUs": r["GPUs"], "dtype": r["dtype"], "end to end": False, "layout": layout.describe(),
                    "unit": "tokens/s per GPU", "published": r["published"], "predicted": predicted,
                    "band low": predicted / high, "band high": predicted / low,
                    "time error": r["published"] / predicted - 1,
                    "inside band": bool(predicted / high <= r["published"] <= predicted / low),
                    "half-peak error": r["published"] * r["GPUs"] * seconds / layout.tokens - 1,
                    "short step": step.total < steptime.SHORT_STEP_S, "source": r["source"]})
    table = _data.table("training_runs")
    for _, r in table[table["gpu_hours"].notna() & table["n_gpus"].notna()].iterrows():
        best = _whole_run_plan(r, cal)
        n = best.n_gpus
        steady = r["gpu_hours_basis"] == "throughput"  # tokens over a steady throughput: no downtime in it
        hours = compute.run_time(best, float(r["tokens"]), goodput=1.0 if steady else None).map(lambda t: t * n / HOUR)
        constant = _half_peak(calibration.run_model(r), best.layout, r["gpu"], float(r["tokens"])) * n / HOUR
        out.append({"id": r["id"], "run": r["run"], "family": r["family"], "split": r["split"], "GPU": r["gpu"],
                    "GPUs": n, "dtype": r["dtype"], "end to end": True, "layout": best.layout.describe(),
                    "unit": "GPU-hours", "published": float(r["gpu_hours"]), "predicted": hours.expected,
                    "band low": hours.low, "band high": hours.high, "time error": hours.expected / float(r["gpu_hours"]) - 1,
                    "inside band": bool(hours.contains(float(r["gpu_hours"]))),
                    "half-peak error": constant / float(r["gpu_hours"]) - 1,
                    "short step": best.step.total < steptime.SHORT_STEP_S, "source": r["source"]})
    return pd.DataFrame(out)


def same_layout_ratio(family: str, gpu: str, other: str) -> pd.Series:
    """Published steady throughput per GPU on ``gpu`` over that on ``other``, for the runs of
    ``family`` that train the same model with the same layout and dtype on both (one value per
    such pair, by model; empty where they share none): what a GPU gains where its datasheet rates
    and the step model see none. ``gpu`` and ``other`` are GPUs the family's runs use."""
    runs = _data.table("training_runs")
    table = runs[(runs["family"] == check_choice("family", family, tuple(sorted(runs["family"].unique())))) &
                 runs["tp"].notna()]
    used = tuple(sorted(table["gpu"].unique()))
    check_choice("gpu", gpu, used)
    check_choice("other", other, used)
    key = ["model", "dtype", "tp", "pp", "vpp", "dp", "micro_batch", "global_batch", "zero_stage"]
    published = pd.Series([calibration.published_throughput(r) for _, r in table.iterrows()], index=table.index)
    by_gpu = table[key + ["gpu"]].assign(published=published).set_index(key + ["gpu"])["published"].unstack("gpu")
    return (by_gpu[gpu] / by_gpu[other]).dropna().droplevel(key[1:])


def _half_peak(model: models.Model, layout: steptime.Layout, gpu: str, tokens: float) -> float:
    """Seconds for ``tokens`` tokens on ``layout``'s GPUs at half the dense peak, every FLOP of the
    layout counted (its recomputation included), no communication, no downtime."""
    return compute.training_time(model, tokens, gpu, layout.n_gpus, dtype=layout.dtype, mfu=0.5, goodput=1.0,
                                 seq_len=layout.seq_len, recompute=layout.recompute).expected


def _whole_run_plan(row: pd.Series, cal: steptime.Calibration) -> planner.Plan:
    """The layout a whole run is timed on: the one it published (the fastest of its candidates that
    fits, as for steady-state rows), else the planner's, at the published batch where stated."""
    m, s = calibration.run_model(row), int(row["seq_len"])
    if pd.isna(row["tp"]):
        batch = None if pd.isna(row["global_batch"]) else float(row["global_batch"]) * s
        return planner.plan(m, row["gpu"], int(row["n_gpus"]), seq_len=s, tokens=float(row["tokens"]),
                            global_batch_tokens=batch, dtype=row["dtype"], network=calibration.run_network(row))
    stated = pd.DataFrame([calibration.layout_row(row)])
    ((layout, step),) = calibration.best_layouts(stated, cal)
    need, g = planner.layout_bytes(m, layout), gpus.get(row["gpu"])
    return planner.Plan(gpu=g.name, n_gpus=layout.n_gpus, layout=layout, step=step, memory_per_gpu=need,
                        fits=need <= g.reported_memory_bytes)


def _run_model(row: pd.Series) -> models.Model:
    """A measured run's model from its row's shapes (:func:`calibration.run_model`), the output head
    (``head_size``: the vocabulary, or a classifier's labels) as its vocabulary."""
    return calibration.run_model(row.drop("model").rename({"head_size": "vocab_size"}))


def _memory_run(row: pd.Series) -> memory.MemoryBreakdown:
    """:func:`memory.training` with a measured run's settings and model (:func:`_run_model`)."""
    m = _run_model(row)
    return memory.training(m, dtype=row["dtype"], amp=bool(row["amp"]), optimizer=row["optimizer"], method=row["method"],
                           lora_rank=16 if pd.isna(row["lora_rank"]) else int(row["lora_rank"]),
                           micro_batch_size=int(row["micro_batch"]), seq_len=int(row["seq_len"]),
                           recompute=row["recompute"], zero_stage=int(row["zero_stage"]), offload=row["offload"],
                           flash_attention=bool(row["flash_attention"]), dropout=bool(row["dropout"]), loss=row["loss"])


def memory_runs() -> pd.DataFrame:
    """Measured fine-tuning memory against :func:`memory.training` (GiB; error: predicted / measured - 1),
    with each run's recompute and offload settings.

    The GPU figure compares like with like: NVML's used memory ("device") with the whole estimate,
    the allocator's peak ("allocator", ``torch.cuda.max_memory_allocated``) with the estimate less
    the CUDA context. Host memory, where offloaded, is compared as the growth over the same script
    without offload (``host_baseline``), since the process holds its libraries and data either way."""
    table = _data.table("memory_runs").set_index("id")
    out = []
    for run_id, r in table.iterrows():
        b = _memory_run(r)
        gpu = (b.total - (memory.RUNTIME_OVERHEAD if r["gpu_basis"] == "allocator" else 0.0)) / GiB
        host = measured_host = float("nan")
        if not pd.isna(r["host_baseline"]):
            host, measured_host = b.host / GiB, r["measured_host_gib"] - table.loc[r["host_baseline"], "measured_host_gib"]
        out.append({"id": run_id, "run": r["run"], "recompute": r["recompute"], "offload": r["offload"],
                    "measured GPU (GiB)": r["measured_gpu_gib"], "predicted GPU (GiB)": gpu,
                    "GPU error": gpu / r["measured_gpu_gib"] - 1, "measured host (GiB)": measured_host,
                    "predicted host (GiB)": host, "host error": host / measured_host - 1, "basis": r["gpu_basis"],
                    "source": r["source"]})
    return pd.DataFrame(out)


def memory_probe() -> pd.DataFrame:
    """What PyTorch keeps, measured on the CPU (``data/memory_probe.csv``, written by
    ``benchmarks/probe_memory.py``), beside the memory model's count of the same thing: the bytes
    autograd saves for one BERT-large layer (the model of ``memory_runs.csv``'s BERT rows) at 1 x 512
    tokens without dropout, in fp32 (P01) and under bf16 autocast (P02); the peak of Hugging Face's
    causal-LM loss in fp32 copies of the logits (P03, :data:`memory.LOSSES`); and the layer that
    gradient checkpointing rebuilds, beyond the input it keeps, in layers (P04). ``error``: model /
    measured - 1."""
    probe = _data.table("memory_probe")
    bert = _run_model(_data.table("memory_runs").set_index("id").loc["F01"])

    def layer(**kw) -> float:
        return memory.activations_per_layer(bert, 1, 512, flash_attention=False, **kw)
    whole = layer(dtype="fp32")
    model = {"P01": whole, "P02": layer(dtype="bf16", amp=True), "P03": float(memory.LOSSES["unfused"]),
             "P04": (whole - layer(dtype="fp32", recompute="full")) / whole}
    return probe.assign(model=probe["id"].map(model), error=probe["id"].map(model) / probe["measured"] - 1)


def inference_runs() -> pd.DataFrame:
    """Every published inference measurement against the serving step model with its stored
    parameters (:mod:`serving`; fitted on the calibration rows only): decoding speed in tokens/s
    of all sequences, prefill in seconds to the first token, static batches in output tokens/s per
    GPU. The band comes from leave-one-group-out errors, no faster than the roofline; ``error`` is predicted / published - 1 in the row's unit."""
    rows = calibration.serving_runs()
    cal, (low, high) = serving.default_calibration(), calibration.serving_band()
    out = []
    for (_, row), seconds in zip(rows.iterrows(), calibration.predict_serving(rows, cal)):

        floor = sum(s.seconds(cal)["roofline"].sum() for s in row["steps"])
        times = (max(seconds * low, min(floor, seconds)), seconds, seconds * high)
        batch, n = int(row["batch_size"]), int(row["n_gpus"])
        if row["kind"] == "prefill":
            unit, convert = "s", lambda t: t
        elif row["kind"] == "decode":
            unit, convert = "tokens/s", lambda t, b=batch: b / t
        else:
            output = int(row["context_len"]) - int(row["prompt_len"])
            unit, convert = "tokens/s per GPU", lambda t, b=batch, o=output, n=n: b * o / t / n
        published, (slow, expected, fast) = convert(row["published"]), (convert(t) for t in times)
        low_end, high_end = sorted((slow, fast))
        out.append({"id": row["id"], "kind": row["kind"], "split": row["split"], "group": row["group"],
                    "model": row["model"], "GPU": row["gpu"], "GPUs": n, "weights": row["weight_dtype"], "batch": batch,
                    "prompt": int(row["prompt_len"]), "context": int(row["context_len"]), "unit": unit,
                    "published": published, "band low": low_end, "expected": expected, "band high": high_end,
                    "inside band": low_end <= published <= high_end, "error": expected / published - 1,
                    "framework": row["framework"], "source": row["source"]})
    return pd.DataFrame(out)


@cache
def loaded_runs() -> pd.DataFrame:
    """Serving under load (``data/loaded_serving_runs.csv``: closed-loop benchmarks at 1 to 250
    clients) against :func:`traffic.closed_loop` of the serving step model, NIM's TensorRT-LLM
    reading the cache without a split: time per output token, output tokens/s and time to first
    token, with errors (predicted / published - 1), whether the batch in flight fits the KV cache,
    and the split: the single-client runs fit ``kv_block_bandwidth``
    (:func:`calibration.single_client_runs`) and one model's runs with more clients fit
    ``host_seconds`` (:func:`calibration.host_runs`); the others fit nothing. Computed once
    (cached; callers must not mutate it), as :func:`static_batch_runs`."""
    fitted = set(calibration.single_client_runs()["id"]) | set(calibration.host_runs()["id"])
    rows = []
    for _, row in _data.table("loaded_serving_runs").iterrows():
        r = traffic.replica(row["model"], row["gpu"], tp=int(row["n_gpus"]), prompt_len=int(row["prompt_len"]),
                            output_len=int(row["output_len"]), weight_dtype=row["weight_dtype"], split_kv=False)
        at = traffic.closed_loop(r, int(row["concurrency"]))
        predicted = {"ms per token": at.time_per_token * 1000, "output tokens/s": at.output_tokens_per_s,
                     "first token (ms)": at.time_to_first_token * 1000}
        published = {"ms per token": row["itl_ms"], "output tokens/s": row["output_tokens_per_s"],
                     "first token (ms)": row["ttft_ms"]}
        rows.append({"id": row["id"], "model": row["model"], "GPU": row["gpu"], "GPUs": int(row["n_gpus"]),
                     "weights": row["weight_dtype"], "clients": int(row["concurrency"]), "prompt": int(row["prompt_len"]),
                     "output": int(row["output_len"]), "fits": at.fits,
                     "split": "calibration" if row["id"] in fitted else "test",
                     **{f"published {k}": v for k, v in published.items()},
                     **{f"predicted {k}": v for k, v in predicted.items()},
                     **{f"error {k}": predicted[k] / published[k] - 1 for k in predicted}})
    return pd.DataFrame(rows)


@cache
def static_batch_runs() -> pd.DataFrame:
    """TensorRT-LLM 0.9.0 static batches (``data/static_batch_runs.csv``) against the serving step
    model and the memory model, none of them used to fit the step model, and only the memory of the
    runs on :data:`calibration.MEMORY_CALIBRATION_GPUS` (``memory split``) to fit the communication
    reserve of a tensor-parallel group (:func:`memory.communication_reserve`): the mean decoding step
    (token-to-token latency) and the batch's prefill (first-token latency), in ms, and the peak
    memory per GPU in decimal GB (``cudaMemGetInfo``'s used memory, CUDA context included, as
    gptSessionBenchmark reports it), with errors (predicted / published - 1).

    NVIDIA Deep Learning Institute, 'Sizing LLM inference systems' course data: gptSessionBenchmark
    runs of one static batch of identical dummy prompts on fake weights, with the XQA attention
    kernel and without multi-block mode (off by default in that release), so that decoding reads
    each sequence's cache with one thread block per KV head (``split_kv=False``; its per-block
    bandwidth is fitted on NIM's single-client runs, not on these) (wbing520/ai-performance-engineering @0e25b2e,
    code/ch10_inference/inference_gpu_cluster_sizing/dataset/trt_llm_0_9_0_dli.csv; ``source`` names
    the row). Its 'Mixed' precision is read as fp16 weights and KV cache, FP8 as FP8 weights with an
    FP8 KV cache (assumed). Left out: Falcon 180B and the GH200 (not in the catalog), runs without
    a latency, and Mixtral 8x7B, whose identical prompts send every sequence to the same experts
    (on two H200 in fp16 a step of 8 sequences takes 5.9 ms, one of a single sequence 5.5 ms),
    which real traffic does not. Token-to-token latency averages the steps at contexts prompt + 1
    to prompt + output - 1; a step's time being linear in its context, that is the step at
    prompt + output / 2. The memory is :func:`memory.inference` of the batch at its full context,
    except that the activation workspace holds the whole batch's prompts, which a static batch
    prefills at once, rather than one chunk (:func:`calibration.static_batch_memory`), with the
    communication reserve. Computed once (cached; callers must not mutate it):
    the appendix, ``out_of_sample`` and the benchmarks all read it."""
    cal, (low, high) = serving.default_calibration(), calibration.serving_band()
    rows = []
    for _, row in _data.table("static_batch_runs").iterrows():
        batch, prompt, output = int(row["batch_size"]), int(row["prompt_len"]), int(row["output_len"])
        kw = dict(tp=int(row["n_gpus"]), batch_size=batch, weight_dtype=row["weight_dtype"], kv_dtype=row["kv_dtype"])
        decode = serving.decode_steps(row["model"], row["gpu"], context_len=prompt + output // 2, split_kv=False, **kw)
        prefill = serving.prefill_steps(row["model"], row["gpu"], prompt, **kw)
        terms = {"ms per token": decode.seconds(cal), "first token (ms)": prefill.seconds(cal)}
        predicted = {k: 1000 * float(t["total"].sum()) for k, t in terms.items()}
        floor = {k: 1000 * float(t["roofline"].sum()) for k, t in terms.items()}  # the band stops at the roofline
        published = {"ms per token": row["token_to_token_ms"], "first token (ms)": row["first_token_ms"]}
        predicted["memory (GB)"] = (calibration.static_batch_memory(row) + memory.communication_reserve(kw["tp"], row["gpu"])) / GB
        published["memory (GB)"] = row["peak_memory_gb"]
        rows.append({"id": row["id"], "model": row["model"], "GPU": row["gpu"], "GPUs": kw["tp"],
                     "memory split": "calibration" if row["gpu"] in calibration.MEMORY_CALIBRATION_GPUS else "test",
                     "weights": row["weight_dtype"], "batch": batch, "prompt": prompt, "output": output,
                     **{f"published {k}": v for k, v in published.items()},
                     **{f"predicted {k}": v for k, v in predicted.items()},
                     **{f"error {k}": predicted[k] / published[k] - 1 for k in predicted},
                     **{f"inside band {k}": max(predicted[k] * low, min(floor[k], predicted[k])) <= published[k] <=
                        predicted[k] * high for k in terms}})
    return pd.DataFrame(rows)


#: The most sequences trtllm-bench lets an engine hold, however many its cache fits: its tuning caps
#: the engine's ``max_batch_size`` at 4,096 requests (tensorrt_llm/bench/build/tuning.py,
#: ``finetune_setting``; the 0.17 perf-overview's own example run shows "Max Runtime Batch Size: 4096").
TRTLLM_BENCH_MAX_BATCH = 4096


@cache
def throughput_runs() -> pd.DataFrame:
    """TensorRT-LLM's published maximum throughput (``data/throughput_runs.csv``: output tokens/s of
    ``trtllm-bench throughput``, every request queued at once, identical synthetic prompts and
    outputs of fixed lengths, from the perf-overview tables of releases 0.17 and 1.0) against
    :func:`traffic.saturated`, nothing fitted on them: the replica holds as many sequences as its
    KV cache takes with each request's prompt and whole output reserved at admission
    (TensorRT-LLM's ``GUARANTEED_NO_EVICT``, the default scheduler policy), at most
    :data:`TRTLLM_BENCH_MAX_BATCH`, and no host time (trtllm-bench drives the runtime in-process:
    no HTTP server, no streaming). ``on demand error``: the same replica holding sequences at their
    mean context instead (:func:`traffic.replica`'s default, an engine that grows the cache as
    tokens come), uncapped. Errors: predicted / published - 1 on tokens/s (positive: too fast);
    ``inside band``: the published rate within the serving band of the predicted one
    (:func:`calibration.serving_band`, on time, so that it divides); ``release``: the engine's;
    ``small share``, ``format miss`` and ``small experts``: whether the selector's caveat
    (:func:`traffic.peak_note`) for each of its three misses applies, ``caveat`` whether any does.

    FP8 runs quantize weights and KV cache to FP8 (the 0.17 tables' A100 column runs FP16); NVFP4
    runs are read with an FP8 KV cache, as NVIDIA's FP4 checkpoints ship it (assumed). Llama 3.1
    8B and 70B are :mod:`models`' Llama 3 8B and 70B, the same shapes (only the position encoding's
    scaling differs). Left out: GPUs outside the catalog (GH200), models outside it (Mixtral 8x22B),
    Mistral 7B, whose release the table does not name (v0.1 attends within a 4,096-token window,
    v0.3 does not; at 20,000 + 2,000 tokens the two differ fivefold in cache), release 1.0's
    mixtures of experts on several GPUs, whose expert and attention parallelism the table does not
    state, and its RTX PRO 6000 runs split into pipeline stages (not modelled). Computed once (cached; callers must
    not mutate it)."""
    low, high = calibration.serving_band()
    rows = []
    for _, row in _data.table("throughput_runs").iterrows():
        kw = dict(tp=int(row["tp"]), prompt_len=int(row["prompt_len"]), output_len=int(row["output_len"]),
                  weight_dtype=row["weight_dtype"], kv_dtype=row["kv_dtype"], host_seconds=0.0)
        reserved = traffic.replica(row["model"], row["gpu"], reserve_output=True, max_batch=TRTLLM_BENCH_MAX_BATCH, **kw)
        at, on_demand = traffic.saturated(reserved), traffic.saturated(traffic.replica(row["model"], row["gpu"], **kw))
        published = float(row["output_tokens_per_s"])
        predicted = at.output_tokens_per_s
        m, g = models.get(row["model"]), gpus.get(row["gpu"])
        small, experts = traffic._small_share(m, g, kw["tp"]), traffic._small_experts(m)
        fmt = traffic._format_miss(g, row["weight_dtype"]) is not None
        rows.append({"id": row["id"], "release": row["engine"], "model": row["model"], "GPU": row["gpu"], "GPUs": kw["tp"],
                     "weights": row["weight_dtype"], "prompt": kw["prompt_len"], "output": kw["output_len"],
                     "batch": reserved.max_batch, "published tokens/s": published, "predicted tokens/s": predicted,
                     "error": predicted / published - 1, "on demand error": on_demand.output_tokens_per_s / published - 1,
                     "inside band": predicted / high <= published <= predicted / low,
                     "small share": small, "format miss": fmt, "small experts": experts,
                     "caveat": small or fmt or experts})
    return pd.DataFrame(rows)


def communication_runs() -> pd.DataFrame:
    """Every NCCL all-reduce measurement (bus bandwidth of large messages, time of small ones)
    with the prediction of :mod:`comm` (NCCL's default algorithm unless the row forced one), its
    error, and what the row sets in ``data/interconnects.csv`` (an achieved fraction or a latency;
    empty for rows no parameter was taken from)."""
    rows = []
    for _, row in _data.table("nccl_runs").iterrows():
        nodes, per_node, size = int(row["n_nodes"]), int(row["gpus_per_node"]), float(row["message_bytes"])
        algorithm = row["algorithm"] if isinstance(row["algorithm"], str) else "auto"
        if nodes > 1:
            t = comm.multinode_allreduce_time(size, nodes, per_node, row["intra"], row["inter"],
                                              nics_per_node=int(row["nics_per_node"]), algorithm=algorithm)
        else:
            t = comm.allreduce_time(size, per_node, row["intra"], algorithm=algorithm)
        if row["metric"] == "busbw":
            predicted = comm.bus_bandwidth("allreduce", size, nodes * per_node, t.expected) / 1e9
        else:
            predicted = t.expected * 1e6
        rows.append({"id": row["id"], "GPU": row["gpu"], "GPUs": nodes * per_node, "nodes": nodes,
                     "link": row["intra"] if nodes == 1 else f"{row['intra']} + {int(row['nics_per_node'])} x {row['inter']}",
                     "algorithm": algorithm,
                     "message (bytes)": size, "metric": row["metric"], "unit": row["unit"], "published": row["value"],
                     "predicted": predicted, "error": predicted / row["value"] - 1,
                     "sets": row["sets"] if isinstance(row["sets"], str) else "", "source": row["source"]})
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


def out_of_sample() -> pd.DataFrame:
    """Each estimate of the book against the published measurements it was not fitted on: the
    estimate, how many measurements, the median and largest error (absolute, as a fraction) and
    the share inside the estimate's band (NaN where it has none). Training: test rows of
    :func:`training_runs` and every whole run; serving: test rows of :func:`inference_runs` by kind
    every test load of :func:`loaded_runs` whose batch fits and every static batch of
    :func:`static_batch_runs` (by batch size) and every maximum throughput of :func:`throughput_runs`
    (apart where :func:`traffic.peak_note` gives a caveat); memory: every fine-tuning run of
    :func:`memory_runs` and the static batches' peaks on the GPUs the communication reserve was not
    fitted on (``memory split``).
    For training, ``half the peak``: the median error of the plain constant of :func:`training_runs`
    (``half-peak error``) on the same runs, the baseline the step model has to beat."""
    training = training_runs()
    steady = training[~training["end to end"] & (training["split"] == "test")]
    whole = training[training["end to end"]]
    inference = inference_runs()
    test = inference[inference["split"] == "test"]
    loaded = loaded_runs()
    loaded = loaded[loaded["fits"] & (loaded["split"] == "test")]
    parts = [("training step, steady state", steady["time error"], steady["inside band"], steady["half-peak error"]),
             ("training, whole runs (GPU-hours)", whole["time error"], whole["inside band"], whole["half-peak error"])]
    parts += [(name, test.loc[test["kind"] == kind, "error"], test.loc[test["kind"] == kind, "inside band"], None)
              for name, kind in (("decoding at batch 1", "decode"), ("time to first token", "prefill"),
                                 ("static batches", "static batch"))]
    parts += [(f"under load: {what}", loaded[f"error {column}"], None, None)
              for what, column in (("time per output token", "ms per token"), ("output tokens/s", "output tokens/s"),
                                   ("time to first token", "first token (ms)"))]
    static = static_batch_runs()
    for name, rows in (("batch 1", static["batch"] == 1), ("batch 2-31", static["batch"].between(2, 31)),
                       ("batch 32 or more", static["batch"] >= 32)):
        parts.append((f"static batches, TensorRT-LLM 0.9: decoding step at {name}",
                      static.loc[rows, "error ms per token"], static.loc[rows, "inside band ms per token"], None))
    parts.append(("static batches, TensorRT-LLM 0.9: time to first token", static["error first token (ms)"],
                  static["inside band first token (ms)"], None))
    peak = throughput_runs()
    for name, rows in (("without a caveat", ~peak["caveat"]), ("where the selector gives a caveat", peak["caveat"])):
        parts.append((f"maximum throughput, TensorRT-LLM: {name}", peak.loc[rows, "error"], peak.loc[rows, "inside band"],
                      None))
    parts.append(("fine-tuning memory (GPU)", memory_runs()["GPU error"], None, None))
    parts.append(("serving memory, TensorRT-LLM 0.9 (peak per GPU)",
                  static.loc[static["memory split"] == "test", "error memory (GB)"], None, None))
    return pd.DataFrame([{"estimate": name, "measurements": len(errors), "median error": errors.abs().median(),
                          "largest error": errors.abs().max(),
                          "inside band": float("nan") if inside is None else float(inside.mean()),
                          "half the peak": float("nan") if baseline is None else baseline.abs().median()}
                         for name, errors, inside, baseline in parts])
