"""GPU memory of training and inference, per GPU, in bytes.

Training: model states after Rajbhandari et al. 2019 (ZeRO, arXiv:1910.02054, Sec. 3.1 and 5):
mixed precision keeps 16-bit weights and gradients (2 + 2 bytes/parameter) plus an fp32 master
copy and Adam's two fp32 moments (K = 12 bytes/parameter); ZeRO stages 1/2/3 shard the
optimizer states, then the gradients, then the weights over the data-parallel group.
Activations after Korthikanti et al. 2022 (arXiv:2205.05198, Sec. 4, Eq. 1-6), counted from each
model's own shapes, with FlashAttention and without dropout unless told otherwise.
Offload after Ren et al. 2021 (ZeRO-Offload, arXiv:2101.06840) and Rajbhandari et al. 2021
(ZeRO-Infinity, arXiv:2104.07857): optimizer states, and under ZeRO-3 the weights, kept in host memory.
Inference: weights by storage format plus the KV cache (Kwon et al. 2023, vLLM, arXiv:2309.06180).
"""

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from math import ceil

import numpy as np
import pandas as pd

from . import _data, comm, formats, gpus, models
from .gpus import GPU
from .models import Model
from .units import MiB, argument, check_bool, check_choice, check_dtype, check_list, check_positive, dtype_bytes

COMPONENTS = ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead")
OPTIMIZERS = ("adamw", "adam", "sgd", "adam8bit", "adafactor")
RECOMPUTE = ("none", "selective", "full")
METHODS = ("full", "lora", "qlora")
ZERO_STAGES = (0, 1, 2, 3)
#: What DeepSpeed keeps in host memory: nothing, the optimizer (``offload_optimizer``), or the
#: optimizer and the weights (``offload_param``, ZeRO-3 only).
OFFLOADS = ("none", "optimizer", "parameters")
#: Full-precision copies of the logits a training step holds at its peak, by how the loss is
#: computed. "fused": Megatron-LM's vocab-parallel cross entropy turns the fp32 logits into the
#: softmax in place and that into its gradient in place (one copy, Korthikanti et al. 2022, Eq. 6).
#: "unfused": PyTorch's ``cross_entropy`` over the logits, as Hugging Face Transformers' causal-LM
#: heads call it (to v4.45): the logits the model returns, the log-softmax cross entropy saves, and
#: two gradients of that size in the backward pass (measured in ``data/memory_probe.csv``, P03).
LOSSES = {"fused": 1, "unfused": 4}


@cache
def _state_dtypes() -> tuple[str, ...]:
    return tuple(d for d in formats.names("training") if d != "fp8")


#: Format lists, read from ``data/number_formats.csv`` on first use (:func:`formats.names`):
#: ``WEIGHT_DTYPES``, the formats inference weights may be stored in (role "weights");
#: ``KV_DTYPES``, those a KV cache may be stored in (role "kv_cache"); ``TRAINING_STATE_DTYPES``,
#: the training formats whose memory this module counts (FP8 training is sized as BF16: its master
#: weights, optimizer states and most activations stay 16- or 32-bit; old name ``TRAIN_DTYPES``);
#: ``DTYPES``, every format with a role.
__getattr__ = formats.lazy_constants(__name__, {
    "DTYPES": formats.names, "WEIGHT_DTYPES": lambda: formats.names("weights"),
    "KV_DTYPES": lambda: formats.names("kv_cache"), "TRAINING_STATE_DTYPES": _state_dtypes},
    renamed={"TRAIN_DTYPES": "TRAINING_STATE_DTYPES"})
#: DeepSpeed's ``stage3_max_live_parameters`` default: parameters resident per GPU before it releases
#: gathered ones (DeepSpeed configuration JSON reference, ZeRO optimizations for FP16 training).
MAX_LIVE_PARAMETERS = 1e9

#: DeepSpeed's ``reduce_bucket_size`` default: gradient elements its contiguous buffer holds on the GPU
#: while they are reduced and, under ZeRO-Offload, copied to the host (DeepSpeed configuration JSON
#: reference, ZeRO optimizations). The buffer is allocated whole, in the gradients' dtype, however few
#: parameters train (``torch.empty(self.reduce_bucket_size, ...)`` in deepspeed/runtime/zero/stage3.py
#: and stage_1_and_2.py); Hugging Face Trainer's ``"auto"`` sets it to hidden_size².
REDUCE_BUCKET_SIZE = 5e8

#: CUDA context and kernels, measured by Hugging Face before any tensor was allocated:
#: "GPU memory occupied: 1343 MB" (MiB, from NVML), Transformers docs, "Model training anatomy",
#: https://huggingface.co/docs/transformers/model_memory_anatomy
RUNTIME_OVERHEAD = 1343 * MiB

#: Share of a GPU's memory to keep free for the allocator's fragmentation and framework buffers,
#: an assumption of this book: a breakdown that fits with less to spare is read as not fitting
#: in practice (the measured fine-tuning runs of ``data/memory_runs.csv`` exceed the model by up
#: to a fifth: the BERT runs that keep their activations, read from NVML with the allocator's
#: cache, and the DeepSpeed offload run).
HEADROOM = 0.05

