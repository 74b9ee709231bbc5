"""Which GPUs, and how many: sweep the catalog for a workload and rank what works.

For training tasks every GPU is tried at every power-of-two count, each on the fastest parallel
layout that fits (:mod:`planner`: tensor parallelism inside the NVLink domain, pipeline and data
parallelism over the servers' real network, the model's own global batch; adapters for LoRA and
QLoRA); a plan that loses more than a fifth of its time to splitting the work is marked
interconnect-bound and not recommended. For serving, every tensor-parallel degree and weight format. Each GPU keeps its best option that
fits and meets the constraints (cheapest where a price is known, else fastest), or, when none
does, the option that came closest, with the constraint that binds and a one-line reason.
"""

from math import nan

import pandas as pd

from . import compare, compute, cost, gpus, memory, planner
from .memory import as_model
from .models import Model
from .units import DAY, check_positive

TASKS = ("pretrain", "finetune", "lora", "qlora", "serve")
COUNTS = tuple(2**k for k in range(13))
#: LoRA skips the weight gradients of the frozen base: about 4 instead of 6 FLOPs per parameter per token
#: (forward, and backward through the activations only; Hu et al. 2021, arXiv:2106.09685, Sec. 4.2).
ADAPTER_FLOPS_FACTOR = 4 / 6
#: Below this data-parallel efficiency the network, not the GPUs, sets the pace.
INTERCONNECT_FLOOR = 0.8
#: Training deadline when none is given: a quarter, a common planning horizon (an assumption).
DEFAULT_DEADLINE_DAYS = 90
#: GeForce cards stay in one workstation: NVIDIA's GeForce software licence states 'No Datacenter
#: Deployment. The SOFTWARE is not licensed for datacenter deployment' (clause added December 2017).
CONSUMER_MAX_GPUS = 8
#: Workstation cards (RTX A-series, RTX 6000 Ada) are rented one machine of up to 8 at a time: none
#: of the providers in prices.csv offers them as multi-server clusters with a scale-out network.
WORKSTATION_MAX_GPUS = 8
#: Most GPUs of a market segment one job can use; the selector tries no more.
SEGMENT_MAX_GPUS = {"consumer": CONSUMER_MAX_GPUS, "workstation": WORKSTATION_MAX_GPUS}


def _train_options(m: Model, g: gpus.GPU, counts: tuple[int, ...], task: str, tokens: float, seq_len: int) -> list[dict]:
    """One option per GPU count: full training on the planner's best layout; LoRA and QLoRA train
    adapters over data parallelism with the frozen base replicated."""
    rate = cost.price(g, "cloud_hour")
    method = task if task in ("lora", "qlora") else "full"
    adapter = None if method == "full" else memory.training(m, dtype=planner.training_dtype(g), method=method,
                                                             recompute="full", seq_len=seq_len)
    options = []
    for n, plan in zip(counts, planner.plans(m, g, counts, seq_len=seq_len, tokens=tokens)):
        if plan is None:  # the model's batch cannot keep this many GPUs busy
            continue
        time = compute.run_time(plan, tokens)
        settings, need = plan.layout.describe(), plan.memory_per_gpu
        fits = plan.fits
        if adapter is not None:  # the frozen base is replicated: the same memory on every GPU
            time = time * ADAPTER_FLOPS_FACTOR
            settings, need, fits = f"{method}, data parallel {n}, full recompute", adapter.total, memory.fits(adapter, g)
        days = time.expected / DAY
        options.append({"gpu": g.name, "n_gpus": n, "settings": settings, "fits": fits,
                        "memory per GPU (GB)": need / 1e9, "days": days, "days low": time.low / DAY,
                        "days high": time.high / DAY, "scaling efficiency": plan.scaling_efficiency,
                        "limit": plan.binding, "cost_usd": days * 24 * n * rate if rate else nan})
    return options


def _serve_option(m: Model, g: gpus.GPU, tp: int, dtype: str, batch_size: int, context_len: int) -> dict:
    e = compare.serving_estimate(m, g, n_gpus=tp, weight_dtype=dtype, batch_size=batch_size, context_len=context_len)
    tps, rate = e["tokens/s"].expected, cost.price(g, "cloud_hour")
    return {"gpu": g.name, "n_gpus": tp, "settings": f"{dtype} weights, tensor parallel {tp}",
            "fits": e["fits"], "memory per GPU (GB)": e["memory per GPU (GB)"], "tokens/s": tps,
            "ms per token": batch_size / tps * 1000, "bound": "memory bandwidth" if e["bound"] == "memory" else "compute",
            "cost_usd": rate * tp / (tps * 3600) * 1e6 if rate else nan}


def _training_verdict(row: dict, deadline_days: float | None, budget_usd: float | None) -> tuple[str, str]:
    if not row["fits"]:
        return "memory", f"needs {row['memory per GPU (GB)']:,.0f} GB per GPU even at {row['settings']}"
    if deadline_days and row["days"] > deadline_days:
        return "deadline", f"{row['days']:,.0f} days at {row['n_gpus']} GPUs, over the {deadline_days:g}-day deadline"
    if budget_usd and row["cost_usd"] > budget_usd:
        return "budget", f"${row['cost_usd']:,.0f} on demand, over the ${budget_usd:,.0f} budget"
    if row["scaling efficiency"] < INTERCONNECT_FLOOR:
        return "interconnect", (f"{row['days']:,.1f} days, but only {row['scaling efficiency']:.0%} scaling efficiency "
                                f"({row['limit']} sets the pace)")
    return "compute", f"{row['days']:,.1f} days on {row['n_gpus']} GPUs" + (
        f", ${row['cost_usd']:,.0f} on demand" if row["cost_usd"] == row["cost_usd"] else ", no dated price")


