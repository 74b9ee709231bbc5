"""One training step, term by term, for a model split over GPUs by a parallel layout.

A step processes ``global_batch`` sequences. Tensor parallelism (``tp``) splits every layer's
matrices inside an NVLink domain; pipeline parallelism (``pp``) splits the layers into stages that
each run ``micro_batches`` micro-batches (1F1B, optionally interleaved into ``vpp`` chunks per
stage); data parallelism (``dp``) replicates the rest and averages gradients, with ZeRO/FSDP
sharding (``zero_stage``). The terms, in seconds per step on the critical path:

- **compute**: matrix products at a calibrated fraction of the dense peak, less a fixed cost per
  output tile that weighs on short inner dimensions (:data:`GEMM_PROLOGUE_K`), each no faster than
  its own memory traffic (a per-GEMM roofline, Williams et al. 2009), a mixture of experts' routed
  experts as grouped products that read the weights of every expert the GPU holds (n_experts / ep)
  however few tokens each receives; causal FlashAttention
  (Dao 2023, arXiv:2307.08691: 2 matmuls forward, 5 backward, half of them skipped by the causal
  mask), at the speed of the run's kernel (:data:`ATTENTION_KERNELS`), or, for unfused attention,
  the full score matrix; element-wise kernels (norms,
  activations, dropout, residuals) that stream the layer's activations, whose bytes follow
  :func:`memory.layer_activation_bytes` (Korthikanti et al. 2022, arXiv:2205.05198, Eq. 1-2, from
  the layer's own shapes), a calibrated number of times.
- **recompute**: with full recompute, one more forward of every layer; with selective recompute
  and unfused attention, the attention core again (Korthikanti et al. 2022, Sec. 5).
- **tensor_parallel**: four all-reduces (or reduce-scatter/all-gather pairs under sequence
  parallelism) of the layer's activations per micro-batch and layer, six with full recompute
  (Shoeybi et al. 2019, Sec. 3; Korthikanti et al. 2022, Sec. 4.2.2), on the critical path unless
  pipelined with the matrix products (``tp_overlap``), which can hide them up to their own time.
  A parallel block (:data:`models.BLOCKS`) adds attention's and the MLP's outputs before one
  reduction ("we can do a single allreduce after we add mlp / attn outputs", GPT-NeoX,
  megatron/model/transformer.py, ``gpt_j_residual``), while the backward still reduces each
  branch's input gradient: three, four with full recompute.
- **pipeline_bubble**: (pp - 1) / vpp idle micro-batch slots (Narayanan et al. 2021,
  arXiv:2104.04473, Sec. 2.2); **pipeline_p2p**: the activation and gradient sends between
  stages, vpp of each per micro-batch, each tensor-parallel rank sending a 1/tp share that the
  next stage all-gathers over NVLink unless sequence parallelism keeps it split (Narayanan et al.
  2021, Sec. 4.1, "scatter/gather", Megatron-LM's default; DeepSpeed's pipeline engine partitions
  its sends over the tensor-parallel ranks the same way, ``is_pipe_partitioned``).
- **data_parallel**: the exposed part of the gradient all-reduce behind the last micro-batch's
  backward pass (ZeRO-0); of the gradient reduce-scatter there and the weight all-gather behind
  the next forward pass (ZeRO-1/2, Megatron's distributed optimizer); or of ZeRO-3's weight
  all-gathers and gradient reduce-scatters, one per layer and micro-batch (PyTorch FSDP wraps each
  block as a unit), each with its own ring latency. Overlap is bounded by the
  compute it can hide behind times a calibrated overlap efficiency, and the last bucket is
  always exposed.
- **optimizer**: Adam's update, memory-bound: 30 bytes per local parameter (read fp32 gradient,
  read and write fp32 master weight and two moments, write the 16-bit weight).
- **expert_parallel**: for a mixture of experts whose routed experts are spread over ``ep`` of the
  data-parallel GPUs, the all-to-alls that send every token to its experts' GPUs and back, two
  forward and two backward per MoE layer and micro-batch (two more under full recompute), exposed,
  over NVLink inside a server and the NICs beyond it at once. Each expert's gradients then reduce
  over its own dp / ep replicas, fewer of which share a server (in data_parallel).
- **context_parallel**: with each sequence split over ``cp`` GPUs (every term above then works on
  the GPU's 1/cp of the tokens and of the causal attention pairs), the part of the ring exchange
  of keys and values that the attention blocks computed meanwhile do not cover (Liu et al. 2023,
  arXiv:2310.01889; Megatron-Core's context parallelism); the gradients reduce over dp * cp GPUs.

Everything is computed with numpy so that the planner can evaluate thousands of layouts at once.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from functools import cache, cached_property, lru_cache, partial

import numpy as np
import pandas as pd

from . import _data, comm, formats, gpus, memory
from .flops import flops_per_token
from .gpus import GPU
from .memory import RECOMPUTE, ZERO_STAGES, as_model, check_split
from .models import Model
from .units import check_bool, check_choice, check_dtype, check_positive

#: ``STEP_DTYPES``: the compute dtypes a training step runs in (role "training", read on first use).
#: FP8 applies to the linear layers only; attention and element-wise kernels stay in BF16
#: (Transformer Engine's recipe, NVIDIA TE documentation).
__getattr__ = formats.lazy_constants(__name__, {"STEP_DTYPES": lambda: formats.names("training")})
#: Bytes Adam moves per local parameter in one update (see the module docstring).
OPTIMIZER_BYTES_PER_PARAM = 30
#: Fraction of peak memory bandwidth a training step's element-wise kernels reach on HBM (about
#: 0.85-0.9; decoding kernels' own fraction is fitted in ``data/calibration.csv``,
#: serving/bandwidth_fraction).
STREAM_FRACTION = 0.85
#: Bytes per element of casting a GEMM input to FP8 (read BF16, write FP8; Transformer Engine's
#: per-tensor casts before each of the four linear layers of a block).
FP8_CAST_BYTES = 3
#: Bytes read and written per attention score in an unfused forward pass, without and with
#: dropout (see :func:`terms`).
SCORE_BYTES = 8
DROPOUT_SCORE_BYTES = 5
#: Speed of each fused attention kernel relative to FlashAttention-2 (and its successors: cuDNN's
#: fused attention, FlashAttention-3), which the calibration runs used. Dao 2023, arXiv:2307.08691,
#: Sec. 4.1 (A100, forward and backward): FlashAttention-2 is "around 2x faster than FlashAttention
#: and FlashAttention in xformers (the 'cutlass' implementation)" ("flash1", the kernels of runs
#: from before July 2023) and "around 1.3-1.5x faster than FlashAttention in Triton" ("triton",
#: taken as 1.4x).
ATTENTION_KERNELS = {"flash2": 1.0, "flash1": 0.5, "triton": 1 / 1.4}
#: The widest head each fused kernel runs: FlashAttention 1 "head_size <= 128" (Dao-AILab/
#: flash-attention v1, csrc/flash_attn/fmha_api.cpp), its Triton version "only support head
#: dimensions up to 128" (flash_attn/flash_attn_triton.py), FlashAttention-2 "at most 256"
#: (csrc/flash_attn/flash_api.cpp). Wider heads ran unfused.
ATTENTION_MAX_HEAD_DIM = {"flash2": 256, "flash1": 128, "triton": 128}
#: Architectures without FlashAttention-2 ("Ampere, Ada, or Hopper GPUs ... please use FlashAttention
#: 1.x for Turing GPUs", Dao-AILab/flash-attention README; later architectures run it or its
#: successors, AMD's through ROCm's port): Turing runs FlashAttention 1, Volta the memory-efficient
#: kernel of xformers (PyTorch's SDPA "efficient" backend), which Dao 2023 places with FlashAttention 1.
FLASH1_ARCHITECTURES = ("Volta", "Turing")
#: Fixed cost of a matrix product per output tile, in units of its inner dimension k: a product
#: runs at k / (k + GEMM_PROLOGUE_K) of the rate it reaches at large k (filling the tile's
#: pipeline and writing it back; Kerr et al. 2017, 'CUTLASS: Fast Linear Algebra in CUDA C++').
#: Fitted on XLA's measured H100 products of at least 2^25 outputs (``data/gemm_runs.csv``:
#: 464-620 TFLOP/s at k = 256-512, 763-809 at 2048-4096; a test refits it) and taken for every
#: GPU. In training the inner dimension is d_in forward, d_out / tp for the input gradient and the
#: tokens for the weight gradient.
GEMM_PROLOGUE_K = 200
#: PyTorch DDP's and Megatron's gradient bucket (``bucket_cap_mb=25``; Li et al. 2020, arXiv:2006.15704).
BUCKET_BYTES = 25 * 2**20
#: Steps shorter than this (seconds, as the model predicts them) are where it is known to be too fast:
#: on every published test run with such steps its time came out :data:`SHORT_STEP_MISS` short, as if
#: each step paid a fixed cost the terms above do not have (the rows ``short step`` marks in
#: :func:`validation.training_runs`; their figures are in the validation appendix and
#: ``benchmarks/results.md``). The selector and the 3D-parallelism panel say so of such a plan
#: (:func:`short_step_note`).
SHORT_STEP_S = 0.25
#: How much too fast the model was on those runs, least and most (a test keeps it in step with the data).
SHORT_STEP_MISS = (0.20, 0.60)
#: Fewest layouts :func:`terms` computes per distinct combination of their values (:func:`_per_distinct`):
#: below some thousand rows numpy's fixed cost per operation dominates, and finding the
#: combinations would cost more than it saves.
DISTINCT_MIN_ROWS = 1024


@dataclass(frozen=True)
class Layout:
    """How one training step is split over ``tp * pp * dp`` GPUs.

    ``micro_batch`` and ``global_batch`` count sequences of ``seq_len`` tokens; ``global_batch``
    must be a multiple of ``dp * micro_batch``. ``vpp`` is the number of interleaved model chunks
    per pipeline stage (1: plain 1F1B). ``overlap``: whether the framework overlaps gradient
    reduction with the backward pass (Megatron-Core, DDP and FSDP do; Megatron-LM 2021 did not).
    ``grad_bytes``: bytes per gradient element reduced (None: 4 for bf16 and fp8, as Megatron-LM
    reduces bf16 gradients in fp32, else 2). ``tp_overlap``: whether tensor-parallel collectives are
    pipelined with the matrix products around them (Megatron-Core's ``--tp-comm-overlap``,
    Transformer Engine userbuffers), so that only what the products cannot cover is exposed.
    ``gather_overlap``: whether ZeRO-1/2's all-gather of the updated 16-bit weights hides behind the
    next forward pass (Megatron-Core's ``--overlap-param-gather``); DeepSpeed's ZeRO-1/2 optimizer
    gathers them inside its ``step()``, before the next forward starts (``all_gather_dp_groups`` in
    ``deepspeed/runtime/zero/stage_1_and_2.py``: "ready for next round forward"), exposed.
    ``dropout``: whether the model trains with dropout (masks to store and stream).
    ``attention_kernel``: which fused kernel runs attention when ``flash_attention`` is set (a key
    of :data:`ATTENTION_KERNELS`). ``ep``: expert parallelism, the routed experts of a
    mixture-of-experts model split over ``ep`` of the data-parallel replicas (Megatron-Core's
    expert-parallel groups), which exchange tokens by all-to-all (``describe`` shows it as DP n (EP e)).
    ``cp``: context parallelism, each sequence split over ``cp`` GPUs (Megatron-Core's
    ``--context-parallel-size``, Transformer Engine's ring attention with the causal load balancing
    that needs ``seq_len`` to be a multiple of ``2 * cp``); it runs fused attention, and its ranks
    reduce gradients with the data-parallel ones (over ``dp * cp`` GPUs). Not combined with expert
    parallelism here.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    micro_batch: int = 1
    global_batch: int = 1
    seq_len: int = 2048
    zero_stage: int = 1
    recompute: str = "selective"
    vpp: int = 1
    dtype: str = "bf16"
    sequence_parallel: bool = True
    flash_attention: bool = True
    dropout: bool = False
    overlap: bool = True
    tp_overlap: bool = False
    gather_overlap: bool = True
    grad_bytes: int | None = None
    attention_kernel: str = "flash2"
    ep: int = 1
    cp: int = 1

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "micro_batch", "global_batch", "seq_len", "vpp", "ep"):
            check_positive(name, getattr(self, name), integer=True)
        check_choice("zero_stage", self.zero_stage, ZERO_STAGES)
        check_choice("recompute", self.recompute, RECOMPUTE)
        check_choice("attention_kernel", self.attention_kernel, tuple(ATTENTION_KERNELS))
        check_dtype(self.dtype, formats.names("training"))
        for name in ("sequence_parallel", "flash_attention", "dropout", "overlap", "tp_overlap", "gather_overlap"):
            check_bool(name, getattr(self, name))
        if self.grad_bytes is not None:
            check_choice("grad_bytes", self.grad_bytes, (2, 4))
        if self.global_batch % (self.dp * self.micro_batch):
            raise ValueError(f"global_batch={self.global_batch} must be a multiple of dp * micro_batch = "
                             f"{self.dp * self.micro_batch}")
        if self.pp > 1 and self.zero_stage >= 2:
            raise ValueError(f"zero_stage={self.zero_stage} does not combine with pp={self.pp}; allowed: 0 or 1")
        if self.vpp > 1 and self.pp == 1:
            raise ValueError(f"vpp={self.vpp} needs pipeline parallelism (pp > 1)")
        if self.ep > 1 and (self.dp % self.ep or self.zero_stage == 3):
            raise ValueError(f"ep={self.ep} must divide dp={self.dp} and run under ZeRO-0 to 2, "
                             f"got zero_stage={self.zero_stage}")
        memory.check_cp(self.cp, self.seq_len, self.flash_attention, self.ep)

    @property
    def n_gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    @property
    def micro_batches(self) -> int:
        """Micro-batches each pipeline runs per step."""
        return self.global_batch // (self.dp * self.micro_batch)

    @property
    def tokens(self) -> int:
        """Tokens per step."""
        return self.global_batch * self.seq_len

    def describe(self) -> str:
        """A short label: 'TP 8 x PP 4 x DP 16, micro-batch 1, ZeRO-1, selective recompute' (the
        recompute only when there is one, the context parallelism, 'CP 2', only above 1)."""
        parts = [f"TP {self.tp} x " + (f"CP {self.cp} x " if self.cp > 1 else "") + f"PP {self.pp}" +
                 (f" (interleaved {self.vpp})" if self.vpp > 1 else "") +
                 f" x DP {self.dp}" + (f" (EP {self.ep})" if self.ep > 1 else ""), f"micro-batch {self.micro_batch}",
                 f"ZeRO-{self.zero_stage}"]
        return ", ".join(parts + [f"{self.recompute} recompute"] * (self.recompute != "none"))


