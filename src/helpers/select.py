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

from dataclasses import dataclass, replace
from functools import lru_cache
from math import nan

import pandas as pd

from . import compare, compute, cost, gpus, memory, planner, serving, steptime, traffic
from .estimate import Estimate
from .memory import as_model
from .models import Model
from .units import DAY, check_positive, check_result

TASKS = ("pretrain", "finetune", "lora", "qlora", "serve")
COUNTS = planner.COUNTS
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


@dataclass(frozen=True)
class Option:
    """One way to run the task on one kind of GPU, in SI units; NaN (or '') where the task has no
    such figure. Training: the run's ``time`` (an :class:`Estimate`, seconds), its
    ``scaling_efficiency`` and the ``limit`` that sets its pace. Serving: output ``tokens_per_s`` and
    ``time_per_token`` (seconds); at a fixed batch the roof that bounds decoding (``bound``); at a traffic
    level the ``replicas`` that share the traffic, the ``time_to_first_token`` (seconds),
    ``utilization``, the constraint that binds first (``limit``), the requests/s one replica takes
    within the targets (``per_replica``) and, where no plan serves, one replica's ``unloaded_step``
    (seconds). ``memory_per_gpu`` in bytes;
    ``cost_usd`` the run's on demand, or per million tokens served. ``binding`` and ``reason``: the
    constraint that decides and why; ``ok``: whether the option meets every constraint; ``calibrated``:
    whether published runs on the GPU's architecture took part in the training step model's fit;
    ``step``: training's seconds per step (the model is known to be too fast below
    :data:`steptime.SHORT_STEP_S`); ``caveat``: at a traffic level, where replicas like this one came
    out too fast at peak throughput on published runs (:func:`traffic.peak_note`)."""

    gpu: str
    n_gpus: int
    settings: str
    fits: bool
    memory_per_gpu: float = nan
    time: Estimate | None = None
    scaling_efficiency: float = nan
    tokens_per_s: float = nan
    time_per_token: float = nan
    time_to_first_token: float = nan
    utilization: float = nan
    bound: str = ""
    limit: str = ""
    per_replica: float = nan
    replicas: int = 0
    unloaded_step: float = nan
    cost_usd: float = nan
    binding: str = ""
    reason: str = ""
    ok: bool = False
    calibrated: bool = True
    step: float = nan
    caveat: str = ""

    @property
    def days(self) -> float:
        """The expected training time in days (NaN for serving)."""
        return self.time.expected / DAY if self.time is not None else nan


#: The columns of :meth:`Recommendation.to_frame`, by kind of task: each option's figures for display.
COLUMNS = {
    "training": ("gpu", "n_gpus", "settings", "fits", "memory per GPU (GB)", "days", "days low", "days high",
                 "scaling efficiency", "cost_usd", "binding", "reason"),
    "fixed batch": ("gpu", "n_gpus", "settings", "fits", "memory per GPU (GB)", "tokens/s", "ms per token", "bound",
                    "cost_usd", "binding", "reason"),
    "traffic": ("gpu", "n_gpus", "replicas", "settings", "fits", "tokens/s", "ms per token", "first token (ms)",
                "utilization", "cost_usd", "binding", "reason"),
}


def _display(o: Option) -> dict:
    """Every figure of an option in the units the book shows: GB (decimal), days, ms."""
    low, high = (nan, nan) if o.time is None else (o.time.low / DAY, o.time.high / DAY)
    return {"gpu": o.gpu, "n_gpus": o.n_gpus, "settings": o.settings, "fits": o.fits,
            "memory per GPU (GB)": o.memory_per_gpu / 1e9, "days": o.days, "days low": low, "days high": high,
            "scaling efficiency": o.scaling_efficiency, "tokens/s": o.tokens_per_s,
            "ms per token": o.time_per_token * 1000, "first token (ms)": o.time_to_first_token * 1000,
            "utilization": o.utilization, "replicas": o.replicas, "bound": o.bound, "cost_usd": o.cost_usd,
            "binding": o.binding, "reason": o.reason}


