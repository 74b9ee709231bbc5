"""Which GPUs, and how many: sweep the catalog for a workload and rank what works.

For training tasks every GPU is tried at every power-of-two count, each on the fastest parallel
layout that fits (:mod:`planner`: tensor parallelism inside the NVLink domain, pipeline and data
parallelism over the servers' real network, the model's own global batch; adapters for LoRA and
QLoRA); a plan that loses more than a fifth of its time to splitting the work is marked
interconnect-bound and not recommended. For serving, every tensor-parallel degree and weight
format: at a traffic level (``requests_per_s``), the fewest replicas that meet it within the
latency targets (:mod:`traffic`), priced per million input and output tokens; without one, a fixed
batch. Each GPU keeps its best option that fits and meets the constraints (the fewest GPUs, then
the cheapest, for traffic; the cheapest where a price is known, else the fastest, for a fixed
batch), or, when none does, the option that came closest, with the constraint that binds and a
one-line reason.
"""

from functools import lru_cache
from math import nan

import pandas as pd

from . import compare, compute, cost, gpus, memory, planner, serving, traffic
from .memory import as_model
from .models import Model
from .units import DAY, check_positive, check_result

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


@lru_cache(maxsize=1024)
def _serving(m: Model, g: gpus.GPU, tp: int, dtype: str, batch_size: int, context_len: int) -> tuple:
    """(fits, memory per GPU in GB, tokens/s, bound) of :func:`compare.serving_estimate`, cached: a
    latency or budget move re-ranks the catalog without re-estimating it."""
    e = compare.serving_estimate(m, g, tp=tp, weight_dtype=dtype, batch_size=batch_size, context_len=context_len)
    return e["fits"], e["memory per GPU (GB)"], e["tokens/s"].expected, e["bound"]


def _serve_option(m: Model, g: gpus.GPU, tp: int, dtype: str, batch_size: int, context_len: int) -> dict:
    fits, need, tps, bound = _serving(m, g, tp, dtype, batch_size, context_len)
    rate = cost.price(g, "cloud_hour")
    return {"gpu": g.name, "n_gpus": tp, "settings": f"{dtype} weights, tensor parallel {tp}",
            "fits": fits, "memory per GPU (GB)": need, "tokens/s": tps,
            "ms per token": batch_size / tps * 1000, "bound": "memory bandwidth" if bound == "memory" else "compute",
            "cost_usd": rate * tp / (tps * 3600) * 1e6 if rate else nan}