_LAYOUT_DEFAULTS = {f.name: f.default for f in fields(Layout)}


@dataclass(frozen=True)
class Network:
    """The servers a job runs on: ``gpus_per_server`` GPUs joined by their own link (NVLink or
    PCIe), and ``nics_per_server`` NICs of kind ``nic`` (a :func:`comm.link` name) between servers."""

    gpus_per_server: int = 8
    nics_per_server: int = 8
    nic: str = "ib-ndr"

    def __post_init__(self) -> None:
        check_positive("gpus_per_server", self.gpus_per_server, integer=True)
        check_positive("nics_per_server", self.nics_per_server, integer=True)
        comm.link(self.nic)


@cache
def _servers() -> dict[str, tuple[Network, tuple[str, ...]]]:
    """Each server of ``data/servers.csv``: its :class:`Network` and the GPUs it is the default for."""
    return {row["server"]: (Network(int(row["gpus_per_server"]), int(row["nics_per_server"]), row["nic"]),
                            tuple(row["gpus"].split(";")) if isinstance(row["gpus"], str) else ())
            for _, row in _data.table("servers").iterrows()}


def server(name: str) -> Network:
    """A server of ``data/servers.csv`` by name (``'HGX A100'``, ``'AWS p4d.24xlarge'``, ...)."""
    check_choice("name", name, tuple(_servers()))
    return _servers()[name][0]