@dataclass(frozen=True)
class Recommendation:
    """Every GPU's best option for a task (:class:`Option`), ranked best first; ``kind`` is
    "training", "fixed batch" or "traffic"."""

    kind: str
    options: tuple[Option, ...]

    def to_frame(self) -> pd.DataFrame:
        """One row per option, the columns of :data:`COLUMNS` for this kind of task."""
        columns = list(COLUMNS[self.kind])
        return pd.DataFrame([{c: row[c] for c in columns} for row in map(_display, self.options)], columns=columns)


def _train_options(m: Model, g: gpus.GPU, counts: tuple[int, ...], plans: list, task: str, tokens: float,
                   seq_len: int) -> list[Option]:
    """One option per GPU count of its plan (:func:`planner.catalog`): full training on the planner's
    best layout; LoRA and QLoRA train adapters over data parallelism with the frozen base replicated."""
    rate = cost.price(g, "cloud_hour")
    method = task if task in ("lora", "qlora") else "full"
    adapter = None if method == "full" else memory.training(m, dtype=planner.training_dtype(g), method=method,
                                                             recompute="full", seq_len=seq_len)
    options, calibrated = [], steptime.default_calibration().covers(g.architecture)
    for n, plan in zip(counts, plans):
        if plan is None:  # the model's batch cannot keep this many GPUs busy
            continue
        time, step = compute.run_time(plan, tokens), plan.step.total
        settings, need = plan.layout.describe(), plan.memory_per_gpu
        fits = plan.fits
        if adapter is not None:  # the frozen base is replicated: the same memory on every GPU
            time, step = time * ADAPTER_FLOPS_FACTOR, step * ADAPTER_FLOPS_FACTOR
            settings, need, fits = f"{method}, data parallel {n}, full recompute", adapter.total, memory.fits(adapter, g)
        days = time.expected / DAY
        options.append(Option(gpu=g.name, n_gpus=n, settings=settings, fits=fits, memory_per_gpu=need, time=time,
                              scaling_efficiency=plan.scaling_efficiency, limit=plan.binding,
                              cost_usd=days * 24 * n * rate if rate else nan, calibrated=calibrated,
                              step=step))
    return options


@lru_cache(maxsize=256)
def _serving(m: Model, g: gpus.GPU, tp: int, batch_size: int, context_len: int) -> dict[str, compare.ServingEstimate]:
    """:func:`compare.serving_estimates_for` every serving format of ``g`` (:func:`serving.serving_formats`),
    by format, cached: a latency or budget move re-ranks the catalog without re-estimating it."""
    dtypes = serving.serving_formats(g)
    return dict(zip(dtypes, compare.serving_estimates_for(m, g, tp=tp, weight_dtypes=dtypes, batch_size=batch_size,
                                                          context_len=context_len)))


def _serve_option(m: Model, g: gpus.GPU, tp: int, dtype: str, batch_size: int, context_len: int) -> Option:
    e = _serving(m, g, tp, batch_size, context_len)[dtype]
    tps = e.tokens_per_s.expected
    rate = cost.price(g, "cloud_hour")
    return Option(gpu=g.name, n_gpus=tp, settings=f"{dtype} weights, tensor parallel {tp}", fits=e.fits,
                  memory_per_gpu=e.memory_per_gpu, tokens_per_s=tps, time_per_token=batch_size / tps,
                  bound="memory bandwidth" if e.bound == "memory" else "compute",
                  cost_usd=rate * tp / (tps * 3600) * 1e6 if rate else nan)


