"""The fastest parallel layout that fits, for a training job on a given number of GPUs.

For every GPU count the planner tries the layouts a practitioner would: tensor parallelism of
1, 2, 4 or 8 that divides the heads and never leaves the NVLink domain; pipeline stages of 1 to
64, interleaved in 2 to 8 chunks where there are at least as many micro-batches as stages
(stages may hold unequal numbers of layers, as Llama 3 405B's did); data parallelism for the
rest; ZeRO-1 (Megatron's distributed optimizer) or, without pipelining, ZeRO-3/FSDP; for a
mixture of experts, expert parallelism over 8 or 64 of the data-parallel GPUs (:data:`EP_DEGREES`);
for long sequences, context parallelism over 2 to 16 GPUs (:func:`context_degrees`); micro-batches
of 1 to 8 sequences; FlashAttention (the fastest kernel the GPU runs, :func:`steptime.attention_kernel_for`), with no recompute or full recompute (with FlashAttention,
selective recompute has nothing left to recompute). The global batch stays near
the model's published batch (``data/models.csv``) or, for models without one, the
compute-optimal batch of DeepSeek-AI 2024 (arXiv:2401.02954, Eq. 1: B = 0.292 * C^0.3271 tokens
for C FLOPs), whatever the GPU count: the multiples of dp * micro-batch on either side of it
within a factor :data:`BATCH_SLACK` qualify (both if neither is, so that a run with more tokens
does not get the better of the two only because its rule batch is larger), and of two that qualify
only the larger is tried: the same layout with more micro-batches is never slower per sequence
(its pipeline bubble, data-parallel synchronisation and optimizer step are paid once a step), at
the same memory per GPU. A layout whose
data-parallel replicas would need a batch more than :data:`BATCH_SLACK` times larger is not. Of
the layouts that fit in memory (:mod:`memory`, FP8 sized as BF16) the one with the most tokens
per second (:func:`steptime.terms`) wins.
"""

from dataclasses import dataclass
from functools import cache, lru_cache
from math import ceil

import numpy as np
import pandas as pd

from . import _data, formats, gpus, memory, steptime
from .flops import CHINCHILLA_TOKENS_PER_PARAM, flops_per_token
from .gpus import GPU
from .memory import as_model
from .models import Model
from .steptime import Calibration, Layout, Network, StepTime
from .units import check_dtype, check_instance, check_list, check_positive

#: Sequence length of training when none is given (GPT-3, Llama 1, Megatron-LM 2021).
DEFAULT_SEQ_LEN = 2048
#: The GPU counts planned together (the selector's and the panels' counts, 1 to 4,096): asked for one
#: of them alone, :func:`plans` plans them all, in one vectorised search that costs about twice one
#: count's, so that the next count asked for (a slider's next stop) is planned already.
COUNTS = tuple(2**k for k in range(13))
TP_DEGREES = (1, 2, 4, 8)
PP_DEGREES = (1, 2, 4, 8, 16, 32, 64)
VPP_DEGREES = (1, 2, 4, 8)
MICRO_BATCHES = (1, 2, 4, 8)
#: Expert-parallel degrees tried for mixture-of-experts models (each must divide the experts and
#: dp): none, one 8-GPU server's worth, and the 64 GPUs of eight servers that DeepSeek-V3 trained
#: with (arXiv:2412.19437, Sec. 3.2.2: "64-way Expert Parallelism (EP64) spanning 8 nodes").
#: Every degree tried multiplies the layouts to time; with three a cold sweep over the catalog for
#: such a model takes about 1.5 times a dense model's (all seven powers of two: 3 to 4 times).
EP_DEGREES = (1, 8, 64)
#: Context-parallel degrees tried (without expert parallelism; Megatron-Core's ring attention): each only where it leaves
#: every GPU at least :data:`CP_MIN_TOKENS` tokens of a sequence, so that a 2,048- or 4,096-token job plans
#: as before and a 128k-token one may split its sequences over up to 16 GPUs (Llama 3 405B's long-context
#: stage ran CP 16, Dubey et al. 2024, arXiv:2407.21783, Table 4).
CP_DEGREES = (1, 2, 4, 8, 16)
CP_MIN_TOKENS = 4096
#: A layout may round the global batch up to a multiple of dp * micro-batch, by at most this factor.
BATCH_SLACK = 1.25
#: DeepSeek-AI 2024, arXiv:2401.02954, Eq. 1: optimal batch B = 0.2920 * C**0.3271 tokens.
BATCH_COEFFICIENT, BATCH_EXPONENT = 0.2920, 0.3271
#: Largest batch the rule is applied to, far beyond any published one.
MAX_BATCH_TOKENS = 2**40


