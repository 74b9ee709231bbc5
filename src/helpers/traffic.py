"""Serving at a traffic level: a continuous-batching engine under Poisson arrivals.

One replica (a tensor-parallel group of ``tp`` GPUs) receives ``requests_per_s`` requests of
``prompt_len`` input and ``output_len`` output tokens. A continuous-batching engine with chunked
prefill (vLLM; TensorRT-LLM's in-flight batching; Agrawal et al. 2024, Sarathi-Serve,
arXiv:2403.02310) runs step after step; each step decodes one token of every sequence in flight
and processes a share of the waiting prompts.

**Steady state.** The step model of :mod:`serving`, linearised between a step of one sequence and
a step of the largest batch that fits, takes t = a + alpha·B + beta·c seconds for B sequences in
flight (at their mean context, prompt + output/2) and c prompt tokens: ``a`` is what a step costs
whatever the load (reading the weights, the fixed cost per layer, all-reduce latency). At λ
requests/s a step of t seconds must decode λ·O·t tokens and prefill λ·P·t (Little's law), so

    t = a / (1 - ρ),   ρ = λ·w,   w = alpha·O + beta·P,

with ``w`` the GPU-seconds one request adds and ``ρ`` the utilisation: the share of every step
that the load takes. The time per output token is t; the batch in flight is λ·O·t, and its KV
cache must fit in memory. The load is sustainable only while ρ < 1.

**Time to first token.** The engine is treated as one server that gives each request w seconds of
work, with Poisson arrivals: an M/D/1 queue, whose mean wait is ρ·w / (2(1 - ρ))
(Pollaczek-Khinchine; Kleinrock 1975, Queueing Systems I, Sec. 5.6). The first token comes after
that wait plus the prompt's own unloaded prefill (:func:`serving.prefill_seconds`). This is the
model shown wherever the book quotes a loaded time to first token.

Each constraint (memory, time per token, time to first token, capacity) caps λ in closed form;
the smallest cap is the replica's sustainable rate, and the constraint that sets it binds.

Benchmarks that hold a fixed number of clients in flight (closed loop) start them together, and
what they measure is met by :func:`closed_loop`, the first wave of prompts arriving at once.
Benchmarks that queue every request at once (offline) hold the largest batch the replica takes,
:func:`saturated`; on TensorRT-LLM's published ones three kinds of replica came out too fast, which
:func:`peak_note` names for the selector.

**The host's share.** A serving engine's CPU spends time on every sequence of every step:
scheduling it, detokenising its new token and streaming it to the client. Where that work runs
between GPU steps, it adds to the step; for Llama 3 8B on one H100, vLLM 0.5.3 spent 33 % of its
time in the HTTP server and 29 % scheduling, the GPU 38 % (vLLM blog, 2024-09-05). The replica's
``per_sequence`` cost includes these ``host_seconds`` (fitted on NIM's closed-loop runs of Llama 3
8B with prompts no longer than their outputs, :func:`calibration.fit_host_seconds`; 0 for an
engine that overlaps them with the GPU's work).

**Engines that do not split the KV cache.** An engine whose decoding attention reads each
sequence's cache with one thread block per KV head (``split_kv=False``, :mod:`serving`) reads B
sequences' caches in max(B·s, b) seconds rather than B·s (s at the streaming rate, b through one
sequence's blocks): a step loses max(0, b - B·s) at small batches, which the replica carries
beside its linear step (the fitted overlap of compute and memory traffic is nil, so the loss adds).
In the steady state the step is then the larger of a/(1 - ρ) and (a + b)/(1 - ρ + λ·O·s).
"""

from dataclasses import dataclass, replace
from functools import cache
from math import ceil, inf

import numpy as np
import pandas as pd

from . import formats, gpus, memory, serving
from .gpus import GPU
from .memory import as_model, check_split
from .models import Model
from .units import (check_bool, check_dtype, check_instance, check_list, check_positive, check_range, check_result,
                    renamed_keywords)