def _serving_verdict(row: dict, latency_ms: float | None, budget_usd: float | None) -> tuple[str, str]:
    if not row["fits"]:
        return "memory", f"needs {row['memory per GPU (GB)']:,.0f} GB per GPU at {row['settings']}"
    if latency_ms and row["ms per token"] > latency_ms:
        return "latency", f"{row['ms per token']:,.1f} ms per token, over the {latency_ms:g} ms target"
    if budget_usd and row["cost_usd"] > budget_usd:
        return "budget", f"${row['cost_usd']:,.2f} per million tokens, over ${budget_usd:,.2f}"
    price = f", ${row['cost_usd']:,.2f} per million tokens" if row["cost_usd"] == row["cost_usd"] else ", no dated price"
    return row["bound"], f"{row['tokens/s']:,.0f} tokens/s, {row['ms per token']:,.1f} ms per token{price}"


def recommend(model: "Model | str | float", *, task: str = "pretrain", tokens: float = 1e12,
              deadline_days: float | None = DEFAULT_DEADLINE_DAYS, budget_usd: float | None = None, batch_size: int = 1,
              context_len: int = 4096, latency_ms: float | None = None, seq_len: int = 2048,
              max_gpus: int = 4096, gpu_names: list[str] | None = None) -> pd.DataFrame:
    """Every GPU's best option for ``task``, ranked best first.

    Training tasks use ``tokens``, ``deadline_days`` (90 unless given; None for none) and
    ``budget_usd`` (on demand, US dollars);
    ``serve`` uses ``batch_size``, ``context_len``, ``latency_ms`` (per output token) and
    ``budget_usd`` (per million tokens). Columns: gpu, n_gpus, settings, fits, days or tokens/s,
    cost_usd (NaN without a dated price), binding (memory, compute, memory bandwidth,
    interconnect, latency, deadline or budget) and reason. Consumer and workstation cards are
    tried on one machine only (:data:`SEGMENT_MAX_GPUS`).
    """
    if task not in TASKS:
        raise ValueError(f"task={task!r} is not supported; choose one of {', '.join(TASKS)}")
    m = as_model(model)
    check_positive("max_gpus", max_gpus, integer=True)
    for name, value in (("deadline_days", deadline_days), ("budget_usd", budget_usd), ("latency_ms", latency_ms)):
        if value is not None:
            check_positive(name, value)
    best = []
    for g in gpus.get_all("gpu_names", gpus.names() if gpu_names is None else gpu_names):
        if task == "serve":
            options = [_serve_option(m, g, tp, dtype, batch_size, context_len)
                       for tp in (1, 2, 4, 8) if tp <= max_gpus and m.n_heads % tp == 0
                       for dtype in ("bf16", "fp8", "int8", "int4") if dtype != "fp8" or g.supports("fp8")]
            verdicts = [_serving_verdict(o, latency_ms, budget_usd) for o in options]
        else:
            check_positive("tokens", tokens)
            most = min(max_gpus, SEGMENT_MAX_GPUS.get(g.segment, max_gpus))
            options = _train_options(m, g, tuple(n for n in COUNTS if n <= most), task, tokens, seq_len)
            verdicts = [_training_verdict(o, deadline_days, budget_usd) for o in options]
        for option, (binding, reason) in zip(options, verdicts):
            option.update(binding=binding, reason=reason, ok=binding in ("compute", "memory bandwidth"))
        feasible = [o for o in options if o["ok"]]
        if feasible and task == "serve":  # cheapest per token, else most tokens/s per GPU
            best.append(min(feasible, key=lambda o: (o["cost_usd"] != o["cost_usd"], o["cost_usd"],
                                                     -o["tokens/s"] / o["n_gpus"])))
        elif feasible:  # the fewest GPUs that meet the constraints: the same GPU-hours, the least capacity
            best.append(min(feasible, key=lambda o: o["n_gpus"]))
        elif options:  # what came closest: the fastest that fits, else the largest tried
            fitting = [o for o in options if o["fits"]]
            best.append(min(fitting, key=lambda o: o["days"]) if fitting and task != "serve"
                        else max(fitting or options, key=lambda o: o["n_gpus"]))
    table = pd.DataFrame(best)
    speed = "tokens/s" if task == "serve" else "days"
    table["_rank"] = list(zip(~table["ok"], table["cost_usd"].isna(), table["cost_usd"].fillna(0),
                              -table[speed] if task == "serve" else table[speed]))
    return table.sort_values("_rank").drop(columns=["_rank", "ok"]).reset_index(drop=True)


def largest_trainable(gpu: "gpus.GPU | str", n_gpus: int, **kwargs) -> int:
    """Largest dense model, in whole billions of parameters (up to 1000), whose full training fits
    ``n_gpus`` of ``gpu`` with ZeRO-3 and full recomputation (0 if none)."""
    g = gpus.get(gpu)
    check_positive("n_gpus", n_gpus, integer=True)
    fits = [b for b in range(1, 1001)
            if memory.fits(memory.training(b * 1e9, zero_stage=3, dp=n_gpus, recompute="full", **kwargs), g)]
    return max(fits, default=0)