def network_for(gpu: "GPU | str") -> Network:
    """The servers this GPU ships in (``data/servers.csv``): HGX/DGX-class boards with one
    200-400 Gb/s NIC per GPU, PCIe-card servers with 2 x 200 Gb/s for 8 cards, workstations one NIC."""
    return _defaults()[gpus.get(gpu).name]


@cache
def _defaults() -> dict[str, Network]:
    return {name: network for network, names in _servers().values() for name in names}


@dataclass(frozen=True)
class Calibration:
    """The few efficiency parameters of the step model, fitted on published runs
    (:func:`calibration.fit`): the fraction of dense peak large matrix products reach, per
    (architecture, dtype); fused attention kernels' efficiency relative to that, per architecture
    (FlashAttention-2 comes close to GEMM efficiency on A100 but not on H100: Dao 2023,
    arXiv:2307.08691, Sec. 4.1; Shah et al. 2024, FlashAttention-3, arXiv:2407.08608, Sec. 1); how
    many times element-wise kernels stream the stored activations; and the share of the hideable
    compute that overlapped communication actually hides."""

    gemm_efficiency: tuple[tuple[str, float], ...] = ()
    elementwise_passes: float = 2.0
    overlap_efficiency: float = 1.0
    attention_efficiency: tuple[tuple[str, float], ...] = ()
    default_efficiency: float = 0.7
    default_attention: float = 1.0

    def __post_init__(self) -> None:
        for key, value in self.gemm_efficiency:
            check_positive(f"gemm_efficiency[{key}]", value)
            if value > 1:
                raise ValueError(f"gemm_efficiency[{key}] is a fraction of peak, at most 1, got {value}")
        for key, value in self.attention_efficiency:
            check_positive(f"attention_efficiency[{key}]", value)
        check_positive("elementwise_passes", self.elementwise_passes, allow_zero=True)
        check_positive("overlap_efficiency", self.overlap_efficiency, allow_zero=True)
        check_positive("default_efficiency", self.default_efficiency)
        check_positive("default_attention", self.default_attention)

    @classmethod
    def from_table(cls, table) -> "Calibration":
        """From rows of (parameter, value): ``gemm_efficiency/<architecture>/<dtype>``,
        ``elementwise_passes``, ``overlap_efficiency``, ``attention_efficiency/<architecture>``."""
        values = dict(zip(table["parameter"], table["value"].astype(float)))

        def keyed(prefix: str) -> tuple[tuple[str, float], ...]:
            return tuple((k.split("/", 1)[1], v) for k, v in values.items() if k.startswith(prefix + "/"))
        return cls.fitted(keyed("gemm_efficiency"), values["elementwise_passes"], values["overlap_efficiency"],
                          keyed("attention_efficiency"))

    @classmethod
    def fitted(cls, gemm_efficiency: tuple[tuple[str, float], ...], elementwise_passes: float,
               overlap_efficiency: float, attention_efficiency: tuple[tuple[str, float], ...]) -> "Calibration":
        """A calibration whose defaults, for architectures without runs of their own or of their
        vendor, are the means of the fitted 16-bit GEMM efficiencies and of the fitted attention
        efficiencies."""
        sixteen = [v for _, v in _sixteen_bit(gemm_efficiency)]
        attention = [v for _, v in attention_efficiency]
        return cls(gemm_efficiency=gemm_efficiency, elementwise_passes=elementwise_passes,
                   overlap_efficiency=overlap_efficiency, attention_efficiency=attention_efficiency,
                   default_efficiency=sum(sixteen) / len(sixteen) if sixteen else cls.default_efficiency,
                   default_attention=sum(attention) / len(attention) if attention else cls.default_attention)

    def efficiency(self, architecture: str, dtype: str) -> float:
        """GEMM efficiency for ``architecture``/``dtype``: the fitted value, else the
        architecture's 16-bit value, else the mean of the fitted 16-bit values of the same vendor's
        architectures (:func:`gpus.fitted_value`), else :attr:`default_efficiency` (the mean of them all)."""
        table = dict(self.gemm_efficiency)
        for key in (f"{architecture}/{dtype}", f"{architecture}/bf16", f"{architecture}/fp16"):
            if key in table:
                return table[key]
        return gpus.fitted_value(_sixteen_bit(self.gemm_efficiency), architecture, self.default_efficiency)

    def covers(self, architecture: str) -> bool:
        """Whether runs on ``architecture`` took part in the fit (else it gets the defaults)."""
        return any(key.split("/")[0] == architecture for key, _ in self.gemm_efficiency)

    def attention(self, architecture: str) -> float:
        """Attention kernels' efficiency relative to GEMMs on ``architecture``: the fitted value, else
        the mean of the same vendor's fitted values, else :attr:`default_attention` (the mean of them all)."""
        return gpus.fitted_value(self.attention_efficiency, architecture, self.default_attention)