#: Prompt tokens one engine iteration takes in: TensorRT-LLM's default ``max_num_tokens`` (8192,
#: trtllm-build); prompts are taken whole, as without its chunked context (off by default).
TOKEN_BUDGET = 8192
#: The constraints that can cap a replica's request rate.
LIMITS = ("memory", "time per token", "time to first token", "capacity")
#: Utilisation a plan may run at, an assumption of this book: an M/D/1 queue at 0.95 already
#: waits 9.5 service times on average, and the wait grows without bound as it nears 1.
MAX_UTILIZATION = 0.95
#: Tensor parallelism over a GPU link that leaves each GPU fewer active parameters than this came
#: out too fast at peak throughput on TensorRT-LLM's published runs (:func:`saturated` against
#: ``validation.throughput_runs``: Llama 3.1 70B on eight GPUs, Mixtral 8x7B on two to eight), and
#: the replicas that leave each GPU more came within a tenth (the figures: the validation appendix).
SMALL_SHARE_PARAMS = 10e9
#: The least and the most such replicas came out too fast: the signed median error of each model's
#: runs on each GPU count. The test holds these figures to the data.
SMALL_SHARE_MISS = (0.14, 0.48)
#: Where a GPU's weight format came out more than a tenth too fast at peak throughput: the signed
#: median error of :func:`saturated` on its published runs that no other caveat covers (NVFP4 on
#: the B200 and GB200; not on the RTX PRO 6000). The test holds these figures to the data.
FORMAT_MISS = {("B200-HGX-192GB", "nvfp4"): 0.40, ("GB200-NVL72", "nvfp4"): 0.40}
#: A mixture of experts whose routed experts hold fewer parameters than this each (per layer,
#: :attr:`models.Model.expert_params`) came out too fast at peak throughput on TensorRT-LLM's
#: published runs on one GPU (Qwen3 30B-A3B; Llama 4 Scout beyond the NVFP4 miss), and Mixtral
#: 8x7B's larger experts came within a tenth. Most recent mixtures have smaller experts still.
SMALL_EXPERT_PARAMS = 150e6
#: The signed median error of the runs only that caveat covers. The test holds it to the data.
SMALL_EXPERT_MISS = 0.29


@dataclass(frozen=True)
class Replica:
    """What a replica costs per step (seconds): ``fixed`` whatever the load, ``per_sequence`` for
    each sequence in flight (the GPU's and the host's), ``per_prompt_token`` for each token
    prefilled; ``prefill`` the unloaded time to first token, and ``max_batch`` the sequences whose
    KV cache fits. With an engine that does not split the KV cache, ``kv_seconds`` is one
    sequence's cache read at the streaming rate (part of ``per_sequence``) and ``block_seconds``
    the same read through the sequence's own thread blocks; both 0 otherwise (see the module
    docstring)."""

    fixed: float
    per_sequence: float
    per_prompt_token: float
    prefill: float
    max_batch: int
    prompt_len: int
    output_len: int
    kv_seconds: float = 0.0
    block_seconds: float = 0.0

    @property
    def work_per_request(self) -> float:
        """GPU-seconds one request adds to the steps: its output tokens' share of the steps it is in,
        and its prompt tokens."""
        return self.per_sequence * self.output_len + self.per_prompt_token * self.prompt_len

    def unsplit_loss(self, batch):
        """Seconds a decoding step of ``batch`` sequences (a number or an array) loses to an
        unsplit cache read: max(0, block_seconds - kv_seconds x batch), 0 when nothing decodes."""
        b = np.asarray(batch, dtype=float)
        return np.where(b > 0, np.maximum(0.0, self.block_seconds - self.kv_seconds * b), 0.0)


@dataclass(frozen=True)
class Load:
    """A replica at ``requests_per_s``: utilisation, time per output token, time to first token
    (seconds), and sequences in flight."""

    requests_per_s: float
    utilization: float
    time_per_token: float
    time_to_first_token: float
    batch: float
    fits: bool

    @property
    def output_tokens_per_s(self) -> float:
        """Output tokens per second: every sequence in flight gains one per step."""
        return self.batch / self.time_per_token