@dataclass(frozen=True)
class Plan:
    """The layout chosen for a job, its step and its memory per GPU (bytes)."""

    gpu: str
    n_gpus: int
    layout: Layout
    step: StepTime
    memory_per_gpu: float
    fits: bool

    @property
    def tokens_per_second(self) -> float:
        """All GPUs together, steady state."""
        return self.layout.tokens / self.step.total

    @property
    def scaling_efficiency(self) -> float:
        """Share of the step not lost to splitting the work: 1 - (tensor-parallel, pipeline,
        data-parallel, expert-parallel and context-parallel communication and the pipeline bubble) / step."""
        s = self.step
        return 1 - (s.tensor_parallel + s.pipeline_bubble + s.pipeline_p2p + s.data_parallel + s.expert_parallel +
                    s.context_parallel) / s.total

    @property
    def binding(self) -> str:
        """What the step spends most of its non-compute time on: 'network' (data-parallel or
        pipeline traffic between servers), 'pipeline' (the bubble), 'tensor parallel', 'expert
        parallel' (the all-to-alls), 'context parallel' (the key-value exchange), or 'compute' when
        splitting costs under a fifth of the step."""
        s = self.step
        losses = {"network": s.data_parallel + s.pipeline_p2p, "pipeline": s.pipeline_bubble,
                  "tensor parallel": s.tensor_parallel, "expert parallel": s.expert_parallel,
                  "context parallel": s.context_parallel}
        worst = max(losses, key=losses.get)
        return worst if losses[worst] > 0.2 * s.total else "compute"


def batch_tokens(model: "Model | str | float", tokens: float | None = None) -> float:
    """Global batch in tokens: the model's published batch, else DeepSeek-AI 2024's compute-optimal
    rule for a run on ``tokens`` tokens (20 per parameter when not given)."""
    m = as_model(model)
    published = _published_batches().get(m.name)
    if published:
        return published
    if tokens is not None:
        check_positive("tokens", tokens)
    data = tokens if tokens is not None else CHINCHILLA_TOKENS_PER_PARAM * m.n_params
    batch = BATCH_COEFFICIENT * (flops_per_token(m) * data) ** BATCH_EXPONENT
    if batch > MAX_BATCH_TOKENS:
        raise ValueError(f"tokens={data:.3g} is beyond what the batch rule covers: it implies {batch:.3g} tokens per "
                         f"step, more than {MAX_BATCH_TOKENS:.3g} (published runs use at most "
                         f"{max(_published_batches().values()):.3g})")
    return batch


@cache
def _published_batches() -> dict[str, float]:
    table = _data.table("models")
    return {row["name"]: float(row["train_batch_tokens"]) for _, row in table.iterrows()
            if not pd.isna(row["train_batch_tokens"])}


def training_dtype(gpu: GPU, dtype: str | None = None) -> str:
    """``dtype`` if given (one of :data:`steptime.STEP_DTYPES`), else BF16, or FP16 on GPUs
    without it (V100, T4)."""
    if dtype is not None:
        return check_dtype(dtype, formats.names("training"))
    return "bf16" if gpu.supports("bf16") else "fp16"


def layout_memory(model: Model, c: dict[str, np.ndarray], seq_len: int, dtype: str, *, flash_attention: bool = True,
                  sequence_parallel: bool = True, dropout: bool = False) -> np.ndarray:
    """Bytes per GPU of each layout in ``c`` (arrays of :func:`steptime.terms`'s layout arguments):
    sharded model states (:func:`memory.shard`, over dp * cp: context-parallel ranks share the
    distributed optimizer's shards) and the activations of the first stage and of the layer a
    recompute rebuilds (:func:`memory.stage_activation_bytes`), of the GPU's 1/cp of each sequence.
    Planned jobs run FlashAttention, sequence parallelism and no dropout, as modern pre-training recipes do."""
    cp = c.get("cp", 1)
    states = memory.model_states(model, "bf16" if dtype == "fp8" else dtype, "adamw", True, "full", 16)
    weights, gradients, optimizer = memory.shard(states, c["tp"], c["pp"], c["dp"] * cp, c["zero_stage"],
                                                 c.get("ep", 1), model.routed_share)
    acts = memory.stage_activation_bytes(model, c["micro_batch"], float(seq_len) / cp, c["recompute"], c["tp"], c["pp"],
                                         memory.activation_value_bytes(dtype), vpp=c["vpp"],
                                         flash_attention=flash_attention, sequence_parallel=sequence_parallel,
                                         dropout=dropout)
    return weights + gradients + optimizer + acts + memory.RUNTIME_OVERHEAD


