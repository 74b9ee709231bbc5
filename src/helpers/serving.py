"""Decoding and prompt processing as inference engines run them, one engine step at a time.

A step on each GPU of a tensor-parallel group of ``tp`` GPUs takes, in seconds:

- **memory**: every weight the batch uses and every sequence's KV cache, read once, at a fitted
  fraction of peak bandwidth. An MoE layer reads only the experts its tokens were routed to: for
  B tokens each choosing k of E experts, E(1 - (1 - k/E)^B) distinct experts in expectation
  (independent uniform routing). Weight-only formats (int8, int4, nf4) also dequantize every
  weight on its way to the tensor cores, a fitted number of CUDA-core operations per byte at the
  GPU's fp32 rate, in series with the streaming: cheap where a GPU has many CUDA-core FLOP/s per
  byte of bandwidth (an RTX 4090: 82), dear where it has few (an A100: 10).
- **compute**: 2 FLOPs per active parameter per token plus attention (4·L·s·d per generated
  token at context s; 2·L·s²·d per prompt of s tokens, causal), at a fitted fraction of the dense
  peak of the architecture; weight-only formats compute in 16 bits. The products with the weights
  run in the weights' compute format, attention in the KV cache's: FP8 where the cache is FP8 and
  the GPU has FP8 tensor cores (TensorRT-LLM's FP8 context FMHA, which reads an FP8 cache as it is,
  docs/source/advanced/gpt-attention.md; FlashAttention-3's FP8 path, Shah et al. 2024,
  arXiv:2407.08608), else 16 bits (an int8 cache is dequantized to them), and never FP4: no
  engine's attention kernel computes in it, so NVFP4 and MXFP4 weights leave attention at half
  their rate or less, which matters most for long prompts.
- the two overlap only partly: max(compute, memory) + (1 - overlap)·min(compute, memory), with
  ``overlap`` fitted (1 would be the roofline's perfect overlap, Williams et al. 2009).
- **fixed**: a fitted time per layer per step for kernel launches and the ramp-up and tail of
  small kernels (about ten kernels a layer at a few microseconds each; NVIDIA, 'Getting Started
  with CUDA Graphs', 2019).
- **tensor_parallel**: two all-reduces per layer of the step's 16-bit activations (Shoeybi et al.
  2019, arXiv:1909.08053, Sec. 3), one where a parallel block sums attention's and the MLP's
  outputs first (GPT-J, Falcon), latency plus bandwidth at the real message size
  (:func:`comm.allreduce_time`), not hidden behind compute.

Under grouped-query attention a decoding kernel that shares each KV head across its group of
query heads reads the cache once (TensorRT-LLM's XQA kernel, 'another optimization for MQA/GQA in
generation phase', docs/source/gpt_attention.md, from v0.7; FlashInfer; vLLM). Older kernels
read it once per query head, and a fitted share ``kv_rereads`` of those extra reads misses the
cache: the KV traffic is 1 + (g - 1)·kv_rereads times the cache for groups of g query heads.

A decoding kernel that gives each sequence and KV head (each query head, without the grouped
kernel) one thread block reads the cache no faster than those blocks can pull it: at batch 1,
with as many blocks as the model has KV heads (eight for Llama 3 8B), a fraction of an HBM GPU's
bandwidth. TensorRT-LLM's decoding attention
works that way unless its multi-block mode splits the cache, which NVIDIA recommends when batch x
heads is below the multiprocessor count (docs/source/gpt_attention.md, "multi-block mode");
Flash-Decoding (Dao et al. 2023), FlashInfer and vLLM's partitioned paged attention split it too
(``split_kv``, the default). Without the split the cache streams at the lesser of the fitted
bandwidth and ``kv_block_bandwidth`` per block (Little's law: one block's loads in flight over the
memory latency), fitted on how NIM's single-client time per token grows with the prompt.

A batch served with static batching (TensorRT-LLM's gptSessionBenchmark, for instance) takes one
prefill step over all prompts, then one decoding step per further output token at a context one
longer each time; its output throughput is batch x output tokens over that time.

The parameters are fitted on the calibration rows of ``data/inference_runs.csv``
(:func:`calibration.fit_serving`); bands come from leave-one-group-out errors.
"""

from dataclasses import dataclass, fields
from functools import cache

import numpy as np

from . import _data, comm, formats, gpus
from .estimate import Estimate
from .gpus import GPU
from .memory import (as_model, check_split, kv_cache_per_token, kv_share,
                     quantized_weight_bytes)