def _traffic_option(g: gpus.GPU, tp: int, dtype: str, r: traffic.Replica, requests_per_s: float, prompt_len: int,
                    output_len: int, ttft_s: float | None, tpot_s: float | None, most: int) -> dict:
    caps = traffic.limits(r, ttft_s=ttft_s, tpot_s=tpot_s)
    p = traffic._sized(r, g.name, dtype, tp, requests_per_s, caps, max(1, most // tp))
    settings = f"{dtype} weights, tensor parallel {tp}"
    if p is None:  # one replica serves no traffic within the targets (shown as that replica), or too many are needed
        binding = min(caps, key=caps.get)
        return {"gpu": g.name, "n_gpus": most if caps[binding] > 0 else tp, "settings": settings, "fits": r.max_batch > 0,
                "tokens/s": 0.0,
                "ms per token": nan, "first token (ms)": r.prefill * 1000, "utilization": nan, "cost_usd": nan,
                "limit": binding, "per_replica": caps[binding], "unloaded_ms": r.fixed * 1000}
    rate, at = cost.price(g, "cloud_hour"), p.at_load
    return {"gpu": g.name, "n_gpus": p.n_gpus, "settings": f"{settings}, {p.replicas} replica{'s' * (p.replicas > 1)}",
            "fits": True, "tokens/s": requests_per_s * output_len, "ms per token": at.time_per_token * 1000,
            "first token (ms)": at.time_to_first_token * 1000, "utilization": at.utilization,
            "cost_usd": check_result(rate * p.n_gpus / (requests_per_s * (prompt_len + output_len) * 3600) * 1e6,
                                     requests_per_s=requests_per_s) if rate else nan,
            "limit": p.binding, "per_replica": p.per_replica_max, "unloaded_ms": nan}


#: The reason given where a budget is set and the GPU has no dated price to hold against it.
_UNPRICED = "no dated price to hold against the budget"


def _traffic_verdict(row: dict, budget_usd: float | None) -> tuple[str, str]:
    if not row["fits"]:
        return "memory", f"the weights alone do not fit at {row['settings']}"
    if row["ms per token"] != row["ms per token"]:  # no plan: one replica serves no traffic within the targets
        if row["limit"] == "time to first token":
            return row["limit"], f"an unloaded prompt already takes {row['first token (ms)']:,.0f} ms at {row['settings']}"
        if row["limit"] == "time per token":
            return row["limit"], f"an unloaded step already takes {row['unloaded_ms']:,.1f} ms at {row['settings']}"
        return row["limit"], f"{row['per_replica']:.3g} requests/s per replica: more GPUs than allowed at {row['settings']}"
    price = f"${row['cost_usd']:,.2f} per million tokens" if row["cost_usd"] == row["cost_usd"] else "no dated price"
    if budget_usd and not row["cost_usd"] <= budget_usd:
        return "budget", f"{price}, over ${budget_usd:,.2f}" if row["cost_usd"] == row["cost_usd"] else _UNPRICED
    return row["limit"], (f"{row['per_replica']:.3g} requests/s per replica ({row['limit']} binds); at this load "
                          f"{row['ms per token']:,.1f} ms per token, {row['first token (ms)']:,.0f} ms to the first "
                          f"token, {row['utilization']:.0%} busy; {price}")


def _training_verdict(row: dict, deadline_days: float | None, budget_usd: float | None) -> tuple[str, str]:
    if not row["fits"]:
        return "memory", f"needs {row['memory per GPU (GB)']:,.0f} GB per GPU even at {row['settings']}"
    if deadline_days and row["days"] > deadline_days:
        return "deadline", f"{row['days']:,.0f} days at {row['n_gpus']} GPUs, over the {deadline_days:g}-day deadline"
    if budget_usd and not row["cost_usd"] <= budget_usd:
        return "budget", (f"${row['cost_usd']:,.0f} on demand, over the ${budget_usd:,.0f} budget"
                          if row["cost_usd"] == row["cost_usd"] else _UNPRICED)
    if row["scaling efficiency"] < INTERCONNECT_FLOOR:
        return "interconnect", (f"{row['days']:,.1f} days, but only {row['scaling efficiency']:.0%} scaling efficiency "
                                f"({row['limit']} sets the pace)")
    return "compute", f"{row['days']:,.1f} days on {row['n_gpus']} GPU{'s' * (row['n_gpus'] > 1)}" + (
        f", ${row['cost_usd']:,.0f} on demand" if row["cost_usd"] == row["cost_usd"] else ", no dated price")


def _serving_verdict(row: dict, latency_ms: float | None, budget_usd: float | None) -> tuple[str, str]:
    if not row["fits"]:
        return "memory", f"needs {row['memory per GPU (GB)']:,.0f} GB per GPU at {row['settings']}"
    if latency_ms and row["ms per token"] > latency_ms:
        return "latency", f"{row['ms per token']:,.1f} ms per token, over the {latency_ms:g} ms target"
    if budget_usd and not row["cost_usd"] <= budget_usd:
        return "budget", (f"${row['cost_usd']:,.2f} per million tokens, over ${budget_usd:,.2f}"
                          if row["cost_usd"] == row["cost_usd"] else _UNPRICED)
    price = f", ${row['cost_usd']:,.2f} per million tokens" if row["cost_usd"] == row["cost_usd"] else ", no dated price"
    return row["bound"], f"{row['tokens/s']:,.0f} tokens/s, {row['ms per token']:,.1f} ms per token{price}"


def recommend(model: "Model | str | float", *, task: str = "pretrain", tokens: float = 1e12,
              deadline_days: float | None = DEFAULT_DEADLINE_DAYS, budget_usd: float | None = None, batch_size: int = 1,
              context_len: int = 4096, latency_ms: float | None = None, seq_len: int = 2048,
              requests_per_s: float | None = None, prompt_len: int = 1024, output_len: int = 256,
              ttft_s: float | None = None, tpot_s: float | None = None,
              max_gpus: int = 4096, gpu_names: list[str] | None = None) -> pd.DataFrame:
    """Every GPU's best option for ``task``, ranked best first.

    Training tasks use ``tokens``, ``deadline_days`` (90 unless given; None for none) and
    ``budget_usd`` (on demand, US dollars).
    ``serve`` at a traffic level uses ``requests_per_s`` of ``prompt_len`` input and ``output_len``
    output tokens, the targets ``ttft_s`` (time to first token, mean, under load) and ``tpot_s``
    (time per output token), and ``budget_usd`` (per million input and output tokens): columns
    gpu, n_gpus (all replicas), settings, fits, tokens/s (output), ms per token, first token (ms),
    utilization, cost_usd, binding (memory, time per token, time to first token, capacity or
    budget) and reason. Without ``requests_per_s``, ``serve`` runs a fixed ``batch_size`` at
    ``context_len`` with ``latency_ms`` per output token (binding: memory, compute, memory
    bandwidth, latency or budget). Consumer and workstation cards are tried on one machine only
    (:data:`SEGMENT_MAX_GPUS`).
    """
    if task not in TASKS:
        raise ValueError(f"task={task!r} is not supported; choose one of {', '.join(TASKS)}")
    m = as_model(model)
    check_positive("max_gpus", max_gpus, integer=True)
    for name, value in (("deadline_days", deadline_days), ("budget_usd", budget_usd), ("latency_ms", latency_ms),
                        ("requests_per_s", requests_per_s), ("ttft_s", ttft_s), ("tpot_s", tpot_s)):
        if value is not None:
            check_positive(name, value)
    traffic_level = task == "serve" and requests_per_s is not None
    if traffic_level:
        check_positive("prompt_len", prompt_len, integer=True)
        check_positive("output_len", output_len, integer=True)
    elif task == "serve":  # checked here: the cached estimate below needs plain numbers as its key
        check_positive("batch_size", batch_size, integer=True)
        check_positive("context_len", context_len, integer=True)
    best = []
    for g in gpus.get_all("gpu_names", gpus.names() if gpu_names is None else gpu_names):
        most = min(max_gpus, SEGMENT_MAX_GPUS.get(g.segment, max_gpus))
        if traffic_level:
            options, verdicts = [], []
            for tp in (1, 2, 4, 8):
                if tp > most or m.n_heads % tp or any(v[0] != "budget" and o["n_gpus"] <= tp and o["ms per token"] == o["ms per token"]
                                                       for o, v in zip(options, verdicts)):
                    continue  # a plan on at most tp GPUs already exists: wider replicas cannot need fewer GPUs
                dtypes = serving.serving_formats(g)
                for dtype, r in zip(dtypes, traffic.replicas(m, g, tp=tp, prompt_len=prompt_len, output_len=output_len,
                                                             weight_dtypes=dtypes)):
                    options.append(_traffic_option(g, tp, dtype, r, requests_per_s, prompt_len, output_len, ttft_s,
                                                   tpot_s, most))
                    verdicts.append(_traffic_verdict(options[-1], budget_usd))
        elif task == "serve":
            options, verdicts = [], []
            for dtype in serving.serving_formats(g):
                for tp in (1, 2, 4, 8):
                    if tp <= max_gpus and m.n_heads % tp == 0:
                        options.append(_serve_option(m, g, tp, dtype, batch_size, context_len))
                        verdicts.append(_serving_verdict(options[-1], latency_ms, budget_usd))
                        if verdicts[-1][0] in ("compute", "memory bandwidth"):
                            break  # it serves: a wider group cannot cost less per token, nor give more per GPU
        else:
            check_positive("tokens", tokens)
            options = _train_options(m, g, tuple(n for n in COUNTS if n <= most), task, tokens, seq_len)
            verdicts = [_training_verdict(o, deadline_days, budget_usd) for o in options]
        for option, (binding, reason) in zip(options, verdicts):
            planned = traffic_level and option["ms per token"] == option["ms per token"]
            option.update(binding=binding, reason=reason,
                          ok=binding in ("compute", "memory bandwidth") or (planned and binding != "budget"))
            for internal in ("limit", "per_replica", "unloaded_ms"):  # the verdict's inputs, not columns
                option.pop(internal, None)
        feasible = [o for o in options if o["ok"]]
        if feasible and traffic_level:  # the fewest GPUs, then the cheapest per token
            best.append(min(feasible, key=lambda o: (o["n_gpus"], o["cost_usd"] != o["cost_usd"], o["cost_usd"])))
        elif feasible and task == "serve":  # cheapest per token, else most tokens/s per GPU
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
                              table["n_gpus"] if traffic_level else -table[speed] if task == "serve" else table[speed]))
    return table.sort_values("_rank").drop(columns=["_rank", "ok"]).reset_index(drop=True)


def largest_trainable(gpu: "gpus.GPU | str", n_gpus: int, **kwargs) -> int:
    """Largest dense model, in whole billions of parameters (up to 1000), whose full training fits
    ``n_gpus`` of ``gpu`` with ZeRO-3 and full recomputation (0 if none)."""
    g = gpus.get(gpu)
    check_positive("n_gpus", n_gpus, integer=True)
    fits = [b for b in range(1, 1001)
            if memory.fits(memory.training(b * 1e9, zero_stage=3, dp=n_gpus, recompute="full", **kwargs), g)]
    return max(fits, default=0)