def layout_bytes(model: "Model | str | float", layout: Layout) -> float:
    """:func:`layout_memory` of one :class:`steptime.Layout`, with its own attention and dropout."""
    model = as_model(model)
    check_instance("layout", layout, Layout, "a steptime.Layout")
    c = {k: np.array([getattr(layout, k)]) for k in ("tp", "pp", "dp", "micro_batch", "vpp", "zero_stage", "ep", "cp")}
    c["recompute"] = np.array([memory.RECOMPUTE.index(layout.recompute)])
    return float(layout_memory(model, c, layout.seq_len, layout.dtype, flash_attention=layout.flash_attention,
                               sequence_parallel=layout.sequence_parallel, dropout=layout.dropout)[0])


def context_degrees(seq_len: int) -> tuple[int, ...]:
    """The context-parallel degrees the planner tries for sequences of ``seq_len`` tokens: 1, and each
    of :data:`CP_DEGREES` that leaves every GPU at least :data:`CP_MIN_TOKENS` tokens and splits the
    sequence into 2 * cp equal chunks (the load-balanced causal split)."""
    check_positive("seq_len", seq_len, integer=True)
    return tuple(c for c in CP_DEGREES if c == 1 or (seq_len // c >= CP_MIN_TOKENS and seq_len % (2 * c) == 0))


@cache
def _block(n_heads: int, n_kv_heads: int, n_layers: int, domain: int, counts: tuple[int, ...],
           target_sequences: int, n_experts: int = 1, cps: tuple[int, ...] = (1,)
           ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Every layout tried for each of ``counts`` GPUs (see the module docstring), as arrays, the
    index of the count each belongs to, and the index of each one's plain 1F1B sibling (the same
    layout at vpp 1, itself where vpp is 1): the grid count x tp x cp x pp x micro-batch x batch side x
    vpp x ZeRO stage x expert parallelism x recompute, in that order, masked to the valid layouts
    (count x tp x cp x pp first, to keep the grid small). Expert parallelism (a mixture of ``n_experts``
    experts only) divides the experts and dp, under ZeRO-1, without context parallelism (the degrees
    ``cps``). A narrower NVLink domain's block is the widest one's without its wider tensor-parallel
    groups (nothing else depends on the domain), taken from it."""
    if domain < TP_DEGREES[-1]:
        c, owner, base = _block(n_heads, n_kv_heads, n_layers, TP_DEGREES[-1], counts, target_sequences, n_experts, cps)
        keep = c["tp"] <= domain  # a layout and its vpp-1 sibling share their tp: both kept, or neither
        rows = np.flatnonzero(keep)
        return {k: v[rows] for k, v in c.items()}, owner[rows], (np.cumsum(keep) - 1)[base[rows]]

    def expand(arrays, ok, grid):  # the rows ``ok`` of ``arrays``, each crossed with every point of ``grid``
        inner = [a.ravel() for a in np.meshgrid(*grid, indexing="ij")]
        return [np.repeat(a[ok], len(inner[0])) for a in arrays] + [np.tile(a, ok.sum()) for a in inner]

    outer = np.meshgrid(np.arange(len(counts)), TP_DEGREES, cps, np.arange(len(PP_DEGREES)), indexing="ij")
    owner, tp, cp, stage = (a.ravel() for a in outer)
    pp = np.array(PP_DEGREES)[stage]
    deepest = np.array([steptime.max_vpp(n_layers, p) for p in PP_DEGREES])[stage]  # most chunks per stage
    n = np.array(counts, dtype=np.int64)[owner]
    ok = (tp <= domain) & (n % (tp * cp) == 0) & (n_heads % tp == 0) & (n_kv_heads % tp == 0) & (pp <= n_layers)
    ok &= (n // (tp * cp)) % pp == 0
    owner, tp, cp, pp, deepest, n, b, side = expand((owner, tp, cp, pp, deepest, n), ok, (MICRO_BATCHES, (0, 1)))
    dp = n // (tp * cp * pp)
    step = dp * b
    ok = step <= BATCH_SLACK * target_sequences
    # the multiples of dp * micro-batch on either side of the target within the slack, else both
    below, above = target_sequences // step, -(-target_sequences // step)
    exists = (below > 0, (above > 0) & (above != below))
    near = [e & (target_sequences / BATCH_SLACK <= m * step) & (m * step <= BATCH_SLACK * target_sequences)
            for e, m in zip(exists, (below, above))]
    either = near[0] | near[1]
    ok &= np.where(side == 0, exists[0] & (near[0] | ~either), exists[1] & (near[1] | ~either))
    pair = ok.reshape(-1, 2)  # each layout's (smaller, larger) batch: where both qualify, the larger (see above)
    pair[:, 0] &= ~pair[:, 1]
    multiple = np.where(side == 0, below, above)
    eps = tuple(e for e in EP_DEGREES if n_experts % e == 0) if n_experts > 1 else (1,)
    owner, tp, cp, pp, deepest, dp, b, multiple, chunks, zero, ep, rc = expand(
        (owner, tp, cp, pp, deepest, dp, b, multiple), ok, (np.arange(len(VPP_DEGREES)), (1, 3), eps, (0, 2)))
    vpp = np.array(VPP_DEGREES)[chunks]  # recompute above: none, full
    ok = (vpp == 1) | ((pp > 1) & (vpp <= deepest) & (multiple >= pp))
    ok &= (zero == 1) | (pp == 1)  # ZeRO-3 shards what pipelining already splits
    ok &= (ep == 1) | ((dp % ep == 0) & (zero == 1) & (cp == 1))
    rows = np.flatnonzero(ok)
    sibling = rows - chunks[rows] * (2 * len(eps) * 2)  # ZeRO stages x ep x recompute: the same layout at vpp 1
    c = {"tp": tp, "pp": pp, "dp": dp, "micro_batch": b, "global_batch": multiple * dp * b, "vpp": vpp,
         "zero_stage": zero, "recompute": rc, "ep": ep, "cp": cp}
    return {k: v[rows] for k, v in c.items()}, owner[rows], (np.cumsum(ok) - 1)[sibling]


@lru_cache(maxsize=64)
def _needs(model: Model, domain: int, counts: tuple[int, ...], target_sequences: int, seq_len: int,
           dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`layout_memory` of a :func:`_block`, and the index of each count's most frugal layout:
    the same for every GPU with that NVLink domain, so a sweep over the catalog computes them once
    per domain (read-only)."""
    cps = context_degrees(seq_len)
    c, owner, _ = _block(model.n_heads, model.n_kv_heads, model.n_layers, domain, counts, target_sequences, model.n_experts,
                         cps)
    if domain < TP_DEGREES[-1]:  # the widest domain's memory, of the layouts this block keeps of it
        widest, _, _ = _block(model.n_heads, model.n_kv_heads, model.n_layers, TP_DEGREES[-1], counts, target_sequences,
                              model.n_experts, cps)
        need = _needs(model, TP_DEGREES[-1], counts, target_sequences, seq_len, dtype)[0][widest["tp"] <= domain]
    else:
        need = layout_memory(model, c, seq_len, dtype)
    frugal = _first_of_each(owner, need)
    need.flags.writeable = frugal.flags.writeable = False
    return need, frugal


def _first_of_each(groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Index of the smallest value of each group (the first where values tie), for groups in
    ascending order: one pass over the groups' segments rather than a sort."""
    if not len(groups):
        return np.zeros(0, dtype=np.intp)
    starts = np.flatnonzero(np.concatenate(([True], groups[1:] != groups[:-1])))
    lowest = np.repeat(np.fmin.reduceat(values, starts), np.diff(np.append(starts, len(groups))))
    hit = np.flatnonzero((values == lowest) | np.isnan(lowest))
    return hit[np.concatenate(([True], groups[hit][1:] != groups[hit][:-1]))]


def _candidates(model: Model, g: GPU, counts: tuple[int, ...], seq_len: int, dtype: str, target_sequences: int,
                network: Network):
    """The layouts of a GPU's :func:`_block` worth timing: those that fit (or, for a count where none
    does, its most frugal one), and a full-recompute layout only where the same layout without
    recompute does not fit. Returns the block, the count each of its layouts belongs to, their
    memory and fit, the indices kept, the indices of the plain 1F1B siblings to time, and where each
    kept layout's sibling sits among those (None when no layout can use these counts)."""
    # the widest tensor-parallel group that fits the domain: a 72-GPU NVLink domain plans as an 8-GPU one
    domain = max(1, min(g.gpu_link_domain if g.gpu_link else 1, network.gpus_per_server, TP_DEGREES[-1]))
    c, owner, base = _block(model.n_heads, model.n_kv_heads, model.n_layers, domain, counts, target_sequences,
                            model.n_experts, context_degrees(seq_len))
    if not len(owner):
        return None
    need, frugal = _needs(model, domain, counts, target_sequences, seq_len, dtype)
    fits = need <= g.reported_memory_bytes
    # candidates come in (none, full) pairs: full recompute only buys memory
    plain_fits = np.zeros_like(fits)
    plain_fits[1:] = fits[:-1] & (c["recompute"][:-1] == 0) & (c["recompute"][1:] == 2)
    keep = fits & ~plain_fits
    # where nothing of a count fits, keep its most frugal try
    keep[frugal[np.bincount(owner[fits], minlength=len(counts))[owner[frugal]] == 0]] = True
    idx = np.flatnonzero(keep)
    # time each kept layout's plain 1F1B sibling once, and derive its interleaved variants from it
    timed = np.zeros(len(owner), dtype=bool)
    timed[base[idx]] = True
    return c, owner, need, fits, idx, np.flatnonzero(timed), (np.cumsum(timed) - 1)[base[idx]]


@lru_cache(maxsize=256)
def _catalog(model: Model, jobs: tuple[tuple[GPU, tuple[int, ...], str, Network], ...], seq_len: int,
             target_sequences: int, calibration: Calibration) -> tuple[tuple[Plan | None, ...], ...]:
    """For each job (GPU, counts, dtype, network), the best layout of each count (None where no
    layout can use that many GPUs). The candidates of all jobs (:func:`_candidates`) are timed in
    one vectorised call of :func:`steptime.terms`, each with its own GPU's :func:`steptime.rates`,
    which costs half of timing them GPU by GPU. Cached (the plans are frozen): a reader moving a
    deadline or a budget re-ranks the catalog without re-planning it."""
    found = [_candidates(model, g, counts, seq_len, dtype, target_sequences, network)
             for g, counts, dtype, network in jobs]
    live = [(job, f) for job, f in zip(jobs, found) if f is not None]
    out = {}
    if live:
        jobs_live, (blocks, owners, needs, fitted, kept, timed, at) = [j for j, _ in live], zip(*(f for _, f in live))
        r = steptime.stacked([steptime.rates(g, dtype, steptime.attention_kernel_for(g), network, calibration)
                              for g, _, dtype, network in jobs_live], [len(i) for i in timed])
        ct = {k: np.concatenate([b[k][i] for b, i in zip(blocks, timed)]) for k in blocks[0]}
        every = steptime.terms(model, r, **ct, seq_len=seq_len, calibration=calibration)
        # The kept layouts are timed ones at vpp 1 and their interleaved variants: each timed layout's
        # time per sequence at each vpp (batches differ between layouts), where that variant was kept.
        starts = np.cumsum([0] + [len(i) for i in timed])
        sibling = np.concatenate([a + s for a, s in zip(at, starts)])
        vpp = np.concatenate([b["vpp"][i] for b, i in zip(blocks, kept)])
        variant = np.full((len(VPP_DEGREES), len(ct["vpp"])), -1)
        variant[np.searchsorted(VPP_DEGREES, vpp), sibling] = np.arange(len(vpp))
        m = ct["global_batch"] // (ct["dp"] * ct["micro_batch"])
        per_sequence = np.array([sum(t[k] for k in StepTime.TERMS) / ct["global_batch"] for t in
                                 (steptime.interleaved(every, v, ct["pp"], m) for v in VPP_DEGREES)])
        fastest = np.argmin(np.where(variant >= 0, per_sequence, np.inf), axis=0)
        # each job's counts are groups of their own, numbered on from the previous job's
        first = np.cumsum([0] + [len(job[1]) for job in jobs_live])
        owner = np.concatenate([o[i] + f for o, i, f in zip(owners, timed, first)])
        best = _first_of_each(owner, per_sequence[fastest, np.arange(len(fastest))])
        chosen = variant[fastest[best], best]  # the kept layouts
        need, fits = np.concatenate([n[i] for n, i in zip(needs, kept)]), np.concatenate([f[i] for f, i in zip(fitted, kept)])
        c = {k: v[best] for k, v in ct.items()} | {"vpp": vpp[chosen]}
        t = steptime.interleaved({k: v[best] for k, v in every.items()}, c["vpp"], c["pp"], m[best])
        job_of = np.searchsorted(starts[1:], best, side="right")
        for n, (g, counts, dtype, network) in enumerate(jobs_live):
            mine = np.flatnonzero(job_of == n)
            picked = steptime.picked(model, g, c, t, mine, seq_len=seq_len, dtype=dtype,
                                     attention_kernel=steptime.attention_kernel_for(g))
            plans = [None] * len(counts)
            for j, (layout, step) in zip(mine, picked):
                count = owner[best[j]] - first[n]
                plans[count] = Plan(gpu=g.name, n_gpus=counts[count], layout=layout, step=step,
                                    memory_per_gpu=float(need[chosen[j]]), fits=bool(fits[chosen[j]]))
            out[g, counts, dtype, network] = tuple(plans)
    return tuple(out.get(job, (None,) * len(job[1])) for job in jobs)


def plans(model: "Model | str | float", gpu: "GPU | str", counts: tuple[int, ...], *, seq_len: int = DEFAULT_SEQ_LEN,
          tokens: float | None = None, global_batch_tokens: float | None = None, dtype: str | None = None,
          network: Network | None = None, calibration: Calibration | None = None) -> list[Plan | None]:
    """:func:`plan` for each of ``counts`` GPUs at once (None where no layout can use that many)."""
    return catalog(model, [(gpu, counts)], seq_len=seq_len, tokens=tokens, global_batch_tokens=global_batch_tokens,
                   dtype=dtype, network=network, calibration=calibration)[0]


def catalog(model: "Model | str | float", jobs: list[tuple["GPU | str", tuple[int, ...]]], *,
            seq_len: int = DEFAULT_SEQ_LEN, tokens: float | None = None, global_batch_tokens: float | None = None,
            dtype: str | None = None, network: Network | None = None,
            calibration: Calibration | None = None) -> list[list[Plan | None]]:
    """:func:`plans` for several (GPU, counts) jobs at once, in one search (the selector's sweep):
    ``dtype`` and ``network`` default to each GPU's own (:func:`training_dtype`,
    :func:`steptime.network_for`)."""
    m = as_model(model)
    check_positive("seq_len", seq_len, integer=True)
    target = batch_tokens(m, tokens) if global_batch_tokens is None else global_batch_tokens
    check_positive("global_batch_tokens", target)
    keys, asked = [], []
    for i, job in enumerate(check_list("jobs", jobs)):
        if not isinstance(job, (tuple, list)) or len(job) != 2:
            raise ValueError(f"jobs[{i}] must be a (gpu, counts) pair, got {job!r}")
        gpu, counts = job
        g = gpus.get(gpu)
        counts = tuple(check_list("counts", counts))
        for i, n in enumerate(counts):
            check_positive(f"counts[{i}]", n, integer=True)
        d = training_dtype(g, dtype)
        g.peak_flops(d)  # a clear error for a dtype the GPU lacks
        grid = COUNTS if len(counts) == 1 and counts[0] in COUNTS else counts  # one count: its neighbours too
        keys.append((g, grid, d, steptime.network_for(g) if network is None else network))
        asked.append(counts)
    found = _catalog(m, tuple(keys), seq_len, max(1, ceil(target / seq_len)),
                     steptime.default_calibration() if calibration is None else calibration)
    return [[plans[key[1].index(n)] for n in counts] for plans, key, counts in zip(found, keys, asked)]


def plan(model: "Model | str | float", gpu: "GPU | str", n_gpus: int, **kwargs) -> Plan:
    """The fastest layout of ``n_gpus`` GPUs that fits in memory (or, when none fits, the most
    frugal one, with ``fits=False``). Keywords as for :func:`plans`: ``seq_len`` (2048),
    ``tokens`` (for the batch rule), ``global_batch_tokens`` (default :func:`batch_tokens`),
    ``dtype`` (bf16, or fp16 where the GPU lacks it), ``network`` (:func:`steptime.network_for`),
    ``calibration``. Raises a ValueError when no layout can use that many GPUs at this batch."""
    check_positive("n_gpus", n_gpus, integer=True)
    (result,) = plans(model, gpu, (n_gpus,), **kwargs)
    if result is None:
        m = as_model(model)
        target = kwargs.get("global_batch_tokens") or batch_tokens(m, kwargs.get("tokens"))
        raise ValueError(f"n_gpus={n_gpus}: no layout of {gpus.get(gpu).name} GPUs runs {m.display_name} at a global "
                         f"batch of {target / 1e6:.2g}M tokens; use fewer GPUs")
    return result