from .models import Model
from .units import check_bool, check_dtype, check_positive, check_result, renamed_keywords

#: Bytes of each activation element all-reduced between tensor-parallel GPUs.
ACTIVATION_BYTES = 2


@dataclass(frozen=True)
class ServingCalibration:
    """Fitted parameters of the step model (see the module docstring): the fraction of peak
    bandwidth streaming reaches, of dense peak compute reaches per architecture, how much the two
    overlap, the fixed seconds per layer and step, the share of per-query-head KV re-reads that
    miss the cache, the bytes/s one thread block of an unsplit decoding kernel reads the cache at,
    the CUDA-core operations weight-only formats spend dequantizing each byte of weights they
    stream, and the host seconds a serving engine spends on each sequence of each step
    (:mod:`traffic`). The defaults are round placeholders; the fitted values are in
    ``data/calibration.csv``."""

    bandwidth_fraction: float = 0.8
    overlap: float = 0.5
    layer_seconds: float = 50e-6
    kv_rereads: float = 0.0
    kv_block_bandwidth: float = 50e9
    host_seconds: float = 50e-6
    compute_fraction: tuple[tuple[str, float], ...] = ()
    dequant_ops: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        for name, value in (("bandwidth_fraction", self.bandwidth_fraction), ("overlap", self.overlap),
                            ("kv_rereads", self.kv_rereads),
                            *((f"compute_fraction[{k}]", v) for k, v in self.compute_fraction)):
            check_positive(name, value, allow_zero=name in ("overlap", "kv_rereads"))
            if value > 1:
                raise ValueError(f"{name} is a fraction, at most 1, got {value}")
        for key, value in self.dequant_ops:
            check_positive(f"dequant_ops[{key}]", value, allow_zero=True)
        check_positive("layer_seconds", self.layer_seconds, allow_zero=True)
        check_positive("kv_block_bandwidth", self.kv_block_bandwidth)
        check_positive("host_seconds", self.host_seconds, allow_zero=True)

    def compute_for(self, architecture: str) -> float:
        """Fraction of dense peak for ``architecture``; for an architecture no calibration row ran
        on, the mean of its vendor's fitted ones (:func:`gpus.fitted_value`), else of them all."""
        values = dict(self.compute_fraction)
        return gpus.fitted_value(self.compute_fraction, architecture, sum(values.values()) / len(values) if values else 0.6)

    def dequant_for(self, family: str) -> float:
        """CUDA-core operations per byte of weights to dequantize them in the kernel ``family``
        (:func:`kernel_family`; 0 for '', weights the tensor cores read as they are)."""
        return dict(self.dequant_ops).get(family, 0.0) if family else 0.0

    def kernel_for(self, weight_dtype: str, gpu: "GPU | str") -> float:
        """Streaming efficiency of ``weight_dtype``'s kernels on ``gpu`` relative to 16-bit weights:
        1 / (1 + ops per byte x bandwidth streamed / CUDA-core FLOP/s)."""
        g = gpus.get(gpu)
        ops = self.dequant_for(kernel_family(g, weight_dtype))
        return 1 / (1 + ops * g.memory_bandwidth * self.bandwidth_fraction / g.peak_flops("fp32"))

    def to_entries(self) -> list[tuple[str, float]]:
        """(parameter, value) rows as ``data/calibration.csv`` stores them, prefixed ``serving/``."""
        out = [(f"serving/{f.name}", getattr(self, f.name)) for f in fields(self)
               if not isinstance(getattr(self, f.name), tuple)]
        out += [(f"serving/compute_fraction/{k}", v) for k, v in self.compute_fraction]
        return out + [(f"serving/dequant_ops/{k}", v) for k, v in self.dequant_ops]

    @classmethod
    def from_entries(cls, values: dict[str, float]) -> "ServingCalibration":
        """The inverse of :meth:`to_entries`."""
        pairs = {k[len("serving/"):]: v for k, v in values.items() if k.startswith("serving/")}
        grouped = {name: tuple((k.split("/", 1)[1], v) for k, v in pairs.items() if k.startswith(name + "/"))
                   for name in ("compute_fraction", "dequant_ops")}
        scalars = {f.name: pairs[f.name] for f in fields(cls) if f.name in pairs and f.name not in grouped}
        return cls(**scalars, **grouped)