#: Tokens one prefill forward pass processes at a time when a server chunks long prompts
#: (chunked prefill, Agrawal et al. 2024, Sarathi-Serve, arXiv:2403.02310). An assumption of
#: this book; it only sets the size of the inference activation workspace.
PREFILL_CHUNK_TOKENS = 2048


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU by component, and ``host``: bytes of host (CPU) memory per GPU that offload
    moves there (not part of :attr:`total`)."""

    weights: float = 0.0
    gradients: float = 0.0
    optimizer: float = 0.0
    activations: float = 0.0
    kv_cache: float = 0.0
    overhead: float = 0.0
    host: float = 0.0

    def __post_init__(self) -> None:
        for name in (*COMPONENTS, "host"):
            check_positive(name, getattr(self, name), allow_zero=True)

    @property
    def total(self) -> float:
        return sum(getattr(self, name) for name in COMPONENTS)

    def as_dict(self) -> dict[str, float]:
        """GPU components in :data:`COMPONENTS` order, bytes."""
        return {name: getattr(self, name) for name in COMPONENTS}


def as_model(model: "Model | str | float") -> Model:
    """A Model from a preset name, a Model, or a parameter count (via :func:`models.dense`)."""
    if isinstance(model, Model):
        return model
    if isinstance(model, str):
        return models.get(model)
    if isinstance(model, numbers.Real) and not isinstance(model, bool):  # numpy numbers too
        with argument("model", model):
            return models.dense(float(model))
    raise ValueError(f"model must be a preset name, a Model or a parameter count, got {model!r}")


def _tp_allowed(model: Model, tp: int, replicate_kv: bool) -> bool:
    kv = model.n_kv_heads
    return model.n_heads % tp == 0 and (kv % tp == 0 or (replicate_kv and tp % kv == 0))


def check_split(model: Model, tp: int = 1, pp: int = 1, dp: int = 1, *, replicate_kv: bool = False,
                name: str = "tp") -> None:
    """Raise a ValueError unless the parallel degrees are positive integers that split ``model``:
    tensor parallelism (``tp``, called ``name``) divides the attention heads and the KV heads, or,
    with ``replicate_kv`` (serving, as vLLM does), is a multiple of the KV heads; pipeline
    parallelism (``pp``) divides the layers (Megatron-LM's uniform split)."""
    for arg, value in ((name, tp), ("pp", pp), ("dp", dp)):
        check_positive(arg, value, integer=True)
    if not _tp_allowed(model, tp, replicate_kv):
        allowed = ", ".join(str(t) for t in range(1, model.n_heads + 1) if _tp_allowed(model, t, replicate_kv))
        kv = "divide or be a multiple of" if replicate_kv else "divide"
        raise ValueError(f"{name}={tp} must divide the {model.n_heads} attention heads of {model.display_name} and "
                         f"{kv} its {model.n_kv_heads} KV heads; allowed: {allowed}")
    if model.n_layers % pp:
        problem = "exceeds" if pp > model.n_layers else "must divide"
        allowed = ", ".join(str(p) for p in range(1, model.n_layers + 1) if model.n_layers % p == 0)
        raise ValueError(f"pp={pp} {problem} the {model.n_layers} layers of {model.display_name}; allowed: {allowed}")


def check_ep(model: Model, ep: int, dp: int, zero_stage: int) -> None:
    """Raise a ValueError unless expert parallelism ``ep`` splits ``model``'s routed experts within
    its ``dp`` data-parallel replicas (Megatron-Core's expert-parallel groups) under ZeRO-0 to 2."""
    check_positive("ep", ep, integer=True)
    if ep == 1:
        return
    if not model.is_moe:
        raise ValueError(f"ep={ep} needs a mixture-of-experts model; {model.display_name} is dense: allowed ep=1")
    if model.n_experts % ep or dp % ep:
        allowed = ", ".join(str(e) for e in range(1, dp + 1) if model.n_experts % e == 0 and dp % e == 0)
        raise ValueError(f"ep={ep} must divide the {model.n_experts} experts of {model.display_name} and dp={dp}; "
                         f"allowed: {allowed}")
    if zero_stage == 3:
        raise ValueError(f"ep={ep} does not combine with zero_stage=3 (ZeRO-3 gathers what expert parallelism "
                         f"keeps apart); allowed with ep > 1: zero_stage 0, 1 or 2")


def check_cp(cp: int, seq_len: int, flash_attention: bool, ep: int) -> None:
    """Raise a ValueError unless context parallelism ``cp`` can split sequences of ``seq_len`` tokens:
    into 2 * cp equal chunks (the load-balanced causal split of Megatron-Core and Transformer Engine),
    with fused attention, and without expert parallelism (not modelled together here)."""
    check_positive("cp", cp, integer=True)
    if cp > 1 and (seq_len % (2 * cp) or not flash_attention or ep > 1):
        raise ValueError(f"cp={cp} needs seq_len a multiple of 2 * cp = {2 * cp} (got {seq_len}), "
                         f"flash_attention=True and ep=1 (got {flash_attention} and {ep})")


# --- model states -------------------------------------------------------------------------

def lora_shapes(model: Model, rank: int) -> list[tuple[int, int, int]]:
    """(d_in, d_out, count) of the LoRA adapter matrices (A: d_in x r, B: r x d_out) on every
    linear layer of every transformer block, as QLoRA does (Dettmers et al. 2023, Sec. 4)."""
    model = as_model(model)
    check_positive("rank", rank, integer=True)
    return [s for d_in, d_out, n in model.matrices() for s in ((d_in, rank, n), (rank, d_out, n))]


def _full_shapes(model: Model) -> list[tuple[int, int, int]]:
    return [*model.matrices(), (model.vocab_size, model.d_model, 1 if model.tied_embeddings else 2)]


def _optimizer_state_bytes(shapes: list[tuple[int, int, int]], n: float, optimizer: str, state: float) -> float:
    """Optimizer state bytes for ``n`` trainable parameters with ``state``-byte elements.

    adam/adamw: two moments (Kingma & Ba 2015). sgd: one momentum buffer. adam8bit: two 8-bit
    moments with one fp32 absmax per 2048-element block (Dettmers et al. 2022, arXiv:2110.02861).
    adafactor: factored second moment, one row and one column vector per matrix, no first
    moment (Shazeer & Stern 2018, arXiv:1804.04235).
    """
    if optimizer in ("adam", "adamw"):
        return 2 * state * n
    if optimizer == "sgd":
        return state * n
    if optimizer == "adam8bit":
        return 2 * (1 + 4 / 2048) * n
    return state * sum((r + c) * count for r, c, count in shapes)


@cache
def model_states(model: Model, dtype: str, optimizer: str, master_weights: bool,
                  method: str, lora_rank: int, amp: bool = False) -> tuple[float, float, float]:
    """Unsharded (weights, gradients, optimizer) bytes for the whole model (arguments unchecked).

    ``amp``: PyTorch autocast over fp32 parameters (Hugging Face Trainer's fp16/bf16 flags):
    fp32 weights plus their 16-bit copies cast for the matrix products (6 bytes/parameter), fp32
    gradients and optimizer states (Hugging Face, "Model training anatomy": mixed precision
    "maintains a model in fp32 and one in fp16 in memory", gradients "always kept in fp32").
    """
    low_precision = dtype in ("fp16", "bf16") and not amp
    element = 2 if low_precision else 4
    master = 4 if low_precision and master_weights else 0
    state = 4 if (master or not low_precision) else 2
    if method == "full":
        shapes, trainable = _full_shapes(model), model.n_params
        frozen = 0.0
    else:
        shapes = lora_shapes(model, lora_rank)
        trainable = float(sum(r * c * count for r, c, count in shapes))
        if method == "lora":
            frozen = model.n_params * element
        else:
            frozen = quantized_weight_bytes(model, "nf4")
    weights = frozen + trainable * element
    if amp and dtype in ("fp16", "bf16") and method != "qlora":  # the 16-bit casts autocast caches
        weights += 2 * model.n_params
    gradients = trainable * element
    optimizer_bytes = trainable * master + _optimizer_state_bytes(shapes, trainable, optimizer, state)
    return weights, gradients, optimizer_bytes


def quantized_weight_bytes(model: Model, weight_dtype: str) -> float:
    """Bytes of all weights stored as ``weight_dtype``.

    Formats below 16 bits quantize the linear layers only; token embeddings and the output
    head stay 16-bit, as bitsandbytes, GPTQ and AWQ leave them by default.
    """
    model = as_model(model)
    check_dtype(weight_dtype, formats.names("weights"), "weight_dtype")
    size = dtype_bytes(weight_dtype)
    if size >= 2:
        return model.n_params * size
    embeddings = min(model.embedding_params, model.n_params)
    return (model.n_params - embeddings) * size + embeddings * 2


# --- activations --------------------------------------------------------------------------

def layer_activation_bytes(model: Model, micro_batch_size, seq_len, recompute, tp, element: float, *,
                           flash_attention: bool = True, sequence_parallel: bool = True, dropout: bool = False,
                           amp: bool = False):
    """:func:`activations_per_layer` without checks, on numbers or numpy arrays; ``recompute``
    is an index into :data:`RECOMPUTE` (0 none, 1 selective, 2 full), ``element`` bytes per value."""
    s, b, h, a = seq_len, micro_batch_size, model.d_model, float(model.n_heads)  # floats: s*s*b*a overflows int64
    tokens, e = s * b, element
    # Under autocast the residual stream, the norms' inputs and the softmax output stay fp32, and each
    # product keeps its own 16-bit copy of its input (PyTorch, 'Automatic Mixed Precision package',
    # CUDA ops that autocast to float32: layer_norm, softmax).
    wide = 4 if amp else e
    mlp = model.mlp_width / h  # MLP width per token, in units of h
    # Replicated over the tensor-parallel group unless the sequence is split: the norms' inputs and
    # their outputs, the QKV and first MLP products' inputs (two of each in a sequential layer; a
    # parallel block's one input, normalised once or twice: Model.norms), and one dropout mask
    # after attention and one after the MLP.
    inputs, outputs = model.norms
    replicated = tokens * h * (inputs * wide + outputs * e + 2 * dropout)
    # Split over the group: Q, K and V (K and V at the KV width), the attention output, the MLP's
    # activation input (two halves for SwiGLU) and the second product's input.
    q = model.attention_dim / h
    split = tokens * h * e * (q + 2 * model.kv_dim / h + q + mlp * (2 if model.mlp == "swiglu" else 1) + mlp)
    # The a*s^2 scores: softmax output, plus dropout mask and output (under autocast, the fp32 softmax
    # output and the 16-bit copy the product with V keeps); FlashAttention keeps only the fp32
    # log-sum-exp per head and token (Dao et al. 2022, arXiv:2205.14135, Sec. 3.1).
    scores = a * s * s * b * (wide + dropout + np.logical_or(dropout, amp) * e)
    attention = np.where(flash_attention, 4 * a * tokens, np.where(recompute == 0, scores, 0))
    kept = replicated / np.where(sequence_parallel, tp, 1) + (split + attention) / tp
    return np.where(recompute == 2, wide * tokens * h / tp, kept)


def activations_per_layer(model: Model, micro_batch_size: int, seq_len: int, *, recompute: str = "none",
                          tp: int = 1, dtype: str = "bf16", flash_attention: bool = True,
                          dropout: bool = False, amp: bool = False) -> float:
    """Activation bytes one transformer layer keeps for the backward pass.

    Korthikanti et al. 2022, Eq. 1 (arXiv:2205.05198), counted from the layer's own shapes: for
    GPT (multi-head attention, a 4h GELU MLP, dropout, no FlashAttention) it is their
    s*b*h*(34 + 5*a*s/h) with 16-bit values and 1-byte dropout masks. Grouped-query attention
    shrinks K and V to the KV width, a SwiGLU MLP keeps both halves of its d_ff-wide input, and
    without dropout the masks and the dropped-out copy of the scores go. A parallel block
    (:data:`models.BLOCKS`) keeps its one input and its one or two normalised copies where a
    sequential layer keeps two of each: in 16 bits 4 bytes fewer per token and unit of h with one
    norm (GPT-J, Falcon-7B, Phi-2), 2 with two (Pythia, Falcon-40B). FlashAttention never
    stores the a*s^2 score matrix (it recomputes it in the backward pass, keeping an fp32 log-sum-exp
    per head and token); without it, selective recompute drops the scores instead (Sec. 5). Full
    recompute keeps only the layer input, e*s*b*h (Sec. 4.3). With tp > 1 everything is divided by
    tp (tensor plus sequence parallelism, Eq. 5). ``dropout``: Megatron-LM's GPT defaults and OPT
    train with it; Llama, Mistral, Qwen, Falcon, MPT and BLOOM pre-train without. ``amp``: PyTorch
    autocast to ``dtype`` over fp32 weights, under which the norms' inputs (the residual stream) and
    the softmax output are kept in fp32 and the products keep 16-bit copies of their inputs: for
    GPT with dropout s*b*h*(38 + 7*a*s/h) bytes.
    """
    model = _checked_activations(model, micro_batch_size, seq_len, recompute, dtype, flash_attention, dropout, amp)
    check_split(model, tp)
    return float(layer_activation_bytes(model, micro_batch_size, seq_len, RECOMPUTE.index(recompute), tp,
                                        activation_value_bytes(dtype), flash_attention=flash_attention,
                                        dropout=dropout, amp=amp))


def _checked_activations(model, micro_batch_size, seq_len, recompute, dtype, flash_attention, dropout, amp) -> Model:
    """The model of :func:`activations_per_layer`'s and :func:`activations`' arguments, once they are checked."""
    model = as_model(model)
    check_choice("recompute", recompute, RECOMPUTE)
    check_dtype(dtype, _state_dtypes())
    check_positive("micro_batch_size", micro_batch_size, integer=True)
    check_positive("seq_len", seq_len, integer=True)
    check_bool("flash_attention", flash_attention)
    check_bool("dropout", dropout)
    check_bool("amp", amp)
    return model


def activation_value_bytes(dtype: str) -> int:
    """Bytes of each stored activation value when training in ``dtype``: 4 in fp32 and tf32 (TF32
    is a math mode over fp32 tensors), else 2 (16-bit activations; FP8 training keeps most of them
    in 16 bits)."""
    check_dtype(dtype, formats.names("training"))
    return 4 if dtype in ("fp32", "tf32") else 2


def first_stage_layers(n_layers, pp):
    """Layers on the first pipeline stage: the smaller share when they do not split evenly, as
    Llama 3 405B ran 126 layers on 16 stages with one fewer on the first (arXiv:2407.21783,
    Sec. 3.3.2), since that stage holds the most activations. Numbers or numpy arrays."""
    return n_layers // pp


def activations(model: Model, micro_batch_size: int, seq_len: int, *, recompute: str = "none",
                tp: int = 1, pp: int = 1, dtype: str = "bf16", flash_attention: bool = True,
                dropout: bool = False, amp: bool = False, loss: str = "fused") -> float:
    """Activation bytes per GPU at the peak of a step: the layers of the first pipeline stage
    (:func:`activations_per_layer`), the layer being recomputed, and embeddings, final norm and fp32
    logits (:func:`stage_activation_bytes`, with ``loss`` the copies of the logits, :data:`LOSSES`)."""
    model = _checked_activations(model, micro_batch_size, seq_len, recompute, dtype, flash_attention, dropout, amp)
    check_split(model, tp, pp)
    check_choice("loss", loss, tuple(LOSSES))
    return float(stage_activation_bytes(model, micro_batch_size, seq_len, RECOMPUTE.index(recompute), tp, pp,
                                        activation_value_bytes(dtype), flash_attention=flash_attention,
                                        dropout=dropout, amp=amp, copies=LOSSES[loss]))


def stage_activation_bytes(model: Model, micro_batch_size, seq_len, recompute, tp, pp, element: float, *, vpp=1,
                           flash_attention: bool = True, sequence_parallel: bool = True, dropout: bool = False,
                           amp: bool = False, copies: int = 1):
    """:func:`activations` without checks, on numbers or numpy arrays (``recompute`` an index into
    :data:`RECOMPUTE`, ``element`` bytes per value, ``copies`` of the fp32 logits), for ``vpp``
    interleaved chunks per stage.

    With 1F1B pipeline parallelism the first stage holds pp micro-batches of its layers, i.e. L
    layers' worth when pp divides L (Korthikanti et al. 2022, Sec. 4.2.3; :func:`first_stage_layers`);
    interleaving keeps 1 + (pp - 1)/(pp * vpp) times more (the same section). With recompute, the
    backward pass rebuilds one layer at a time, which then holds what it would without (the O(k)
    segment of Chen et al. 2016, arXiv:1604.06174, Sec. 4.1; ``benchmarks/probe_memory.py``
    measures it). The embedding/logit term is 4*s*b*h*(1 + v/h)/tp (their Eq. 6,
    :func:`logit_activation_bytes`)."""
    def per_layer(rc):
        return layer_activation_bytes(model, micro_batch_size, seq_len, rc, tp, element, flash_attention=flash_attention,
                                      sequence_parallel=sequence_parallel, dropout=dropout, amp=amp)
    kept = per_layer(recompute)
    interleave = np.where(np.asarray(vpp) > 1, 1 + (pp - 1) / (pp * np.asarray(vpp)), 1.0)
    return pp * first_stage_layers(model.n_layers, pp) * kept * interleave + (per_layer(0) - kept) + \
        logit_activation_bytes(model, micro_batch_size, seq_len, tp, copies)


def logit_activation_bytes(model: Model, micro_batch_size, seq_len, tp, copies=1):
    """Embedding output, final norm and ``copies`` fp32 logits: 4*s*b*h*(1 + copies*v/h)/tp
    (Korthikanti et al. 2022, Eq. 6, one copy; :data:`LOSSES`), on numbers or numpy arrays."""
    return 4 * seq_len * micro_batch_size * model.d_model * (1 + copies * model.vocab_size / model.d_model) / tp


def shard(states: tuple[float, float, float], tp, pp, dp, zero_stage, ep=1, routed_share=0.0):
    """(weights, gradients, optimizer) bytes per GPU: the model states split over tp * pp, then
    by ZeRO stage over dp (stage 1 the optimizer, 2 also the gradients, 3 also the weights;
    Rajbhandari et al. 2019, Sec. 5); with expert parallelism the ``routed_share`` of them (the
    routed experts) also over ``ep`` where it is above 1, and by ZeRO stage over the dp / ep replicas
    of each expert (Megatron-Core's expert data-parallel group). On numbers or numpy arrays."""
    weights, gradients, optimizer = states
    split, routed_share = tp * pp, routed_share * (ep > 1)

    def over(stage: int, n):  # n where the ZeRO stage shards this state, else 1
        return 1 + (n - 1) * (zero_stage >= stage)

    def each(state, stage: int):  # the dense part over dp, the routed experts over ep and dp / ep
        return state * (1 - routed_share) / split / over(stage, dp) + state * routed_share / (split * ep) / over(stage, dp // ep)
    return each(weights, 3), each(gradients, 2), each(optimizer, 1)


# --- public API ---------------------------------------------------------------------------

def training(model: "Model | str | float", *, dtype: str = "bf16", optimizer: str = "adamw",
             micro_batch_size: int = 1, seq_len: int = 2048, recompute: str = "none",
             zero_stage: int = 0, dp: int = 1, tp: int = 1, pp: int = 1, ep: int = 1, cp: int = 1, method: str = "full",
             master_weights: bool = True, lora_rank: int = 16, flash_attention: bool = True,
             dropout: bool = False, amp: bool = False, offload: str = "none", loss: str = "fused",
             max_live_parameters: float = MAX_LIVE_PARAMETERS,
             reduce_bucket_size: float = REDUCE_BUCKET_SIZE) -> MemoryBreakdown:
    """Peak training memory per GPU, and the host memory offload needs.

    ``dtype`` is the compute dtype: fp16/bf16 mean mixed precision with 16-bit weights and
    gradients and fp32 master weights (Megatron-LM, DeepSpeed) unless ``master_weights=False``
    (pure 16-bit training, 16-bit optimizer states), or with ``amp=True`` PyTorch autocast over
    fp32 weights (:func:`model_states`).
    ``offload`` (:data:`OFFLOADS`, DeepSpeed ZeRO-Offload): "optimizer" keeps the optimizer
    states (with the fp32 master weights) and an fp32 copy of the gradients in host memory, where
    the optimizer step runs; the GPU keeps its 16-bit weights, and its gradients only on their way
    to the host, through DeepSpeed's bucket of ``reduce_bucket_size`` elements, allocated whole
    even when fewer parameters train (:data:`REDUCE_BUCKET_SIZE`; Ren et al. 2021,
    arXiv:2101.06840, Sec. 4: 2 bytes per parameter left on the GPU, which is how a 13B model
    trains on one 32 GB V100); "parameters" (ZeRO-3 only) keeps the weight shard there too, and the
    GPU holds the weights gathered for the layers at work: up to ``max_live_parameters``
    (DeepSpeed's ``stage3_max_live_parameters``) plus the largest single matrix (a parameter is
    gathered whole), never more than the shard itself (ZeRO-3 without offload is counted at its
    shard, without these transient gathers, as in Rajbhandari et al. 2019, Figure 1).
    ``method="lora"`` freezes the 16-bit base and trains rank-``lora_rank`` adapters;
    ``"qlora"`` stores the frozen base in NF4. Model states are split over tp*pp and, by
    ZeRO stage, over dp; with expert parallelism ``ep`` the routed experts also over ep (:func:`shard`).
    Context parallelism ``cp`` splits each sequence over cp GPUs: each keeps the activations of
    seq_len / cp tokens, and the states shard by ZeRO stage over dp * cp (Megatron-Core's
    data-parallel group with context parallelism; :func:`check_cp`).
    ZeRO stages 2 and 3 do not combine with pipeline parallelism (DeepSpeed:
    "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism", deepspeed/runtime/pipe/engine.py).
    Activations as :func:`activations`: FlashAttention and no dropout unless told otherwise, the
    loss as Megatron-LM fuses it unless ``loss="unfused"`` (Hugging Face Transformers; :data:`LOSSES`).
    """
    m = as_model(model)
    check_dtype(dtype, _state_dtypes())
    check_choice("optimizer", optimizer, OPTIMIZERS)
    check_choice("method", method, METHODS)
    check_choice("zero_stage", zero_stage, ZERO_STAGES)
    check_positive("micro_batch_size", micro_batch_size, integer=True)
    check_positive("seq_len", seq_len, integer=True)
    check_positive("lora_rank", lora_rank, integer=True)
    check_bool("master_weights", master_weights)
    check_bool("amp", amp)
    check_choice("offload", offload, OFFLOADS)
    check_positive("max_live_parameters", max_live_parameters)
    check_positive("reduce_bucket_size", reduce_bucket_size)
    check_split(m, tp, pp, dp)
    check_ep(m, ep, dp, zero_stage)
    check_cp(cp, seq_len, flash_attention, ep)
    if pp > 1 and zero_stage >= 2:
        raise ValueError(f"zero_stage={zero_stage} does not combine with pp={pp}: ZeRO-2 and ZeRO-3 are "
                         f"incompatible with pipeline parallelism; allowed with pp > 1: zero_stage 0 or 1")
    if offload == "parameters" and zero_stage != 3:
        raise ValueError(f"offload='parameters' needs zero_stage=3 (DeepSpeed offloads parameters only under "
                         f"ZeRO-3), got zero_stage={zero_stage}; allowed otherwise: offload 'none' or 'optimizer'")
    half = dtype in ("fp16", "bf16")
    if amp and not half:
        raise ValueError(f"amp=True autocasts to a 16-bit dtype; dtype must be fp16 or bf16, got {dtype!r}")
    states = model_states(m, dtype, optimizer, master_weights, method, lora_rank, amp)
    weights, gradients, optimizer_bytes = shard(states, tp, pp, dp * cp, zero_stage, ep, m.routed_share)
    host = 0.0
    if offload != "none":  # the optimizer step, and an fp32 copy of the gradients, on the host
        element = 2 if half and not amp else 4  # bytes of each gradient on the GPU
        host, optimizer_bytes = optimizer_bytes + gradients * 4 / element, 0.0
        gradients = reduce_bucket_size * element  # streamed there through the whole bucket
    if offload == "parameters":  # the shard on the host; the GPU holds the weights gathered for the layers at work
        largest = max(d_in * d_out for d_in, d_out, _ in _full_shapes(m))
        gathered = (max_live_parameters + largest) * states[0] / m.n_params / (tp * pp)
        host, weights = host + weights, min(weights, gathered)
    return MemoryBreakdown(
        weights=weights, gradients=gradients, optimizer=optimizer_bytes,
        activations=activations(m, micro_batch_size, seq_len // cp, recompute=recompute, tp=tp, pp=pp, dtype=dtype,
                                flash_attention=flash_attention, dropout=dropout, amp=amp, loss=loss),
        overhead=RUNTIME_OVERHEAD, host=host,
    )


def serving_kv_dtype(weight_dtype: str) -> str:
    """The KV-cache format served with ``weight_dtype`` weights: FP8 beside FP8 weights, else BF16."""
    check_dtype(weight_dtype, formats.names("weights"), "weight_dtype")
    return "fp8" if weight_dtype == "fp8" else "bf16"


def kv_cache_per_token(model: "Model | str | float", kv_dtype: str = "bf16") -> float:
    """KV-cache bytes per token over all layers, for a context within any sliding window:
    2 (K and V) * layers * kv_heads * head_dim * bytes, or under MLA (kv_lora_rank +
    qk_rope_head_dim) * layers * bytes (DeepSeek-V2, arXiv:2405.04434, Table 1).

    Grouped-query attention (n_kv_heads < n_heads) shrinks it; OPT-13B in fp16 gives
    800 KiB per token (Kwon et al. 2023, Sec. 3). Beyond a sliding window use :func:`kv_cache_bytes`.
    """
    m = as_model(model)
    check_dtype(kv_dtype, formats.names("kv_cache"), "kv_dtype")
    return m.n_layers * m.kv_values_per_layer * dtype_bytes(kv_dtype)


def kv_cache_bytes(model: "Model | str | float", context_len, kv_dtype: str = "bf16"):
    """KV-cache bytes of one sequence of ``context_len`` tokens: every token on full-attention
    layers, the last ``sliding_window`` on sliding-window layers (Gemma 3, gpt-oss, Mistral 7B;
    Llama 4's chunked layers likewise), :func:`kv_cache_per_token`'s values per layer and token.
    ``context_len`` may be a numpy array (unchecked then)."""
    m = as_model(model)
    check_dtype(kv_dtype, formats.names("kv_cache"), "kv_dtype")
    per_value = m.kv_values_per_layer * dtype_bytes(kv_dtype)
    if np.ndim(context_len) == 0:
        check_positive("context_len", context_len, integer=True)
        return _sequence_kv_bytes(m, context_len, per_value)
    return m.cached_tokens(np.asarray(context_len, dtype=float)) * per_value


def _sequence_kv_bytes(m: Model, context_len: int, per_value: float) -> float:
    """:func:`kv_cache_bytes` of one context length, ``per_value`` bytes per cached value and layer
    (unchecked; in floats: long contexts overflow int64)."""
    return float(m.cached_tokens(float(context_len))) * per_value


def kv_share(model: "Model | str | float", tp: int) -> float:
    """Share of a sequence's KV cache each of ``tp`` tensor-parallel GPUs holds: its KV heads
    (replicated once tp exceeds them, as vLLM does); all of MLA's latent, which every GPU keeps."""
    model = as_model(model)
    check_positive("tp", tp, integer=True)
    return 1.0 if model.is_mla else ceil(model.n_kv_heads / tp) / model.n_kv_heads


def inference_workspace(model: Model, tokens, sequences, tp: int = 1):
    """Bytes per GPU of one layer's 16-bit intermediates at the layer's peak, in its MLP, for a
    forward pass over ``tokens`` tokens: four hidden-size vectors a token that every GPU of a
    tensor-parallel group holds whole (the residual stream, its normalised copy, the row-parallel
    product's partial sum and its all-reduced result: Shoeybi et al. 2019, arXiv:1909.08053,
    Sec. 3) and the MLP's two halves, split over ``tp`` (4h + 2 d_ff / tp per token); plus one
    fp32 row of logits for each of ``sequences``. Numbers or numpy arrays."""
    return tokens * (4 * model.d_model + 2 * model.d_ff / tp) * 2 + sequences * model.vocab_size * 4


def communication_reserve(tp: int, gpu: "GPU | str | None" = None) -> float:
    """Bytes per GPU a serving engine keeps for its tensor-parallel group of ``tp`` GPUs: NCCL's
    buffers, a set per channel and peer (its memory 'linearly tied to the number of channels',
    NVIDIA/nccl issue 986), and TensorRT-LLM's all-reduce workspace, tp times its size
    (``AllReduceBuffers``, cpp/tensorrt_llm/runtime/ipcUtils.cpp): a fixed part and one per other
    GPU. Where the group's link has NVLink SHARP (:func:`comm.gpu_link`: H100, H200 and later
    NVSwitch servers) NCCL's NVLS buffers add to both, the memory frameworks turn NVLS off to save
    (NeMo-Framework-Launcher PR 127, 'set NCCL_NVLS_ENABLE=0 for memory saving'). The four values
    are fitted on TensorRT-LLM 0.9's static batches on A100 and H100 SXM
    (:func:`calibration.fit_communication_reserve`). 0 on one GPU; without ``gpu``, no NVLS."""
    check_positive("tp", tp, integer=True)
    if tp == 1:
        return 0.0
    c = _data.calibrated()
    reserve = c["serving/comm_bytes_fixed"] + (tp - 1) * c["serving/comm_bytes_per_peer"]
    if gpu is not None and comm.gpu_link(gpus.get(gpu), tp).has_nvls:
        reserve += c["serving/nvls_bytes_fixed"] + (tp - 1) * c["serving/nvls_bytes_per_peer"]
    return reserve


def inference(model: "Model | str | float", *, weight_dtype: str = "bf16", kv_dtype: str = "bf16",
              batch_size: int = 1, context_len: int = 4096, tp: int = 1,
              gpu: "GPU | str | None" = None) -> MemoryBreakdown:
    """Serving memory per GPU for ``batch_size`` sequences of ``context_len`` tokens.

    Weights split over tp; KV heads split over tp too (:func:`kv_share`).
    The activation workspace holds one layer's intermediates for a prefill chunk of up to
    :data:`PREFILL_CHUNK_TOKENS` tokens (16-bit, :func:`inference_workspace`) plus one row of fp32
    logits per sequence; the overhead is the CUDA context and, on several GPUs, the buffers for the
    group (:func:`communication_reserve`, larger on a ``gpu`` whose link has NVLS).
    """
    m = as_model(model)
    check_positive("batch_size", batch_size, integer=True)
    check_positive("context_len", context_len, integer=True)
    check_split(m, tp, replicate_kv=True)
    workspace = inference_workspace(m, min(batch_size * context_len, PREFILL_CHUNK_TOKENS), batch_size, tp)
    weights, kv = _served_states(m, weight_dtype, kv_dtype, batch_size, context_len, tp)
    return MemoryBreakdown(weights=weights, kv_cache=kv, activations=workspace,
                           overhead=RUNTIME_OVERHEAD + communication_reserve(tp, gpu))


def _served_states(m: Model, weight_dtype: str, kv_dtype: str, batch_size: int, context_len: int,
                  tp: int) -> tuple[float, float]:
    """The weight and KV-cache bytes per GPU of :func:`inference` (arguments already checked): what
    neither the workspace nor the fitted communication reserve touches, so that the reserve's fit
    (:func:`calibration.fit_communication_reserve`) can count them before any reserve is fitted."""
    return (quantized_weight_bytes(m, weight_dtype) / tp,
            kv_cache_bytes(m, context_len, kv_dtype) * kv_share(m, tp) * batch_size)


def _check_breakdown(breakdown: object) -> MemoryBreakdown:
    if not isinstance(breakdown, MemoryBreakdown):
        raise ValueError(f"breakdown must be a MemoryBreakdown (from training() or inference()), got {breakdown!r}")
    return breakdown


def fits(breakdown: MemoryBreakdown, gpu: GPU) -> bool:
    """Whether ``breakdown`` fits in the memory one ``gpu`` reports (:attr:`gpus.GPU.reported_memory_bytes`)."""
    return _check_breakdown(breakdown).total <= gpus.get(gpu).reported_memory_bytes


#: The most sequences :func:`max_batch_size` looks for by default.
BATCH_LIMIT = 65536


def _largest(fits_at, limit: int) -> int:
    """Largest n in [0, limit] with fits_at(n), for a monotone predicate (doubling, then bisection)."""
    check_positive("limit", limit, integer=True)
    if not fits_at(1):
        return 0
    lo, hi = 1, 2
    while hi <= limit and fits_at(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, limit + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits_at(mid) else (lo, mid)
    return lo


def _inference_total(m: Model, *, weight_dtype: str = "bf16", kv_dtype: str = "bf16",
                     tp: int = 1, gpu: GPU | None = None) -> Callable[[int, int], float]:
    """:func:`inference`'s total as a function of the batch size and the context, what depends on
    neither computed once (arguments already checked; the same arithmetic in the same order)."""
    weights = quantized_weight_bytes(m, weight_dtype) / tp
    per_value, share = m.kv_values_per_layer * dtype_bytes(kv_dtype), kv_share(m, tp)
    overhead = RUNTIME_OVERHEAD + communication_reserve(tp, gpu)

    def total(batch_size: int, context_len: int) -> float:
        workspace = inference_workspace(m, min(batch_size * context_len, PREFILL_CHUNK_TOKENS), batch_size, tp)
        return weights + workspace + _sequence_kv_bytes(m, context_len, per_value) * share * batch_size + overhead
    return total


def max_batch_size(model: "Model | str | float", gpu: GPU, *, context_len: int = 4096, limit: int = BATCH_LIMIT,
                   **kwargs) -> int:
    """Most sequences of ``context_len`` tokens that fit on ``gpu`` for inference (0 if none).

    Memory grows linearly with the batch once the prefill chunk is full (:func:`inference`), so
    beyond that batch the answer is solved for directly and then checked."""
    m, g = as_model(model), gpus.get(gpu)
    check_positive("context_len", context_len, integer=True)
    check_positive("limit", limit, integer=True)
    inference(m, context_len=context_len, gpu=g, **kwargs)  # checks the other arguments
    return _max_batch(_inference_total(m, gpu=g, **kwargs), g.reported_memory_bytes, context_len, limit)


def _max_batch(total: Callable[[int, int], float], capacity: float, context_len: int, limit: int) -> int:
    """:func:`max_batch_size` on an :func:`_inference_total` and a GPU's memory in bytes (arguments
    already checked)."""
    fits_at = lambda b: total(b, context_len) <= capacity  # noqa: E731
    start = min(limit, -(-PREFILL_CHUNK_TOKENS // context_len))
    if start < limit and fits_at(start):
        base = total(start, context_len)
        guess = min(limit, start + int((capacity - base) // (total(start + 1, context_len) - base)))
        while guess > start and not fits_at(guess):  # float rounding at the boundary
            guess -= 1
        while guess < limit and fits_at(guess + 1):
            guess += 1
        return guess
    return _largest(fits_at, limit)


def max_context_len(model: "Model | str | float", gpu: GPU, *, batch_size: int = 1, limit: int = 10_000_000,
                    **kwargs) -> int:
    """Longest context (tokens per sequence) that fits on ``gpu`` for inference (0 if none)."""
    m, g = as_model(model), gpus.get(gpu)
    inference(m, batch_size=batch_size, gpu=g, **kwargs)  # checks the other arguments
    total = _inference_total(m, gpu=g, **kwargs)
    return _largest(lambda s: total(batch_size, s) <= g.reported_memory_bytes, limit)


def _gpu_names(gpu_names: object) -> list:
    """The GPUs asked for, or the whole catalog when none (None or empty)."""
    names = None if gpu_names is None else check_list("gpu_names", gpu_names)
    return [g.name for g in gpus.get_all("gpu_names", names)] if names else gpus.names()


def fits_table(breakdown: MemoryBreakdown, gpu_names: list[str] | None = None) -> pd.DataFrame:
    """Which GPUs of the catalog hold ``breakdown``: memory as the vendor states it, what is
    needed, whether it fits and the headroom, all in decimal GB (usable: what the driver reports,
    :attr:`gpus.GPU.reported_memory_bytes`)."""
    _check_breakdown(breakdown)
    rows = []
    for name in _gpu_names(gpu_names):
        g = gpus.get(name)
        rows.append({"GPU": g.name, "memory (GB, vendor)": g.memory_gb_vendor,
                     "usable (GB)": g.reported_memory_bytes / 1e9, "needed (GB)": breakdown.total / 1e9,
                     "fits": fits(breakdown, g), "headroom (GB)": (g.reported_memory_bytes - breakdown.total) / 1e9})
    return pd.DataFrame(rows)


def longest_context_table(model: "Model | str | float", *, batch_size: int = 1, gpu_names: list[str] | None = None,
                          **kwargs) -> pd.DataFrame:
    """Longest context each GPU holds for ``batch_size`` sequences (0: the weights do not fit)."""
    m = as_model(model)
    rows = [{"GPU": name, "longest context (tokens)": max_context_len(m, gpus.get(name), batch_size=batch_size, **kwargs)}
            for name in _gpu_names(gpu_names)]
    return pd.DataFrame(rows)