def _traffic_option(m: Model, g: gpus.GPU, tp: int, dtype: str, r: traffic.Replica, requests_per_s: float,
                    prompt_len: int, output_len: int, ttft_s: float | None, tpot_s: float | None, most: int) -> Option:
    caps = traffic.limits(r, ttft_s=ttft_s, tpot_s=tpot_s)
    p = traffic._sized(r, g.name, dtype, tp, requests_per_s, caps, max(1, most // tp))
    settings = f"{dtype} weights, tensor parallel {tp}"
    if p is None:  # one replica serves no traffic within the targets (shown as that replica), or too many are needed
        binding = min(caps, key=caps.get)
        return Option(gpu=g.name, n_gpus=most if caps[binding] > 0 else tp, settings=settings, fits=r.max_batch > 0,
                      tokens_per_s=0.0, time_to_first_token=r.prefill, limit=binding, per_replica=caps[binding],
                      unloaded_step=r.fixed)
    rate, at = cost.price(g, "cloud_hour"), p.at_load
    return Option(gpu=g.name, n_gpus=p.n_gpus, settings=f"{settings}, {p.replicas} replica{'s' * (p.replicas > 1)}",
                  fits=True, tokens_per_s=requests_per_s * output_len, time_per_token=at.time_per_token,
                  time_to_first_token=at.time_to_first_token, utilization=at.utilization,
                  cost_usd=check_result(rate * p.n_gpus / (requests_per_s * (prompt_len + output_len) * 3600) * 1e6,
                                        requests_per_s=requests_per_s) if rate else nan,
                  limit=p.binding, per_replica=p.per_replica_max, replicas=p.replicas,
                  caveat=traffic.peak_note(m, g, tp, dtype))


#: The reason given where a budget is set and the GPU has no dated price to hold against it.
_UNPRICED = "no dated price to hold against the budget"


def _priced(o: Option) -> bool:
    return o.cost_usd == o.cost_usd


def _cost(o: Option) -> float:
    """The option's cost for ranking: 0 where there is no dated price (NaN would not order)."""
    return o.cost_usd if _priced(o) else 0.0


def _traffic_verdict(o: Option, budget_usd: float | None) -> tuple[str, str]:
    if not o.fits:
        return "memory", f"the weights alone do not fit at {o.settings}"
    if o.time_per_token != o.time_per_token:  # no plan: one replica serves no traffic within the targets
        if o.limit == "time to first token":
            return o.limit, f"an unloaded prompt already takes {o.time_to_first_token * 1000:,.0f} ms at {o.settings}"
        if o.limit == "time per token":
            return o.limit, f"an unloaded step already takes {o.unloaded_step * 1000:,.1f} ms at {o.settings}"
        return o.limit, f"{o.per_replica:.3g} requests/s per replica: more GPUs than allowed at {o.settings}"
    price = f"${o.cost_usd:,.2f} per million tokens" if _priced(o) else "no dated price"
    if budget_usd and not o.cost_usd <= budget_usd:
        return "budget", f"{price}, over ${budget_usd:,.2f}" if _priced(o) else _UNPRICED
    return o.limit, (f"{o.per_replica:.3g} requests/s per replica ({o.limit} binds); at this load "
                     f"{o.time_per_token * 1000:,.1f} ms per token, {o.time_to_first_token * 1000:,.0f} ms to the first "
                     f"token, {o.utilization:.0%} busy; {price}" + f"; {o.caveat}" * bool(o.caveat))


def _training_verdict(o: Option, deadline_days: float | None, budget_usd: float | None) -> tuple[str, str]:
    if not o.fits:
        return "memory", f"needs {o.memory_per_gpu / 1e9:,.0f} GB per GPU even at {o.settings}"
    if deadline_days and o.days > deadline_days:
        return "deadline", f"{o.days:,.0f} days at {o.n_gpus} GPUs, over the {deadline_days:g}-day deadline"
    if budget_usd and not o.cost_usd <= budget_usd:
        return "budget", (f"${o.cost_usd:,.0f} on demand, over the ${budget_usd:,.0f} budget"
                          if _priced(o) else _UNPRICED)
    caveat = "" if o.calibrated else f"; no {gpus.get(o.gpu).architecture} run calibrates the step model"
    short = steptime.short_step_note(o.step) if o.step == o.step else ""  # NaN: an option built without its step
    caveat += f"; {short}" if short else ""
    if o.scaling_efficiency < INTERCONNECT_FLOOR:
        return "interconnect", (f"{o.days:,.1f} days, but only {o.scaling_efficiency:.0%} scaling efficiency "
                                f"({o.limit} sets the pace){caveat}")
    return "compute", f"{o.days:,.1f} days on {o.n_gpus} GPU{'s' * (o.n_gpus > 1)}" + (
        f", ${o.cost_usd:,.0f} on demand" if _priced(o) else ", no dated price") + caveat


def _serving_verdict(o: Option, latency_ms: float | None, budget_usd: float | None) -> tuple[str, str]:
    if not o.fits:
        return "memory", f"needs {o.memory_per_gpu / 1e9:,.0f} GB per GPU at {o.settings}"
    if latency_ms and o.time_per_token * 1000 > latency_ms:
        return "latency", f"{o.time_per_token * 1000:,.1f} ms per token, over the {latency_ms:g} ms target"
    if budget_usd and not o.cost_usd <= budget_usd:
        return "budget", (f"${o.cost_usd:,.2f} per million tokens, over ${budget_usd:,.2f}"
                          if _priced(o) else _UNPRICED)
    price = f", ${o.cost_usd:,.2f} per million tokens" if _priced(o) else ", no dated price"
    return o.bound, f"{o.tokens_per_s:,.0f} tokens/s, {o.time_per_token * 1000:,.1f} ms per token{price}"


def recommend(model: "Model | str | float", **kwargs) -> pd.DataFrame:
    """:func:`options` as a table (:meth:`Recommendation.to_frame`), ranked best first: for training,
    columns gpu, n_gpus, settings, fits, memory per GPU (GB), days (low, high), scaling efficiency,
    cost_usd (on demand), binding (memory, deadline, budget, interconnect or compute) and reason; at
    a traffic level, gpu, n_gpus (all replicas), replicas, settings, fits, tokens/s (output), ms per
    token, first token (ms), utilization, cost_usd (per million input and output tokens), binding
    (memory, time per token, time to first token, capacity or budget) and reason; at a fixed batch, gpu,
    n_gpus, settings, fits, memory per GPU (GB), tokens/s, ms per token, bound, cost_usd (per
    million tokens), binding (memory, compute, memory bandwidth, latency or budget) and reason."""
    return options(model, **kwargs).to_frame()


def options(model: "Model | str | float", *, task: str = "pretrain", tokens: float = 1e12,
            deadline_days: float | None = DEFAULT_DEADLINE_DAYS, budget_usd: float | None = None, batch_size: int = 1,
            context_len: int = 4096, latency_ms: float | None = None, seq_len: int = 2048,
            requests_per_s: float | None = None, prompt_len: int = 1024, output_len: int = 256,
            ttft_s: float | None = None, tpot_s: float | None = None, host_seconds: float | None = None,
            max_gpus: int = 4096, gpu_names: list[str] | None = None) -> Recommendation:
    """Every GPU's best option for ``task``, ranked best first (:class:`Recommendation`).

    Training tasks use ``tokens``, ``deadline_days`` (90 unless given; None for none) and
    ``budget_usd`` (on demand, US dollars).
    ``serve`` at a traffic level uses ``requests_per_s`` of ``prompt_len`` input and ``output_len``
    output tokens, the targets ``ttft_s`` (time to first token, mean, under load) and ``tpot_s``
    (time per output token), ``host_seconds`` (the engine's CPU time per sequence and step; the
    fitted value unless given, 0 for an engine that hides it: :func:`traffic.replica`), and
    ``budget_usd`` (per million input and output tokens). Without
    ``requests_per_s``, ``serve`` runs a fixed ``batch_size`` at ``context_len`` with
    ``latency_ms`` per output token. Consumer and workstation cards are tried on one machine only
    (:data:`SEGMENT_MAX_GPUS`). Ranked: options that meet every constraint first, then priced before
    unpriced, the cheapest first, then the fewest GPUs (traffic), the most tokens/s (fixed batch)
    or the fewest days (training).
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
        if host_seconds is not None:
            check_positive("host_seconds", host_seconds, allow_zero=True)
        check_positive("prompt_len", prompt_len, integer=True)
        check_positive("output_len", output_len, integer=True)
    elif task == "serve":  # checked here: the cached estimate below needs plain numbers as its key
        check_positive("batch_size", batch_size, integer=True)
        check_positive("context_len", context_len, integer=True)
    best, tried_gpus = [], gpus.get_all("gpu_names", gpus.names() if gpu_names is None else gpu_names)
    most_of = {g.name: min(max_gpus, SEGMENT_MAX_GPUS.get(g.segment, max_gpus)) for g in tried_gpus}
    if task != "serve":
        check_positive("tokens", tokens)
        counts = {g.name: tuple(n for n in COUNTS if n <= most_of[g.name]) for g in tried_gpus}
        planned = dict(zip(counts, planner.catalog(m, [(g, counts[g.name]) for g in tried_gpus], seq_len=seq_len,
                                                   tokens=tokens)))
    for g in tried_gpus:
        most = most_of[g.name]
        if traffic_level:
            tried, verdicts = [], []
            for tp in (1, 2, 4, 8):
                if tp > most or m.n_heads % tp or any(v[0] != "budget" and o.n_gpus <= tp and o.time_per_token == o.time_per_token
                                                       for o, v in zip(tried, verdicts)):
                    continue  # a plan on at most tp GPUs already exists: wider replicas cannot need fewer GPUs
                dtypes = serving.serving_formats(g)
                for dtype, r in zip(dtypes, traffic.replicas(m, g, tp=tp, prompt_len=prompt_len, output_len=output_len,
                                                             weight_dtypes=dtypes, host_seconds=host_seconds)):
                    tried.append(_traffic_option(m, g, tp, dtype, r, requests_per_s, prompt_len, output_len, ttft_s,
                                                 tpot_s, most))
                    verdicts.append(_traffic_verdict(tried[-1], budget_usd))
        elif task == "serve":
            tried, verdicts = [], []
            for dtype in serving.serving_formats(g):
                for tp in (1, 2, 4, 8):
                    if tp <= max_gpus and m.n_heads % tp == 0:
                        tried.append(_serve_option(m, g, tp, dtype, batch_size, context_len))
                        verdicts.append(_serving_verdict(tried[-1], latency_ms, budget_usd))
                        if verdicts[-1][0] in ("compute", "memory bandwidth"):
                            break  # it serves: a wider group cannot cost less per token, nor give more per GPU
        else:
            tried = _train_options(m, g, counts[g.name], planned[g.name], task, tokens, seq_len)
            verdicts = [_training_verdict(o, deadline_days, budget_usd) for o in tried]
        ok = [binding in ("compute", "memory bandwidth") or
              (traffic_level and o.time_per_token == o.time_per_token and binding != "budget")
              for o, (binding, _) in zip(tried, verdicts)]
        feasible = [i for i, good in enumerate(ok) if good]
        if feasible and traffic_level:  # the fewest GPUs, then the cheapest per token (one GPU: one price, or none)
            chosen = min(feasible, key=lambda i: (tried[i].n_gpus, _cost(tried[i])))
        elif feasible and task == "serve":  # cheapest per token, then (and without a price) most tokens/s per GPU
            chosen = min(feasible, key=lambda i: (_cost(tried[i]), -tried[i].tokens_per_s / tried[i].n_gpus))
        elif feasible:  # the fewest GPUs that meet the constraints (counts ascend): the same GPU-hours, the least capacity
            chosen = feasible[0]
        else:  # what came closest: the fastest that fits, else the largest tried (every GPU tries one GPU at least)
            fitting = [i for i, o in enumerate(tried) if o.fits]
            chosen = (min(fitting, key=lambda i: tried[i].days) if fitting and task != "serve"
                      else max(fitting or range(len(tried)), key=lambda i: tried[i].n_gpus))
        binding, reason = verdicts[chosen]
        best.append(replace(tried[chosen], binding=binding, reason=reason, ok=ok[chosen]))
    kind = "traffic" if traffic_level else "fixed batch" if task == "serve" else "training"

    def rank(o: Option) -> tuple:
        speed = o.n_gpus if traffic_level else -o.tokens_per_s if task == "serve" else o.days
        return not o.ok, not _priced(o), _cost(o), speed

    return Recommendation(kind, tuple(sorted(best, key=rank)))


def largest_trainable(gpu: "gpus.GPU | str", n_gpus: int, **kwargs) -> int:
    """Largest dense model, in whole billions of parameters (up to 1000), whose full training fits
    ``n_gpus`` of ``gpu`` with ZeRO-3 and full recomputation (0 if none)."""
    g = gpus.get(gpu)
    check_positive("n_gpus", n_gpus, integer=True)
    fits = [b for b in range(1, 1001)
            if memory.fits(memory.training(b * 1e9, zero_stage=3, dp=n_gpus, recompute="full", **kwargs), g)]
    return max(fits, default=0)