@cache
def default_calibration() -> ServingCalibration:
    """The parameters in ``data/calibration.csv`` (written by ``scripts/calibrate.py``)."""
    return ServingCalibration.from_entries(_data.calibrated())


@dataclass(frozen=True)
class Steps:
    """Per-GPU work of a sequence of engine steps, one array element per step: FLOPs, bytes of
    the weights read, KV-cache bytes, and the seconds of tensor-parallel all-reduces; with the
    GPU's peaks, the model's depth, ``kv_group``, the query heads per KV head when the
    attention kernel reads the cache once per query head (1 when it shares it), and ``kv_blocks``,
    the thread blocks an unsplit decoding kernel reads the cache with (0 where it splits the cache
    over as many as the GPU needs: the prefill, and split-KV decoding). ``attention_flops`` are the
    part of ``flops`` that attention does, at ``attention_peak`` (the KV cache's compute format)
    rather than ``peak_flops`` (the weights'). Steps of several weight formats at once are rows of
    2-D arrays, with ``peak_flops`` and ``attention_peak`` columns and ``kernel`` a tuple, one per
    format."""

    flops: np.ndarray
    attention_flops: np.ndarray
    weight_bytes: np.ndarray
    kv_bytes: np.ndarray
    tensor_parallel: np.ndarray
    peak_flops: float
    attention_peak: float
    vector_flops: float
    bandwidth: float
    n_layers: int
    architecture: str
    kernel: str | tuple[str, ...] = ""
    kv_group: int = 1
    kv_blocks: "float | np.ndarray" = 0.0

    def seconds(self, calibration: ServingCalibration | None = None) -> dict[str, np.ndarray]:
        """Each term of every step (see the module docstring), their ``total``, and the
        ``roofline``: the least time physics allows, the longer of FLOPs at peak and bytes at peak
        bandwidth."""
        cal = calibration or default_calibration()
        at_peak = (self.flops - self.attention_flops) / self.peak_flops + self.attention_flops / self.attention_peak
        compute = at_peak / cal.compute_for(self.architecture)
        stream = self.bandwidth * cal.bandwidth_fraction
        kv = self.kv_bytes * (1 + (self.kv_group - 1) * cal.kv_rereads)
        blocks = np.asarray(self.kv_blocks, dtype=float)
        kv_stream = np.where(blocks > 0, np.minimum(stream, blocks * cal.kv_block_bandwidth), stream)
        ops = cal.dequant_for(self.kernel) if isinstance(self.kernel, str) else \
            np.array([[cal.dequant_for(k)] for k in self.kernel])
        dequant = self.weight_bytes * ops / self.vector_flops
        memory = self.weight_bytes / stream + dequant + kv / kv_stream
        busy = np.maximum(compute, memory) + (1 - cal.overlap) * np.minimum(compute, memory)
        fixed = np.full_like(busy, self.n_layers * cal.layer_seconds)
        roofline = np.maximum(at_peak, (self.weight_bytes + self.kv_bytes) / self.bandwidth)
        return {"compute": compute, "memory": memory, "busy": busy, "fixed": fixed,
                "tensor_parallel": self.tensor_parallel, "total": busy + fixed + self.tensor_parallel,
                "roofline": roofline}


def compute_dtype(gpu: "GPU | str", dtype: str) -> str:
    """The tensor-core format a model stored as ``dtype`` computes in: its own narrower-than-16-bit
    format where the GPU has it (:func:`formats.computes_in`: FP8 on Hopper and later, FP4 for
    NVFP4 and MXFP4 on Blackwell, MXFP4 alone on CDNA 4: :func:`formats.native_on`), else BF16
    (FP16 on GPUs without BF16), the weight-only formats dequantized to 16 bits on the way."""
    check_dtype(dtype, formats.names("weights"))
    return _compute_dtype(gpus.get(gpu), dtype)


@cache
def _compute_dtype(gpu: GPU, dtype: str) -> str:
    native = formats.computes_in(dtype)
    if native and formats.storage_bits()[native] < 16 and gpu.supports(native) and formats.native_on(dtype, gpu.vendor):
        return native
    return "bf16" if gpu.supports("bf16") else "fp16"


def serving_formats(gpu: "GPU | str") -> tuple[str, ...]:
    """The weight formats worth serving in on ``gpu`` (of :data:`memory.WEIGHT_DTYPES`): its 16-bit
    compute format, every narrower format its tensor cores compute in (FP8 on Hopper and later,
    NVFP4 and MXFP4 on Blackwell), and the dequantizing families themselves (int8, int4)."""
    return _serving_formats(gpus.get(gpu))