@renamed_keywords(n_gpus="tp")
def replica(model: "Model | str | float", gpu: "GPU | str", *, tp: int = 1, prompt_len: int = 1024,
            output_len: int = 256, weight_dtype: str = "bf16", kv_dtype: str | None = None,
            split_kv: bool = True, host_seconds: float | None = None,
            calibration: serving.ServingCalibration | None = None, reserve_output: bool = False,
            max_batch: int | None = None) -> Replica:
    """The linearised step of one replica (see the module docstring); ``kv_dtype`` follows the
    weights unless given (:func:`memory.serving_kv_dtype`); ``split_kv`` False for an engine whose
    decoding attention reads each sequence's cache with one thread block per KV head;
    ``host_seconds`` per sequence and step, ``calibration``'s unless given (0: an engine that
    hides its host work behind the GPU's); ``calibration`` the fitted parameters unless given.

    The sequences in flight are as many as the KV cache holds at their mean context (prompt +
    output / 2), as for an engine that grows each sequence's cache as its tokens come (vLLM's
    paged allocation); ``reserve_output`` True for a scheduler that admits a request only once the
    cache for its prompt and all its output is reserved (TensorRT-LLM's default capacity policy,
    ``GUARANTEED_NO_EVICT``), which holds fewer. ``max_batch`` caps them where the engine does
    (vLLM's ``max_num_seqs``, TensorRT-LLM's ``max_batch_size``); None: memory alone."""
    check_dtype(weight_dtype, formats.names("weights"), "weight_dtype")
    kv = kv_dtype if kv_dtype is not None else memory.serving_kv_dtype(weight_dtype)
    check_dtype(kv, formats.names("kv_cache"), "kv_dtype")
    check_bool("split_kv", split_kv)
    check_bool("reserve_output", reserve_output)
    if max_batch is not None:
        check_positive("max_batch", max_batch, integer=True)
    return _replicas(*_checked(model, gpu, tp, prompt_len, output_len), ((weight_dtype, kv),), split_kv,
                     _with_host(host_seconds, calibration), reserve_output, max_batch)[0]


def replicas(model: "Model | str | float", gpu: "GPU | str", *, tp: int = 1, prompt_len: int = 1024,
             output_len: int = 256, weight_dtypes: tuple[str, ...] = ("bf16",),
             host_seconds: float | None = None) -> tuple[Replica, ...]:
    """:func:`replica` for each of ``weight_dtypes`` (with its usual KV format), computed at once."""
    names = formats.names("weights")
    pairs = tuple((check_dtype(d, names, "weight_dtypes"), memory.serving_kv_dtype(d))
                  for d in check_list("weight_dtypes", weight_dtypes))
    cal = _with_host(host_seconds)
    return _replicas(*_checked(model, gpu, tp, prompt_len, output_len), pairs, True, cal) if pairs else ()


def _with_host(host_seconds: float | None,
               calibration: serving.ServingCalibration | None = None) -> serving.ServingCalibration | None:
    """``calibration`` (None: the fitted one) with ``host_seconds`` where given, both checked."""
    if calibration is not None:
        check_instance("calibration", calibration, serving.ServingCalibration, "a serving.ServingCalibration")
    if host_seconds is None:
        return calibration
    check_positive("host_seconds", host_seconds, allow_zero=True)
    return replace(calibration or serving.default_calibration(), host_seconds=float(host_seconds))


def _checked(model, gpu, tp, prompt_len, output_len) -> tuple[Model, GPU, int, int, int]:
    m, g = as_model(model), gpus.get(gpu)
    check_positive("prompt_len", prompt_len, integer=True)
    check_positive("output_len", output_len, integer=True)
    check_split(m, tp, replicate_kv=True, name="tp")
    return m, g, tp, prompt_len, output_len