def _sixteen_bit(gemm_efficiency: tuple[tuple[str, float], ...]) -> list[tuple[str, float]]:
    """(architecture, efficiency) of the fitted 16-bit GEMM efficiencies (``<architecture>/<dtype>`` keys)."""
    return [(k.split("/")[0], v) for k, v in gemm_efficiency if not k.endswith("/fp8")]


@dataclass(frozen=True)
class StepTime:
    """Seconds of one training step by term (expected values), and what the step achieves."""

    compute: float
    recompute: float
    tensor_parallel: float
    pipeline_bubble: float
    pipeline_p2p: float
    data_parallel: float
    optimizer: float
    expert_parallel: float = 0.0
    context_parallel: float = 0.0
    data_parallel_total: float = field(repr=False, default=0.0)
    tokens: float = field(repr=False, default=0.0)
    n_gpus: int = field(repr=False, default=1)
    model_flops: float = field(repr=False, default=0.0)
    peak_flops: float = field(repr=False, default=1.0)

    TERMS = ("compute", "recompute", "tensor_parallel", "pipeline_bubble", "pipeline_p2p", "data_parallel",
             "optimizer", "expert_parallel", "context_parallel")

    @cached_property
    def total(self) -> float:
        return sum(getattr(self, t) for t in self.TERMS)

    def as_dict(self) -> dict[str, float]:
        """The terms in :attr:`TERMS` order, seconds."""
        return {t: getattr(self, t) for t in self.TERMS}

    @property
    def tokens_per_second_per_gpu(self) -> float:
        return self.tokens / self.total / self.n_gpus

    @property
    def mfu(self) -> float:
        """Model FLOP/s utilization: model FLOPs of the step over (time x GPUs x dense peak)."""
        return self.model_flops / (self.total * self.n_gpus * self.peak_flops)

    @property
    def scaling_efficiency(self) -> float:
        """Share of the step the GPUs spend on the model's own computation: compute over total."""
        return self.compute / self.total


def short_step_note(seconds: float) -> str:
    """'' for a step of at least :data:`SHORT_STEP_S` seconds, else the caveat the selector and the
    3D-parallelism panel give a plan of such steps."""
    check_positive("seconds", seconds)
    if seconds >= SHORT_STEP_S:
        return ""
    low, high = SHORT_STEP_MISS
    return f"steps of {seconds * 1000:,.0f} ms, where this model was {low:.0%}-{high:.0%} too fast on published runs"


@cache
def default_calibration() -> Calibration:
    """The parameters fitted on the calibration runs (``data/calibration.csv``, written by
    ``scripts/calibrate.py`` from :func:`calibration.fit`; a test keeps it in step with the data)."""
    table = _data.table("calibration")
    return Calibration.from_table(table[table["kind"] == "parameter"])


def attention_kernel_for(gpu: "GPU | str") -> str:
    """The fastest fused attention kernel that runs on ``gpu`` (a key of :data:`ATTENTION_KERNELS`)."""
    return "flash1" if gpus.get(gpu).architecture in FLASH1_ARCHITECTURES else "flash2"