@cache
def _serving_formats(g: GPU) -> tuple[str, ...]:
    half = _compute_dtype(g, "bf16")
    return tuple(d for d in formats.names("weights") if d == half or formats.dequantized_as(d) == d or
                 (formats.storage_bits()[d] < 16 and _compute_dtype(g, d) == formats.computes_in(d)))


def kernel_family(gpu: "GPU | str", dtype: str) -> str:
    """The dequantizing kernel family (:func:`formats.dequantized_as`: int8, int4) that ``dtype``
    weights run in on ``gpu``; '' where its tensor cores read them as they are."""
    return _kernel_family(gpus.get(gpu), check_dtype(dtype, formats.names("weights")))


@cache
def _kernel_family(gpu: GPU, dtype: str) -> str:
    return "" if _compute_dtype(gpu, dtype) == formats.computes_in(dtype) else formats.dequantized_as(dtype)


def experts_read(model: Model, tokens: int) -> float:
    """Expected distinct experts per MoE layer that ``tokens`` tokens route to, each choosing
    ``experts_per_token`` of ``n_experts`` uniformly: E(1 - (1 - k/E)^tokens); 1 for dense models."""
    e, k = model.n_experts, model.experts_per_token
    return e * (1 - (1 - k / e) ** tokens) if model.is_moe else 1.0


def weight_share_read(model: Model, tokens: int) -> float:
    """Share of the stored weights a step over ``tokens`` tokens reads: all of them for a dense
    model; for an MoE model the shared part and the experts routed to (:func:`experts_read`), with
    each expert's size from the published total and active counts."""
    if not model.is_moe:
        return 1.0
    e, k = model.n_experts, model.experts_per_token
    expert = (model.n_params - model.n_active_params) / (e - k)  # parameters of one expert, all layers
    shared = model.n_params - e * expert
    return (shared + experts_read(model, tokens) * expert) / model.n_params


@renamed_keywords(n_gpus="tp")
def tensor_parallel_time(model: "Model | str | float", gpu: "GPU | str", tp: int, tokens: int) -> Estimate:
    """Seconds of tensor-parallel communication for one forward pass over ``tokens`` tokens: two
    all-reduces of the 16-bit activations per layer (Shoeybi et al. 2019, arXiv:1909.08053, Sec. 3),
    one in a parallel block (:attr:`models.Model.reductions_per_layer`), over the GPUs' NVLink
    domain or else PCIe (:func:`comm.gpu_link`); 0 on one GPU."""
    m = as_model(model)
    check_split(m, tp, replicate_kv=True, name="tp")
    check_positive("tokens", tokens)
    message = check_result(tokens * m.d_model * ACTIVATION_BYTES, tokens=tokens)
    return comm.allreduce_time(message, tp, comm.gpu_link(gpu, tp)) * (m.reductions_per_layer * m.n_layers)


def _checked(model, gpu, tp, weight_dtype, kv_dtype) -> tuple[Model, GPU]:
    m, g = as_model(model), gpus.get(gpu)
    check_dtype(weight_dtype, formats.names("weights"), "weight_dtype")
    check_dtype(kv_dtype, formats.names("kv_cache"), "kv_dtype")
    check_split(m, tp, replicate_kv=True, name="tp")
    return m, g


def _kv_per_layer(m: Model, tp: int, kv_dtype: str) -> float:
    """KV bytes per token and layer on one GPU of the group (:func:`memory.kv_share` of them)."""
    return kv_cache_per_token(m, kv_dtype) / m.n_layers * kv_share(m, tp)


@cache
def _per_gpu(m: Model, g: GPU, tp: int, weight_dtype: str, kv_dtype: str) -> tuple[float, float, float, float]:
    """Weight bytes, KV bytes per token and layer (:func:`_kv_per_layer`) and the peak FLOP/s of one
    GPU of the group in the weights' compute format and in the KV cache's (attention's)."""
    return (quantized_weight_bytes(m, weight_dtype) / tp, _kv_per_layer(m, tp, kv_dtype),
            g.peak_flops(_compute_dtype(g, weight_dtype)), g.peak_flops(_compute_dtype(g, kv_dtype)))