@cache
def _replicas(m: Model, g: GPU, tp: int, prompt_len: int, output_len: int, pairs: tuple[tuple[str, str], ...],
              split_kv: bool = True, calibration: serving.ServingCalibration | None = None,
              reserve_output: bool = False, max_batch: int | None = None) -> tuple[Replica, ...]:
    """One replica per (weight, KV) format pair, their step times in one array (:func:`serving.batch_totals`),
    with ``calibration``'s parameters (the fitted ones unless given); the batch held as :func:`replica` says."""
    cal = calibration or serving.default_calibration()
    context = prompt_len + -(-output_len // 2)
    held = prompt_len + output_len if reserve_output else context
    full = [memory._max_batch(memory._inference_total(m, weight_dtype=w, kv_dtype=k, tp=tp, gpu=g), g.reported_memory_bytes, held,
                              max_batch or memory.BATCH_LIMIT) for w, k in pairs]
    tops = [max(f, 2) for f in full]
    weights, kvs = zip(*pairs)
    decode, prefill = serving.batch_totals(m, g, tp, weights, kvs, context, prompt_len, [[1, t, 8] for t in tops], cal)
    out = []
    for f, top, (one, many, _), (prompt, _, chunk), kv in zip(full, tops, decode.tolist(), prefill.tolist(), kvs):
        per_sequence = (many - one) / (top - 1)
        streamed, blocked = (0.0, 0.0) if split_kv else serving.cache_read_seconds(m, g, tp, kv, context, cal)
        out.append(Replica(fixed=one - per_sequence, per_sequence=per_sequence + cal.host_seconds,
                           per_prompt_token=(chunk - prompt) / (7 * prompt_len), prefill=prompt, max_batch=f,
                           prompt_len=prompt_len, output_len=output_len, kv_seconds=streamed, block_seconds=blocked))
    return tuple(out)


def load(r: Replica, requests_per_s: float) -> Load:
    """The replica ``r`` at ``requests_per_s`` (utilisation at most 1; at or beyond it the times are infinite)."""
    check_instance("r", r, Replica, "a traffic.Replica")
    check_positive("requests_per_s", requests_per_s, allow_zero=True)
    rho = check_result(requests_per_s * r.work_per_request, requests_per_s=requests_per_s)
    if rho >= 1:
        return Load(requests_per_s, rho, inf, inf, inf, False)
    # the larger of the linear step and the one an unsplit cache read slows (equal when it splits)
    step = max(r.fixed / (1 - rho),
               (r.fixed + r.block_seconds) / (1 - rho + r.kv_seconds * requests_per_s * r.output_len))
    batch = requests_per_s * r.output_len * step
    wait = rho * r.work_per_request / (2 * (1 - rho))
    return Load(requests_per_s, rho, step, r.prefill + wait, batch, batch <= r.max_batch)


def _small_share(m: Model, g: GPU, tp: int) -> bool:
    """Whether ``tp`` GPUs of ``g`` share their link and each holds under :data:`SMALL_SHARE_PARAMS`
    of ``m``'s active parameters (arguments already checked)."""
    return bool(tp > 1 and g.gpu_link and tp <= g.gpu_link_domain and m.n_active_params / tp < SMALL_SHARE_PARAMS)


def _format_miss(g: GPU, weight_dtype: str) -> float | None:
    """The published runs' miss of ``weight_dtype`` weights on ``g`` (:data:`FORMAT_MISS`), None where there is none."""
    return FORMAT_MISS.get((g.name, weight_dtype))


def _small_experts(m: Model) -> bool:
    """Whether ``m`` is a mixture of experts whose routed experts each hold fewer than
    :data:`SMALL_EXPERT_PARAMS` parameters per layer."""
    return m.is_moe and m.expert_params < SMALL_EXPERT_PARAMS


def peak_note(model: "Model | str | float", gpu: "GPU | str", tp: int, weight_dtype: str) -> str:
    """'' unless replicas of ``tp`` GPUs of ``gpu`` serving ``model`` in ``weight_dtype`` are where
    the saturated throughput came out more than a tenth too fast on published runs (each GPU of a
    linked group holding under :data:`SMALL_SHARE_PARAMS` active parameters, a GPU and format of
    :data:`FORMAT_MISS`, routed experts under :data:`SMALL_EXPERT_PARAMS`); then the caveat the
    selector gives such a plan."""
    m, g = as_model(model), gpus.get(gpu)
    check_positive("tp", tp, integer=True)
    check_dtype(weight_dtype, formats.names("weights"), "weight_dtype")
    notes = []
    if _small_share(m, g, tp):
        low, high = SMALL_SHARE_MISS
        notes.append(f"{m.n_active_params / tp / 1e9:.1f} B active parameters on each of {tp} GPUs over {g.gpu_link}, "
                     f"where this model was {low:.0%}-{high:.0%} too fast at peak throughput on published runs")
    if (miss := _format_miss(g, weight_dtype)) is not None:
        notes.append(f"{weight_dtype} weights on this GPU, where this model was {miss:.0%} "
                     "too fast at peak throughput on published runs")
    if _small_experts(m):
        notes.append(f"routed experts of {m.expert_params / 1e6:.0f} M parameters each, "
                     f"where this model was {SMALL_EXPERT_MISS:.0%} too fast at peak throughput on published runs of such "
                     "mixtures")
    return "; ".join(notes)


def saturated(r: Replica) -> Load:
    """The replica ``r`` with every request queued at once (an offline benchmark: trtllm-bench's
    throughput mode, MLPerf's Offline scenario): as many sequences in flight as it holds,
    ``r.max_batch``, at the rate that keeps them there, the memory limit of :func:`limits`.
    Its :attr:`Load.output_tokens_per_s` is the replica's maximum throughput."""
    check_instance("r", r, Replica, "a traffic.Replica")
    return load(r, limits(r)["memory"])


def closed_loop(r: Replica, concurrency: int, *, token_budget: int = TOKEN_BUDGET) -> Load:
    """The first wave of a closed-loop benchmark (GenAI-Perf, vllm bench): ``concurrency`` clients
    start together, so their identical prompts arrive at once, and with requests lasting hundreds of
    steps that wave is most of what such a benchmark measures. The engine takes the prompts whole in
    iterations of at most ``token_budget`` prompt tokens, which also decode the sequences already
    admitted; a cohort's first token comes at the end of its iteration, its next ones at the pace of
    the wave's remaining iterations, then at decode steps of all the clients' sequences.

    Returns the wave's means (time to first token, time per output token), its request rate
    (clients over the time the last one finishes) and the batch in flight that makes
    :attr:`Load.output_tokens_per_s` the wave's output tokens over that time."""
    check_instance("r", r, Replica, "a traffic.Replica")
    check_positive("concurrency", concurrency, integer=True)
    check_positive("token_budget", token_budget, integer=True)
    per_iteration = max(1, token_budget // r.prompt_len)
    sizes = np.full(concurrency // per_iteration, per_iteration)
    if concurrency % per_iteration:
        sizes = np.append(sizes, concurrency % per_iteration)
    admitted = np.cumsum(sizes) - sizes  # sequences already decoding in each iteration
    first = np.cumsum(r.fixed + r.per_sequence * admitted + r.unsplit_loss(admitted) +
                      r.per_prompt_token * r.prompt_len * sizes)
    decode = r.fixed + r.per_sequence * concurrency + float(r.unsplit_loss(concurrency))
    later = np.arange(len(sizes))[::-1]  # iterations of the wave after each cohort's own
    in_wave = np.minimum(later, r.output_len - 1)  # of its later tokens, those paced by the wave
    rest = first[np.minimum(np.arange(len(sizes)) + in_wave, len(sizes) - 1)] - first + \
        (r.output_len - 1 - in_wave) * decode
    ttft = float(sizes @ first) / concurrency
    tpot = float(sizes @ rest) / concurrency / (r.output_len - 1) if r.output_len > 1 else decode
    span = float(np.max(first + rest))
    rate = concurrency / span
    return Load(rate, min(1.0, rate * r.work_per_request), tpot, ttft, concurrency * r.output_len / span * tpot,
                concurrency <= r.max_batch)


def limits(r: Replica, *, ttft_s: float | None = None, tpot_s: float | None = None,
           max_utilization: float = MAX_UTILIZATION) -> dict[str, float]:
    """Largest requests/s each constraint allows (see the module docstring); inf where unconstrained."""
    check_instance("r", r, Replica, "a traffic.Replica")
    check_range("max_utilization", max_utilization, 0, 1, low_open=True)
    w, a = r.work_per_request, r.fixed
    o, m, b, k = r.output_len, r.max_batch, r.block_seconds, r.kv_seconds * r.output_len
    # the step of :func:`load` is the larger of two (one when the cache read splits); each caps the rate
    caps = {"memory": min(m / (o * a + m * w), m / (o * (a + b) + m * (w - k))) if m else 0.0,
            "time per token": inf, "time to first token": inf, "capacity": max_utilization / w}
    if tpot_s is not None:
        check_positive("tpot_s", tpot_s)
        caps["time per token"] = min(max(0.0, 1 - a / tpot_s) / w, max(0.0, 1 - (a + b) / tpot_s) / (w - k))
    if ttft_s is not None:
        check_positive("ttft_s", ttft_s)
        spare = ttft_s - r.prefill
        caps["time to first token"] = 0.0 if spare <= 0 else (2 * spare / w) / (1 + 2 * spare / w) / w
    return caps


@dataclass(frozen=True)
class ServingPlan:
    """The fewest GPUs of one kind that serve a traffic level within its latency targets."""

    gpu: str
    weight_dtype: str
    tp: int
    replicas: int
    per_replica_max: float
    binding: str
    at_load: Load

    @property
    def n_gpus(self) -> int:
        return self.tp * self.replicas


def plan(model: "Model | str | float", gpu: "GPU | str", *, requests_per_s: float, prompt_len: int = 1024,
         output_len: int = 256, ttft_s: float | None = None, tpot_s: float | None = None, tp: int = 1,
         weight_dtype: str = "bf16", max_replicas: int = 4096, host_seconds: float | None = None) -> ServingPlan | None:
    """Replicas of ``tp`` GPUs needed for ``requests_per_s`` within the targets (None if one replica
    cannot serve any traffic within them, or more than ``max_replicas`` would be needed);
    ``host_seconds`` as for :func:`replica`."""
    check_positive("requests_per_s", requests_per_s)
    check_split(as_model(model), tp, replicate_kv=True, name="tp")
    check_positive("max_replicas", max_replicas, integer=True)
    r = replica(model, gpu, tp=tp, prompt_len=prompt_len, output_len=output_len, weight_dtype=weight_dtype,
                host_seconds=host_seconds)
    return _sized(r, gpus.get(gpu).name, weight_dtype, tp, requests_per_s, limits(r, ttft_s=ttft_s, tpot_s=tpot_s),
                  max_replicas)


def _sized(r: Replica, gpu: str, weight_dtype: str, tp: int, requests_per_s: float, caps: dict[str, float],
           max_replicas: int) -> ServingPlan | None:
    """:func:`plan` for the replica ``r`` and its :func:`limits` ``caps`` (arguments already checked)."""
    binding = min(caps, key=caps.get)
    per_replica = caps[binding]
    if per_replica <= 0 or requests_per_s / per_replica > max_replicas:
        return None
    count = ceil(requests_per_s / per_replica * (1 - 1e-12))
    return ServingPlan(gpu=gpu, weight_dtype=weight_dtype, tp=tp, replicas=count, per_replica_max=per_replica,
                       binding=binding, at_load=load(r, requests_per_s / count))


@renamed_keywords(n_gpus="tp")
def batch_curve(model: "Model | str | float", gpu: "GPU | str", *, tp: int = 1, context_len: int = 2048,
                weight_dtype: str = "bf16", kv_dtype: str | None = None) -> pd.DataFrame:
    """Decoding throughput and time per token at every power-of-two batch up to the largest that
    fits (and that one), at ``context_len`` tokens per sequence."""
    m, g = as_model(model), gpus.get(gpu)
    kv = kv_dtype or memory.serving_kv_dtype(weight_dtype)
    top = memory.max_batch_size(m, g, context_len=context_len, weight_dtype=weight_dtype, kv_dtype=kv, tp=tp)
    batches = sorted({2**k for k in range(top.bit_length()) if 2**k <= top} | ({top} if top else set()))
    rows = []
    for b in batches:
        t = serving.decode_seconds(m, g, tp=tp, batch_size=b, context_len=context_len, weight_dtype=weight_dtype,
                                   kv_dtype=kv)
        rows.append({"batch": b, "tokens/s": b / t["total"], "tokens/s per GPU": b / t["total"] / tp,
                     "ms per token": t["total"] * 1000, "compute share": t["compute"] / t["total"]})
    return pd.DataFrame(rows)