def max_vpp(n_layers: int, pp: int) -> int:
    """Most model chunks a pipeline stage can hold: the layers of the busiest stage, one per chunk
    (stages may be uneven: Llama 3 405B put 126 layers on 16 stages, one fewer on the first and
    last, and interleaved them; Llama Team 2024, arXiv:2407.21783, Sec. 3.3.2)."""
    check_positive("n_layers", n_layers, integer=True)
    check_positive("pp", pp, integer=True)
    return -(-n_layers // pp)


def grad_bytes_default(dtype: str) -> int:
    """Bytes per reduced gradient element when the layout does not say: Megatron-LM reduces bf16
    gradients in fp32 ('bfloat16 requires gradient accumulation and all-reduce to be performed in
    fp32', megatron/training/arguments.py), fp16 ones in fp16."""
    return 4 if dtype in ("bf16", "fp8", "fp32", "tf32") else 2


# --- the vectorised core --------------------------------------------------------------------

@cache
def _linear_shapes(model: Model) -> tuple[tuple[int, int, float], ...]:
    """(d_in, d_out, count per layer) of the matrices every token passes through but the routed
    experts (attention, dense MLPs, shared experts, router), averaged over the layers when they
    differ (dense-first or interleaved MoE layers)."""
    counts = {(i, o): n for i, o, n in model.matrices(active=True)}
    for shape in model.routed_expert_shapes:
        counts[shape] -= model.n_moe_layers * model.experts_per_token
    return tuple((i, o, n / model.n_layers) for (i, o), n in counts.items() if n)


def _collective(factor, steps, n_bytes, bandwidth, latency):
    """Seconds of a collective moving ``factor`` times ``n_bytes`` per GPU (:func:`comm.alpha_beta`);
    0 where nothing moves."""
    return np.where(factor > 0, comm.alpha_beta(steps, latency, factor * n_bytes, bandwidth), 0.0)


@cache
def _fabric(gpu: GPU, network: Network) -> tuple[float, ...]:
    """The links of a GPU's servers, looked up once: achieved bandwidth (bytes/s per GPU) and hop
    latency of its NVLink (or Infinity Fabric; :func:`comm.gpu_link`) and of its PCIe, the size of
    its NVLink domain, and the NICs' achieved bandwidth per GPU of the server and their latency."""
    fast, slow, nic = comm.gpu_link(gpu, 1), comm.link(f"pcie{gpu.pcie_gen}"), comm.link(network.nic)
    return (fast.bandwidth * fast.achieved_fraction, fast.hop_latency, slow.bandwidth * slow.achieved_fraction,
            slow.hop_latency, gpu.gpu_link_domain if gpu.gpu_link else 1,
            network.nics_per_server * nic.bandwidth * nic.achieved_fraction / network.gpus_per_server, nic.hop_latency)


def _group_link(fabric: tuple[float, ...], members_inside, n):
    """Achieved bandwidth (bytes/s per GPU) and hop latency of a ring over ``n`` GPUs of which
    ``members_inside`` share each server (:func:`_fabric`): inside a server their NVLink when all of
    them fit its domain, else PCIe; across servers also the server's NICs, shared by the rings that
    cross them at once (NCCL runs one ring per NIC; NVIDIA/nccl-tests issue 119)."""
    fast_bw, fast_latency, slow_bw, slow_latency, domain, nic_bw, nic_latency = fabric
    fits = members_inside <= domain
    intra_bw, intra_latency = np.where(fits, fast_bw, slow_bw), np.where(fits, fast_latency, slow_latency)
    inside = n <= members_inside
    return (np.where(inside, intra_bw, np.minimum(intra_bw, nic_bw * members_inside)),
            np.where(inside, intra_latency, np.maximum(intra_latency, nic_latency)))


@lru_cache(maxsize=512)
def rates(gpu: GPU, dtype: str, attention_kernel: str, network: Network, calibration: Calibration) -> dict:
    """What :func:`terms` reads of a GPU, its servers and its dtype, looked up once: the rates of its
    matrix products (``lin_rate``) and attention kernels (``attn_rate``, FLOP/s), its memory
    bandwidth (``bw``), the links of :func:`_fabric`, the GPUs per server, the bytes of a stored
    activation value (``elem``) and of a reduced gradient by default (``grad_bytes``), and whether
    the products run in FP8. Values are numbers; :func:`stacked` turns those of several GPUs into
    arrays, one value per layout, so that one call of :func:`terms` times a whole catalog."""
    attn_dtype = "bf16" if dtype == "fp8" else dtype
    if not gpu.supports(attn_dtype):
        attn_dtype = "fp16"
    kernel = ATTENTION_KERNELS[attention_kernel]
    return {"lin_rate": gpu.peak_flops(dtype) * calibration.efficiency(gpu.architecture, dtype),
            "attn_rate": gpu.peak_flops(attn_dtype) * calibration.efficiency(gpu.architecture, attn_dtype) *
            calibration.attention(gpu.architecture), "flash_speed": kernel, "bw": gpu.memory_bandwidth,
            "fabric": _fabric(gpu, network), "gpus_per_server": network.gpus_per_server,
            "elem": memory.activation_value_bytes(dtype), "grad_bytes": grad_bytes_default(dtype), "fp8": dtype == "fp8"}


def stacked(each: list[dict], sizes: list[int]) -> dict:
    """The :func:`rates` of several GPUs as arrays, ``sizes[i]`` copies of GPU ``i``'s values in a
    row, and the index ``i`` of each row's GPU (``gpu``)."""
    def column(values):
        return np.repeat(np.array(values), sizes)
    return {k: tuple(column([r[k][i] for r in each]) for i in range(len(each[0][k]))) if k == "fabric"
            else column([r[k] for r in each]) for k in each[0]} | {"gpu": column(range(len(each)))}


def _all_to_all(n_bytes, ep, inside, fabric):
    """Seconds of an all-to-all among ``ep`` GPUs, ``inside`` of them per server, each sending
    ``n_bytes`` in equal shares to the others (NCCL runs it as concurrent sends and receives): the
    shares for its own server over its link (NVLink where the group fits the domain, else PCIe), the
    rest over the server's NICs, both at once, after one launch and one hop (:func:`_fabric`)."""
    fast_bw, fast_latency, slow_bw, slow_latency, domain, nic_bw, nic_latency = fabric
    fits = inside <= domain
    peers = np.maximum(ep - 1, 1)
    near = n_bytes * (inside - 1) / peers / np.where(fits, fast_bw, slow_bw)
    far = n_bytes * (ep - inside) / peers / nic_bw
    latency = np.where(ep > inside, np.maximum(np.where(fits, fast_latency, slow_latency), nic_latency),
                       np.where(fits, fast_latency, slow_latency))
    return comm.LAUNCH_LATENCY + latency + np.maximum(near, far)


def _per_distinct(f, r: dict, **columns) -> dict:
    """``f(r, **columns)`` computed once per distinct combination of the GPU (the ``gpu`` index of
    :func:`stacked` rates) and the integer ``columns``, and spread back to every row: the same
    numbers as computing it row by row, for a fraction of the work where many rows share them (the
    layouts of a catalog sweep share a few micro-batch shapes and data-parallel groups each: the
    counts are in ``benchmarks/results.md``). Columns that are numbers are the same for every row. Below
    :data:`DISTINCT_MIN_ROWS` rows, or with float or multi-dimensional columns, ``f`` runs on the
    rows as they are."""
    keys = [v for v in (r.get("gpu"), *columns.values()) if np.ndim(v)]
    if not keys or len({v.shape for v in keys}) > 1 or keys[0].ndim != 1 or len(keys[0]) < DISTINCT_MIN_ROWS or \
            any(v.dtype.kind not in "biu" or v.min() < 0 for v in keys):
        return f(r, **columns)
    key, radix = np.zeros(len(keys[0]), dtype=np.int64), 1
    for v in keys:  # mixed radix: one integer per combination
        radix *= int(v.max()) + 1
        if radix > 2**62:
            return f(r, **columns)
        key = key * (int(v.max()) + 1) + v
    inverse, distinct = pd.factorize(key)  # a hash table: a tenth of np.unique's sort
    first = np.empty(len(distinct), dtype=np.intp)
    first[inverse] = np.arange(len(key))  # a row of each combination (any: they are equal)

    def take(v):
        return v[first] if np.ndim(v) else v
    out = f({k: tuple(map(take, v)) if k == "fabric" else take(v) for k, v in r.items()},
            **{k: take(v) for k, v in columns.items()})
    return {k: v[inverse] if np.ndim(v) else v for k, v in out.items()}


def _micro_batch(model: Model, calibration: Calibration, r: dict, *, tp, b, s, ep, sp, flash, drop, pair, cp) -> dict:
    """One micro-batch's work on one GPU, per layer (forward, training, selective recompute's extra),
    and of the output head, with its tensor-parallel collective, pipeline send, expert all-to-all
    and context-parallel exchange (see :func:`terms`); ``pair`` is how many of two neighbouring
    stages share a server."""
    d, L, V, a = model.d_model, model.n_layers, model.vocab_size, model.n_heads
    bw, lin_rate, attn_rate, elem, servers = r["bw"], r["lin_rate"], r["attn_rate"], r["elem"], r["gpus_per_server"]
    tokens = b * s / cp  # per micro-batch, the GPU's share of the sequence

    # Matrix products of one layer: each no faster than its own traffic, and one whose inner
    # dimension is k at k / (k + GEMM_PROLOGUE_K) of the rate.
    def product(rows, d_in, d_out, matrices=1, inner=None):  # ``rows`` tokens through ``matrices`` copies of one shape
        split_out = d_out / tp  # column- or row-parallel: either way each GPU holds 1/tp of the matrix
        traffic = elem * (rows * d_in + matrices * d_in * split_out + rows * split_out)
        prologue = 1 + GEMM_PROLOGUE_K / (d_in if inner is None else inner)
        return np.maximum(2 * rows * d_in * split_out / lin_rate * prologue, traffic / bw)

    def trained(rows, d_in, d_out, matrices=1):  # forward (inner d_in), input gradient (d_out / tp), weight gradient (the tokens)
        return (product(rows, d_in, d_out, matrices) + product(rows, d_in, d_out, matrices, d_out / tp) +
                product(rows, d_in, d_out, matrices, np.maximum(rows / matrices, 1)))
    gemm = gemm_train = 0.0
    for d_in, d_out, per_layer in _linear_shapes(model):
        gemm = gemm + per_layer * product(tokens, d_in, d_out)
        gemm_train = gemm_train + per_layer * trained(tokens, d_in, d_out)
    # Routed experts (grouped GEMMs): the GPU's tokens, top-k each, spread over the n_experts / ep
    # experts it holds, whose weights it reads whole however few tokens each receives.
    for d_in, d_out in model.routed_expert_shapes:
        routed, share = tokens * model.experts_per_token, model.n_moe_layers / L
        gemm = gemm + share * product(routed, d_in, d_out, model.n_experts / ep)
        gemm_train = gemm_train + share * trained(routed, d_in, d_out, model.n_experts / ep)
    # Score and weighting matmuls, forward, per layer: 2*b*s^2*d causal (4 unfused, the whole
    # matrix), in the share of the s^2/2 causal pairs that sliding windows leave; context
    # parallelism gives each GPU 1/cp of the pairs (load-balanced chunks).
    window = model.attention_pairs(0, s) / (L * s * s / 2)
    causal = np.where(flash, 2.0, 4.0) * tokens * s * model.attention_dim * window / tp
    attn_fwd = causal / (attn_rate * np.where(flash, r["flash_speed"], 1.0))
    attn_bwd = np.where(flash, 2.5, 2.0) * attn_fwd
    # All the layer keeps but the score matrix (selective recompute's share, without FlashAttention).
    stored = memory.layer_activation_bytes(model, b, s / cp, 1, tp, elem, flash_attention=False, sequence_parallel=sp,
                                           dropout=drop)
    # Unfused attention streams the a*s^2 score matrix: the QK^T product writes it, the fused
    # scale-mask-softmax reads and writes it, and the product with V reads it (2+2+2+2 = 8 bytes per
    # score in the forward pass); dropout reads it and writes its mask and output (2+1+2 more).
    scores = np.where(flash, 0.0, (SCORE_BYTES + DROPOUT_SCORE_BYTES * drop) * a * s * s * b / tp)
    elementwise = (calibration.elementwise_passes * stored + scores) / bw  # forward
    if np.any(r["fp8"]):  # each GEMM input is cast to fp8: read 2 bytes, write 1 (qkv, proj, fc1 and fc2 inputs)
        elementwise = elementwise + np.where(r["fp8"], FP8_CAST_BYTES * tokens * (3 * d + model.d_ff) / tp / bw, 0.0)
    # Logits on the last stage: the output projection, and the loss streaming the fp32 logits (Korthikanti Eq. 6).
    # Its three products (inner dimensions d, V / tp and the tokens) each read the weights at least.
    logits = sum(np.maximum(2 * tokens * d * V / tp / lin_rate * (1 + GEMM_PROLOGUE_K / inner), elem * d * V / tp / bw)
                 for inner in (d, V / tp, tokens))
    head = logits + 3 * calibration.elementwise_passes * memory.logit_activation_bytes(model, b, s / cp, tp) / bw

    fabric = r["fabric"]
    tp_bw, tp_latency = _group_link(fabric, np.minimum(tp, servers), tp)
    activation_bytes = tokens * d * 2
    # Pipeline: each tensor-parallel rank sends its 1/tp share to the next stage; without sequence
    # parallelism the receiving ranks all-gather the shares over their own link (scatter/gather).
    p2p_bw, p2p_latency = _group_link(fabric, pair, 2)
    send = comm.alpha_beta(1, p2p_latency, activation_bytes / tp, p2p_bw) + \
        np.where(sp, 0.0, _collective((tp - 1) / tp, tp - 1, activation_bytes, tp_bw, tp_latency))
    # Expert parallelism: every token of the GPU's share to its top-k experts' GPUs (or back).
    a2a = 0.0
    if np.any(ep > 1):  # else (every dense model) none of the expert terms is computed
        dispatch = tokens / tp * model.experts_per_token * d * 2 * (ep - 1) / ep
        a2a = np.where(ep > 1, _all_to_all(dispatch, ep, np.clip(servers // tp, 1, ep), fabric), 0.0)
    # Context parallelism (ring attention, Liu et al. 2023, arXiv:2310.01889; Transformer Engine's
    # "p2p" exchange): cp - 1 times per layer each GPU passes the keys and values it holds to the
    # next GPU of its ring (tp * cp consecutive ranks, Megatron-Core's order), while computing
    # attention on the block it has (1/cp of the layer's attention each); backward passes them
    # again with their gradients, twice the bytes. What a block's attention cannot cover is exposed.
    cp_fwd = cp_bwd = 0.0
    if np.any(cp > 1):
        cp_bw, cp_latency = _group_link(fabric, np.minimum(cp, np.maximum(1, servers // tp)), cp)
        kv = 2 * tokens * model.kv_dim / tp * 2  # keys and values, 16-bit
        cp_fwd = (cp - 1) * np.maximum(comm.alpha_beta(1, cp_latency, kv, cp_bw) - attn_fwd / cp, 0.0)
        cp_bwd = (cp - 1) * np.maximum(comm.alpha_beta(1, cp_latency, 2 * kv, cp_bw) - attn_bwd / cp, 0.0)
    return {"gemm_train": gemm_train, "layer_fwd": gemm + attn_fwd + elementwise,
            "layer_train": gemm_train + attn_fwd + attn_bwd + 3 * elementwise,
            "selective": np.where(flash, 0.0, attn_fwd + scores / bw), "head": head,
            "tp_collective": _collective(2 * (tp - 1) / tp, 2 * (tp - 1), activation_bytes, tp_bw, tp_latency),
            "send": send, "all_to_all": a2a, "cp_fwd": cp_fwd, "cp_bwd": cp_bwd}


def _data_parallel(model: Model, r: dict, *, tp, pp, dp, ep, grad_bytes, cp) -> dict:
    """A step's data-parallel collectives in full (see :func:`terms`): the gradient all-reduce, the
    gradient reduce-scatter and weight all-gather of the distributed optimizer, ZeRO-3's per-layer
    gathers and scatters of one micro-batch, and the local parameters they move. Context-parallel
    ranks hold the same weights: the dense gradients reduce over ``dp * cp`` GPUs (``cp`` is 1
    wherever ``ep`` is above 1)."""
    servers, fabric = r["gpus_per_server"], r["fabric"]
    layers = np.ceil(model.n_layers / pp)
    # The local shard, the routed experts' split over ep too; each expert's replicas reduce over
    # their own dp / ep GPUs, ep apart among the data-parallel ranks, so that fewer of them share a server.
    routed = np.where(ep > 1, model.routed_share, 0.0)
    dense_params, expert_params = model.n_params * (1 - routed) / (tp * pp), model.n_params * routed / (tp * pp * ep)
    local_params = dense_params + expert_params
    gbytes = np.asarray(r["grad_bytes"] if grad_bytes is None else grad_bytes)
    # Data-parallel peers per server: Megatron-LM and DeepSpeed number the ranks tp first (then cp),
    # then dp, then pp, so a server's tensor-parallel groups are data-parallel peers of one stage (or,
    # where dp * cp is smaller, whole data-parallel groups of several stages).
    replicas = dp // ep  # of each expert
    dp = dp * cp
    inside = np.minimum(np.maximum(1, servers // tp), dp)
    dp_bw, dp_latency = _group_link(fabric, inside, dp)
    ring = (dp - 1) / dp
    split_experts = bool(np.any(ep > 1))
    if split_experts:
        expert_bw, expert_latency = _group_link(fabric, np.minimum(np.maximum(1, inside // ep), replicas), replicas)

    def reduced(factor, dense_bytes, expert_bytes):  # ``factor`` ring passes: the dense part over dp, the experts over dp / ep
        dense = _collective(factor * ring, factor * (dp - 1), dense_bytes, dp_bw, dp_latency)
        return dense + np.where(ep > 1, _collective(factor * (replicas - 1) / replicas, factor * (replicas - 1),
                                                    expert_bytes, expert_bw, expert_latency), 0.0) if split_experts else dense
    # ZeRO-3 / FSDP: all-gather the weights forward and backward, reduce-scatter the gradients, per
    # layer (one FSDP unit per block), each paying its own ring latency.
    unit = local_params / layers
    return {"local_params": local_params, "grad_bytes": gbytes,
            "all_reduce": reduced(2, dense_params * gbytes, expert_params * gbytes),
            "scatter": reduced(1, dense_params * gbytes, expert_params * gbytes),
            "gather": reduced(1, dense_params * 2, expert_params * 2),
            "sharded": layers * (_collective(ring, dp - 1, unit * 2, dp_bw, dp_latency) * 2 +
                                 _collective(ring, dp - 1, unit * gbytes, dp_bw, dp_latency))}


def terms(model: Model, gpu: "GPU | dict", *, tp, pp, dp, micro_batch, global_batch, seq_len, zero_stage, recompute,
          vpp=1, ep=1, cp=1, dtype: str = "bf16", sequence_parallel=True, flash_attention=True, dropout=False, overlap=True,
          tp_overlap=False, gather_overlap=True, grad_bytes=None, attention_kernel: str = "flash2",
          network: Network | None = None, calibration: Calibration = Calibration()) -> dict[str, np.ndarray]:
    """Every term of :class:`StepTime` in seconds, for arrays of layouts (numpy broadcasting).

    ``recompute`` is an array of indices into :data:`memory.RECOMPUTE` (0 none, 1 selective,
    2 full); ``network`` defaults to a :class:`Network` of HGX servers. ``gpu`` may also be its
    :func:`rates` (or several GPUs' :func:`stacked` rates, one per layout; ``dtype``,
    ``attention_kernel`` and ``network`` are then read from them). The arguments are not checked:
    use :func:`step_time` for one checked layout. What depends on a few of the layout's values (a
    micro-batch's work, the data-parallel collectives) is computed once per distinct combination
    of them (:func:`_per_distinct`).
    """
    r = gpu if isinstance(gpu, dict) else rates(gpu, dtype, attention_kernel, Network() if network is None else network,
                                                 calibration)
    tp, pp, dp, b, gb, s, zero, rc, v, ep, cp = (np.asarray(x) for x in (tp, pp, dp, micro_batch, global_batch, seq_len,
                                                                         zero_stage, recompute, vpp, ep, cp))
    b, s = b.astype(float), s.astype(float)  # s^2 * b * heads overflows int64 at absurd lengths; exact below 2**53
    sp, flash, drop, ovl, tp_ovl, gather_ovl = (np.asarray(x, dtype=bool) for x in (
        sequence_parallel, flash_attention, dropout, overlap, tp_overlap, gather_overlap))
    L, servers = model.n_layers, r["gpus_per_server"]
    # Megatron's rank order is tp, then cp, then dp, then pp: neighbouring stages sit tp * cp * dp ranks apart.
    mb = _per_distinct(partial(_micro_batch, model, calibration), r, tp=tp, b=b, s=s, ep=ep, sp=sp, flash=flash,
                       drop=drop, pair=np.where(tp * cp * dp < servers, 2, 1), cp=cp)
    layers = np.ceil(L / pp)  # the busiest stage when the layers do not split evenly
    layer_recompute = np.where(rc == 2, mb["layer_fwd"], np.where(rc == 1, mb["selective"], 0.0))

    # Tensor parallel, exposed, per layer and micro-batch: forward, the reduction of attention's and
    # of the MLP's row-parallel outputs (one of their sum in a parallel block); backward, that of
    # each branch's input gradient; under full recompute the forward's again. 4 (6) in a sequential
    # layer, 3 (4) in a parallel block.
    forward = model.reductions_per_layer
    tp_comm = layers * (forward + 2 + np.where(rc == 2, forward, 0)) * mb["tp_collective"]
    tp_mb = np.where(tp_ovl, np.maximum(tp_comm - calibration.overlap_efficiency * layers * mb["gemm_train"], 0.0), tp_comm)
    # Pipeline: sends to the next stage (and gradients back), vpp of each per micro-batch.
    p2p_mb = np.where(pp > 1, 2 * v * mb["send"], 0.0)
    # Expert parallelism: each MoE layer sends every token of the GPU's share to its top-k experts'
    # GPUs and back (dispatch and combine), forward and backward (and forward again under full
    # recompute), exposed; Megatron-Core's rank order puts the expert-parallel group on consecutive
    # data-parallel ranks, tp apart.
    a2a_mb = layers * model.n_moe_layers / L * np.where(rc == 2, 6, 4) * mb["all_to_all"] if np.any(ep > 1) else 0.0
    # Context parallelism: the exposed part of each layer's key-value exchange, forward and backward
    # (and forward again under full recompute).
    cp_mb = layers * (np.where(rc == 2, 2, 1) * mb["cp_fwd"] + mb["cp_bwd"])

    compute_mb = layers * mb["layer_train"] + mb["head"]
    recompute_mb = layers * layer_recompute
    stage_mb = compute_mb + recompute_mb + tp_mb + p2p_mb + a2a_mb + cp_mb
    m = gb // (dp * b)
    bubble = (pp - 1) / v * stage_mb

    # Data parallel: gradients (and, under ZeRO-3, parameters) of the local shard.
    c = _per_distinct(partial(_data_parallel, model), r, tp=tp, pp=pp, dp=dp, ep=ep, grad_bytes=grad_bytes, cp=cp)
    local_params = c["local_params"]
    window = np.where(ovl, calibration.overlap_efficiency, 0.0) * compute_mb  # one micro-batch, forward and backward

    def exposed(seconds, n_bytes, share):  # what ``share`` of the window cannot hide, at least the last bucket
        return np.maximum(seconds - share * window, seconds * np.minimum(1.0, BUCKET_BYTES / n_bytes))

    grads = local_params * c["grad_bytes"]
    # ZeRO-0: all-reduce the gradients behind the last micro-batch's backward. ZeRO-1/2 (distributed
    # optimizer): reduce-scatter them there, and all-gather the 16-bit weights behind the next forward
    # (or, where the framework gathers inside the optimizer step, before it: exposed).
    exposed_sync = np.where(zero == 0, exposed(c["all_reduce"], grads, 2 / 3),
                            exposed(c["scatter"], grads, 2 / 3) +
                            np.where(gather_ovl, exposed(c["gather"], local_params * 2, 1 / 3), c["gather"]))
    gradient_sync = np.where(zero == 0, c["all_reduce"], c["scatter"] + c["gather"])
    # ZeRO-3 / FSDP: per micro-batch, all but the last layer's share hidden behind its compute.
    sharded = c["sharded"]
    exposed_sharded = m * np.maximum(sharded - window, sharded / L)
    dp_total = np.where(zero == 3, m * sharded, gradient_sync)
    dp_exposed = np.where(dp * cp > 1, np.where(zero == 3, exposed_sharded, exposed_sync), 0.0)

    # ZeRO-1/2 shard the dense part over dp * cp and each expert over its dp / ep replicas: 1/(dp * cp) of the model either way
    optimizer_params = np.where(zero >= 1, model.n_params / (tp * pp) / (dp * cp), local_params)
    optimizer = OPTIMIZER_BYTES_PER_PARAM * optimizer_params / (r["bw"] * STREAM_FRACTION)
    return {"compute": m * compute_mb, "recompute": m * recompute_mb, "tensor_parallel": m * tp_mb,
            "pipeline_bubble": bubble, "pipeline_p2p": m * p2p_mb, "data_parallel": dp_exposed,
            "optimizer": optimizer, "expert_parallel": m * a2a_mb, "context_parallel": m * cp_mb,
            "data_parallel_total": dp_total}


def interleaved(t: dict[str, np.ndarray], vpp, pp, micro_batches) -> dict[str, np.ndarray]:
    """:func:`terms` of plain 1F1B layouts (``vpp`` 1) turned into those of the same layouts run in
    ``vpp`` interleaved chunks, without timing them again: interleaving changes only the pipeline
    sends (``vpp`` of them per micro-batch instead of one) and the bubble, ``(pp - 1) / vpp`` stage
    passes of a micro-batch that now includes those sends (Narayanan et al. 2021, Sec. 2.2.2)."""
    v, pp, m = np.asarray(vpp), np.asarray(pp), np.asarray(micro_batches)
    send = t["pipeline_p2p"] / m  # one micro-batch's sends at vpp 1
    stage = np.where(pp > 1, t["pipeline_bubble"] / np.maximum(pp - 1, 1), 0.0)  # one micro-batch's pass
    return t | {"pipeline_p2p": v * t["pipeline_p2p"],
                "pipeline_bubble": (pp - 1) / v * (stage + (v - 1) * send)}


def picked(model: Model, gpu: GPU, layouts: dict[str, np.ndarray], t: dict[str, np.ndarray],
           indices: Iterable[int], *, seq_len: int, dtype: str, **flags) -> list[tuple[Layout, StepTime]]:
    """Layouts ``indices`` of the arrays given to :func:`terms`, each with its step from their result ``t``."""
    per_token, peak = _flops_per_token(model, seq_len=seq_len), gpu.peak_flops(dtype)
    shared = _shared(seq_len, dtype, tuple(sorted(flags.items())))
    indices = np.fromiter(indices, dtype=np.intp)
    columns = {k: v[indices].tolist() for k, v in layouts.items()}
    columns["recompute"] = [RECOMPUTE[r] for r in columns["recompute"]]
    seconds = {k: v[indices].tolist() for k, v in t.items()}
    out = []
    for j in range(len(indices)):  # unchecked: the checks of Layout and StepTime would cost more than the arithmetic
        layout, step = object.__new__(Layout), object.__new__(StepTime)
        layout.__dict__.update(shared, **{k: v[j] for k, v in columns.items()})
        step.__dict__.update({k: v[j] for k, v in seconds.items()}, tokens=float(layout.tokens), n_gpus=layout.n_gpus,
                             model_flops=per_token * layout.tokens, peak_flops=peak)
        out.append((layout, step))
    return out


@lru_cache(maxsize=64)
def _shared(seq_len: int, dtype: str, flags: tuple[tuple[str, bool], ...]) -> dict:
    """What the layouts of :func:`picked` share, checked once (read-only: copied into each layout)."""
    Layout(seq_len=seq_len, dtype=dtype, **dict(flags))  # the grid made the rest valid
    return _LAYOUT_DEFAULTS | dict(flags) | {"seq_len": seq_len, "dtype": dtype}


_flops_per_token = lru_cache(maxsize=64)(flops_per_token)


def step_time(model: "Model | str | float", gpu: "GPU | str", layout: Layout, *, network: Network | None = None,
              calibration: Calibration | None = None) -> StepTime:
    """Seconds of one training step of ``model`` on ``layout.n_gpus`` GPUs, term by term.

    Stages may hold unequal numbers of layers (Llama 3 405B ran 126 layers on 16 stages); the
    busiest one sets the pace. ``network`` defaults to the servers this GPU ships in (:func:`network_for`);
    ``calibration`` to the parameters fitted on the calibration runs (:func:`default_calibration`).
    """
    m, g = as_model(model), gpus.get(gpu)
    if not isinstance(layout, Layout):
        raise ValueError(f"layout must be a steptime.Layout, got {layout!r}")
    check_split(m, layout.tp, 1, layout.dp)
    memory.check_ep(m, layout.ep, layout.dp, layout.zero_stage)
    if layout.vpp > max_vpp(m.n_layers, layout.pp):
        raise ValueError(f"vpp={layout.vpp} leaves a model chunk without a layer: {m.display_name}'s {m.n_layers} "
                         f"layers on {layout.pp} stages allow at most vpp={max_vpp(m.n_layers, layout.pp)}")
    if not g.supports(layout.dtype):
        g.peak_flops(layout.dtype)  # raises the GPU's own message
    network = network_for(g) if network is None else network
    if not isinstance(network, Network):
        raise ValueError(f"network must be a steptime.Network, got {network!r}")
    calibration = default_calibration() if calibration is None else calibration
    values = {f.name: getattr(layout, f.name) for f in fields(Layout)}
    values["recompute"] = RECOMPUTE.index(layout.recompute)
    t = terms(m, g, network=network, calibration=calibration, **values)
    return StepTime(**{k: float(v) for k, v in t.items()}, tokens=float(layout.tokens), n_gpus=layout.n_gpus,
                    model_flops=flops_per_token(m, seq_len=layout.seq_len) * layout.tokens,
                    peak_flops=g.peak_flops(layout.dtype))