def _tp_seconds(m: Model, g: GPU, tp: int, tokens) -> np.ndarray:
    """:func:`tensor_parallel_time`'s expected seconds for a number or an array of token counts."""
    if tp == 1:
        return np.zeros(np.shape(tokens))
    message = np.asarray(tokens, dtype=float) * m.d_model * ACTIVATION_BYTES
    return m.reductions_per_layer * m.n_layers * comm.allreduce_expected(message, tp, comm.gpu_link(g, tp))


def _steps(m: Model, g: GPU, tp: int, batch_size, weight_dtype: "str | tuple[str, ...]",
           kv_dtype: "str | tuple[str, ...]", flops, attention_flops, weight_share, kv_tokens, tp_tokens,
           kv_group: int = 1, kv_blocks=0.0) -> Steps:
    """:class:`Steps` from per-sequence FLOPs (``attention_flops`` of them attention's) and KV
    tokens; every argument but the model, GPU, group and formats may be an array over steps (batch
    sizes and thread blocks included). With tuples of weight and KV formats, the steps are rows of
    2-D arrays, one row per pair of formats."""
    if isinstance(weight_dtype, str):
        weights, kv_per_layer, peak, attention_peak = _per_gpu(m, g, tp, weight_dtype, kv_dtype)
        kernel = _kernel_family(g, weight_dtype)
    else:
        weights, kv_per_layer, peak, attention_peak = (
            np.array(v)[:, None] for v in zip(*(_per_gpu(m, g, tp, w, k) for w, k in zip(weight_dtype, kv_dtype))))
        kernel = tuple(_kernel_family(g, w) for w in weight_dtype)
    flops = np.atleast_1d(np.asarray(flops, dtype=float) * batch_size / tp)
    return Steps(flops=flops, attention_flops=_spread(np.asarray(attention_flops, dtype=float) * batch_size / tp,
                                                      flops.shape),
                 weight_bytes=_spread(weights * weight_share, flops.shape),
                 kv_bytes=_spread(kv_per_layer * batch_size * m.cached_tokens(np.asarray(kv_tokens, dtype=float)),
                                  flops.shape),
                 tensor_parallel=_spread(_tp_seconds(m, g, tp, tp_tokens), flops.shape),
                 peak_flops=peak, attention_peak=attention_peak, vector_flops=g.peak_flops("fp32"), bandwidth=g.memory_bandwidth,
                 n_layers=m.n_layers, architecture=g.architecture, kernel=kernel, kv_group=kv_group,
                 kv_blocks=_spread(kv_blocks, flops.shape))


def _spread(values, shape: tuple[int, ...]) -> np.ndarray:
    """``values`` (a number or an array) broadcast to ``shape``, as a new array."""
    return np.full(shape, values, dtype=float)


def _prefill_flops(m: Model, before, chunk) -> tuple:
    """FLOPs per sequence of prefilling ``chunk`` tokens after ``before`` already cached, and the
    attention's share of them: 2 per active parameter per token, and causal attention, 4·d per
    query-key pair (2·L·d·(2·chunk·before + chunk²) without sliding windows; d the heads' total
    width, :meth:`Model.attention_pairs`)."""
    attention = 4 * m.attention_dim * m.attention_pairs(before, chunk)
    return 2 * m.n_active_params * chunk + attention, attention


def _decode_flops(m: Model, context) -> tuple:
    """FLOPs per sequence of one decoding step at ``context`` tokens of cache, and the attention's
    share of them: 2 per active parameter, and 4·d per cached token of attention (numbers or numpy
    arrays)."""
    attention = 4 * m.attention_dim * m.cached_tokens(context)
    return 2 * m.n_active_params + attention, attention


def _kv_blocks(m: Model, tp: int, batch_size, grouped_kv_kernel: bool, split_kv: bool):
    """Thread blocks an unsplit decoding kernel reads each GPU's cache with: one per sequence and
    KV head (query head without the grouped kernel) of the GPU, at least one per sequence; 0 when
    the kernel splits the cache (``split_kv``)."""
    heads = m.n_kv_heads if grouped_kv_kernel else m.n_heads
    return 0.0 if split_kv else np.asarray(batch_size, dtype=float) * max(1, heads // tp)


def _decode_steps(m: Model, g: GPU, tp: int, batch_size: int, weight_dtype: str, kv_dtype: str,
                  context: np.ndarray, grouped_kv_kernel: bool, split_kv: bool = True) -> Steps:
    return _steps(m, g, tp, batch_size, weight_dtype, kv_dtype, *_decode_flops(m, context), weight_share_read(m, batch_size),
                  context, batch_size, 1 if grouped_kv_kernel else m.n_heads // m.n_kv_heads,
                  _kv_blocks(m, tp, batch_size, grouped_kv_kernel, split_kv))


def cache_read_seconds(m: Model, g: GPU, tp: int, kv_dtype: str, context: float,
                       calibration: ServingCalibration | None = None) -> tuple[float, float]:
    """Seconds one GPU of the group spends reading one sequence's KV cache of ``context`` tokens:
    at the fitted streaming rate, and through the sequence's own thread blocks of an unsplit
    decoding kernel (one per KV head of the GPU) at ``kv_block_bandwidth`` each (arguments already
    checked; the fast path of :mod:`traffic`)."""
    cal = calibration or default_calibration()
    kv = _kv_per_layer(m, tp, kv_dtype) * float(m.cached_tokens(float(context)))
    blocks = float(_kv_blocks(m, tp, 1, True, False))
    return kv / (g.memory_bandwidth * cal.bandwidth_fraction), kv / (blocks * cal.kv_block_bandwidth)


def batch_seconds(m: Model, g: GPU, tp: int, weight_dtypes: tuple[str, ...], kv_dtypes: tuple[str, ...], context: int,
                  prompt_len: int, batches: np.ndarray,
                  calibration: ServingCalibration | None = None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every term (:meth:`Steps.seconds`) of one decoding step at ``context`` and of one prefill of
    ``prompt_len``-token prompts, for each pair of weight and KV formats (rows of ``batches``) and
    each of its batch sizes (columns) at once (arguments already checked; the fast path of
    :mod:`traffic` and of the selector's sweeps)."""
    b = np.asarray(batches, dtype=float)
    n = b.shape[1]
    decoding = np.arange(2 * n) < n  # the decoding steps, then the prefills: one row of steps per format
    tokens = np.concatenate((b, b * prompt_len), axis=1)  # each step's tokens: one per sequence decoding, every prompt's
    (decode, decode_attention), (prefill, prefill_attention) = _decode_flops(m, float(context)), \
        _prefill_flops(m, 0.0, prompt_len)
    seconds = _steps(m, g, tp, np.concatenate((b, b), axis=1), weight_dtypes, kv_dtypes,
                     np.where(decoding, decode, prefill), np.where(decoding, decode_attention, prefill_attention),
                     weight_share_read(m, tokens), np.where(decoding, float(context), float(prompt_len)),
                     tokens).seconds(calibration)
    return {k: v[:, :n] for k, v in seconds.items()}, {k: v[:, n:] for k, v in seconds.items()}


def batch_totals(m: Model, g: GPU, tp: int, weight_dtypes: tuple[str, ...], kv_dtypes: tuple[str, ...], context: int,
                 prompt_len: int, batches: np.ndarray,
                 calibration: ServingCalibration | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The total seconds of :func:`batch_seconds`: decoding steps, then prefills."""
    decode, prefill = batch_seconds(m, g, tp, weight_dtypes, kv_dtypes, context, prompt_len, batches, calibration)
    return decode["total"], prefill["total"]


@renamed_keywords(n_gpus="tp")
def decode_steps(model: "Model | str | float", gpu: "GPU | str", *, tp: int = 1, batch_size: int = 1,
                 context_len: int = 1024, weight_dtype: str = "bf16", kv_dtype: str = "bf16",
                 grouped_kv_kernel: bool = True, split_kv: bool = True) -> Steps:
    """One decoding step of ``batch_size`` sequences at ``context_len`` tokens of context;
    ``grouped_kv_kernel`` False for attention kernels that read the KV cache once per query head,
    ``split_kv`` False for kernels that read it with one thread block per sequence and head
    (TensorRT-LLM without multi-block mode; see the module docstring)."""
    m, g = _checked(model, gpu, tp, weight_dtype, kv_dtype)
    check_positive("batch_size", batch_size, integer=True)
    check_positive("context_len", context_len, integer=True)
    check_bool("grouped_kv_kernel", grouped_kv_kernel)
    check_bool("split_kv", split_kv)
    return _decode_steps(m, g, tp, batch_size, weight_dtype, kv_dtype, np.array([float(context_len)]),
                         grouped_kv_kernel, split_kv)


@renamed_keywords(n_gpus="tp")
def prefill_steps(model: "Model | str | float", gpu: "GPU | str", prompt_len: int, *, tp: int = 1,
                  batch_size: int = 1, weight_dtype: str = "bf16", kv_dtype: str = "bf16",
                  chunk_tokens: int | None = None) -> Steps:
    """The steps that process ``batch_size`` prompts of ``prompt_len`` tokens: one, or with
    ``chunk_tokens`` one per chunk (chunked prefill, Agrawal et al. 2024, arXiv:2403.02310). Each
    step reads the weights once and the KV cache of the chunks before it, writes its own, and
    attends causally: a chunk of c tokens after k costs 2·L·d·(2ck + c²) attention FLOPs, which
    sum to the whole prompt's 2·L·d·s²."""
    m, g = _checked(model, gpu, tp, weight_dtype, kv_dtype)
    check_positive("prompt_len", prompt_len, integer=True)
    check_positive("batch_size", batch_size, integer=True)
    if chunk_tokens is not None:
        check_positive("chunk_tokens", chunk_tokens, integer=True)
    size = prompt_len if chunk_tokens is None else min(chunk_tokens, prompt_len)
    before = np.arange(0, prompt_len, size, dtype=float)
    chunk = np.minimum(size, prompt_len - before)
    return _steps(m, g, tp, batch_size, weight_dtype, kv_dtype, *_prefill_flops(m, before, chunk),
                  weight_share_read(m, batch_size * size), before + chunk, batch_size * chunk)


def decode_seconds(model: "Model | str | float", gpu: "GPU | str", *, calibration: ServingCalibration | None = None,
                   **kwargs) -> dict[str, float]:
    """Seconds of one decoding step, term by term (arguments of :func:`decode_steps`)."""
    return {k: float(v[0]) for k, v in decode_steps(model, gpu, **kwargs).seconds(calibration).items()}


def prefill_seconds(model: "Model | str | float", gpu: "GPU | str", prompt_len: int, *,
                    calibration: ServingCalibration | None = None, **kwargs) -> dict[str, float]:
    """Seconds to process the prompts (time to first token, unloaded), term by term, summed over
    the chunks when ``chunk_tokens`` is given."""
    return {k: float(v.sum()) for k, v in prefill_steps(model, gpu, prompt_len, **kwargs).seconds(calibration).items()}


@renamed_keywords(n_gpus="tp")
def static_batch_steps(model: "Model | str | float", gpu: "GPU | str", *, tp: int = 1, batch_size: int = 1,
                       prompt_len: int = 128, output_len: int = 128, weight_dtype: str = "bf16",
                       kv_dtype: str = "bf16", grouped_kv_kernel: bool = True,
                       split_kv: bool = True) -> tuple[Steps, Steps]:
    """The steps of one static batch: a prefill of every prompt (which yields the first output
    token), then ``output_len`` - 1 decoding steps at contexts prompt_len + 1, + 2, ... (the
    decoding kernel as in :func:`decode_steps`)."""
    check_positive("output_len", output_len, integer=True)
    check_bool("grouped_kv_kernel", grouped_kv_kernel)
    check_bool("split_kv", split_kv)
    prefill = prefill_steps(model, gpu, prompt_len, tp=tp, batch_size=batch_size,
                            weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    context = prompt_len + np.arange(1.0, output_len)
    return prefill, _decode_steps(as_model(model), gpus.get(gpu), tp, batch_size, weight_dtype, kv_dtype, context,
                                  grouped_kv_kernel, split_kv)


def static_batch_seconds(model: "Model | str | float", gpu: "GPU | str", *,
                         calibration: ServingCalibration | None = None, **kwargs) -> float:
    """Seconds to serve one static batch (arguments of :func:`static_batch_steps`)."""
    return float(sum(s.seconds(calibration)["total"].sum() for s in static_batch_steps(model, gpu, **kwargs)))


@renamed_keywords(n_gpus="tp")
def static_batch_throughput(model: "Model | str | float", gpu: "GPU | str", *, tp: int = 1, batch_size: int = 1,
                            prompt_len: int = 128, output_len: int = 128, **kwargs) -> float:
    """Output tokens per second per GPU of a static batch (:func:`static_batch_seconds`)."""
    seconds = static_batch_seconds(model, gpu, tp=tp, batch_size=batch_size, prompt_len=prompt_len,
                                   output_len=output_len, **kwargs)
    return batch_size * output_len / seconds / tp
