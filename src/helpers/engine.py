"""Will it start? The memory budget of a vLLM-style serving engine.

The budget follows vLLM's V1 engine as of v0.8 (vllm/v1/worker/gpu_worker.py,
``determine_available_memory``; vllm/v1/core/kv_cache_utils.py; vllm/engine/arg_utils.py):

1. The engine may use ``gpu_memory_utilization`` (default 0.9) of the memory the GPU reports
   (``torch.cuda.mem_get_info``'s total; here nvidia-smi's, :attr:`gpus.GPU.reported_memory_bytes`):
   on data-centre GDDR6 cards, whose ECC keeps 1/16 aside, 45 GiB of an L40S's 48.
2. It loads its share of the weights, then profiles one forward pass over
   ``max_num_batched_tokens`` tokens (the OpenAI server's default: 8,192 on GPUs of 70 GiB or more
   other than the A100, else 2,048; ``EngineArgs.get_batch_defaults``) and takes the peak: weights,
   activations (:func:`memory.inference_workspace`, with logits for ``max_num_seqs`` = 256 or 1,024
   sequences) and memory allocated outside PyTorch (the CUDA context, :data:`memory.RUNTIME_OVERHEAD`;
   the buffers of tensor parallelism are left out: :func:`memory.communication_reserve` is
   TensorRT-LLM's, and vLLM's depend on the link, none to be seen on four A10 over PCIe, whose
   logged cache this budget matches without one, and 1.79 GiB more outside PyTorch on two H100
   than on one, Llama 3 8B in vLLM's own log, vllm-project/vllm pull request 10511).
3. The rest of the budget becomes the KV cache, in blocks of ``block_size`` = 16 tokens, each
   holding its tokens on every layer: v0.8 allocates sliding-window layers like full ones (the
   hybrid allocator of later versions caps them at the window), and MLA's latent is kept whole
   on every GPU of the group (:func:`memory.kv_share`).
4. It refuses to start when one request of ``max_model_len`` tokens (whole blocks) does not fit:
   "To serve at least one request with the model's max seq len (...), (... GiB KV cache is needed,
   which is larger than the available KV cache memory (... GiB)" (``check_enough_kv_cache_memory``).
5. CUDA graphs are captured afterwards, from the memory outside the budget; about half a GiB
   (vLLM's own log reports 'CUDAGraph 0.45 GiB' for a 27B model), an assumption of this book.

Other engines (TensorRT-LLM, SGLang, TGI) budget alike with other defaults; pass them as arguments.
"""

import warnings
from dataclasses import dataclass
from math import ceil

from . import formats, gpus
from .gpus import GPU
from .memory import (RUNTIME_OVERHEAD, as_model, check_split, inference_workspace,
                     kv_cache_per_token, kv_share, quantized_weight_bytes, serving_kv_dtype)
from .models import Model
from .units import GiB, check_dtype, check_positive, check_range, renamed_keywords

ENGINE = "vLLM V1 (v0.8 memory profiling, OpenAI server defaults)"
GPU_MEMORY_UTILIZATION = 0.9
BLOCK_SIZE = 16
CUDA_GRAPH_BYTES = 0.5 * GiB


def default_batch(gpu: "GPU | str") -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM's OpenAI server picks on ``gpu``."""
    gpu = gpus.get(gpu)
    large = gpu.reported_memory_bytes >= 70 * GiB and not gpu.name.startswith("A100")
    return (8192, 1024) if large else (2048, 256)


@dataclass(frozen=True)
class EngineBudget:
    """Bytes per GPU of a serving engine at start-up, and whether it starts: ``slack`` is the reported
    memory outside the budget, ``reserved`` the datasheet's memory the driver does not report (ECC, firmware)."""

    gpu: str
    tp: int
    max_model_len: int
    budget: float
    weights: float
    activations: float
    non_torch: float
    kv_cache: float
    kv_tokens: int
    cuda_graphs: float
    slack: float
    reserved: float

    @property
    def n_gpus(self) -> int:
        """The old name of :attr:`tp`, kept for one release."""
        warnings.warn("EngineBudget.n_gpus is now EngineBudget.tp", DeprecationWarning, stacklevel=2)
        return self.tp

    @property
    def starts(self) -> bool:
        """Whether one request of ``max_model_len`` tokens fits the KV cache (vLLM's start-up check)."""
        return self.kv_tokens >= ceil(self.max_model_len / BLOCK_SIZE) * BLOCK_SIZE and self.kv_tokens > 0

    @property
    def longest_max_model_len(self) -> int:
        """The largest ``max_model_len`` that starts: every block of the cache for one request."""
        return self.kv_tokens

    @property
    def max_concurrency(self) -> float:
        """Requests of ``max_model_len`` tokens the cache holds at once (vLLM logs it at start-up)."""
        return self.kv_tokens / self.max_model_len

    @property
    def graphs_fit(self) -> bool:
        """Whether the CUDA graphs fit in the memory outside the budget."""
        return self.cuda_graphs <= self.slack

    @property
    def message(self) -> str:
        """What the engine would say: its KV cache at start-up, or why it stops."""
        if self.kv_cache <= 0:
            return (f"no memory for the KV cache: weights {self.weights / GiB:.2f} GiB, activations "
                    f"{self.activations / GiB:.2f} GiB and {self.non_torch / GiB:.2f} GiB outside PyTorch exceed "
                    f"the {self.budget / GiB:.2f} GiB budget per GPU")
        need = ceil(self.max_model_len / BLOCK_SIZE) * BLOCK_SIZE * self.kv_cache / max(self.kv_tokens, 1)
        if not self.starts:
            return (f"To serve at least one request with the model's max seq len ({self.max_model_len:,}), "
                    f"{need / GiB:.2f} GiB KV cache is needed, which is larger than the available KV cache memory "
                    f"({self.kv_cache / GiB:.2f} GiB). The largest max_model_len that starts is "
                    f"{self.longest_max_model_len:,}.")
        graphs = "" if self.graphs_fit else (f"; the CUDA graphs ({self.cuda_graphs / GiB:.2f} GiB) may not fit in the "
                                             f"{self.slack / GiB:.2f} GiB left outside the budget")
        return (f"GPU KV cache size: {self.kv_tokens:,} tokens; maximum concurrency for {self.max_model_len:,} tokens "
                f"per request: {self.max_concurrency:.2f}x{graphs}")


@renamed_keywords(n_gpus="tp")
def budget(model: "Model | str | float", gpu: "GPU | str", *, tp: int = 1, max_model_len: int | None = None,
           weight_dtype: str = "bf16", kv_dtype: str | None = None,
           gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION, max_num_batched_tokens: int | None = None,
           max_num_seqs: int | None = None) -> EngineBudget:
    """The engine's memory at start-up on ``tp`` GPUs of tensor parallelism (see the module
    docstring); ``max_model_len`` defaults to the model's context length, ``kv_dtype`` to the
    weights' serving format, the batch limits to vLLM's defaults for the GPU."""
    m, g = as_model(model), gpus.get(gpu)
    check_split(m, tp, replicate_kv=True, name="tp")
    check_dtype(weight_dtype, formats.names("weights"), "weight_dtype")
    kv = kv_dtype or serving_kv_dtype(weight_dtype)
    check_dtype(kv, formats.names("kv_cache"), "kv_dtype")
    length = m.context_len if max_model_len is None else max_model_len
    check_positive("max_model_len", length, integer=True)
    check_range("gpu_memory_utilization", gpu_memory_utilization, 0, 1, low_open=True)
    tokens, seqs = default_batch(g)
    tokens = tokens if max_num_batched_tokens is None else max_num_batched_tokens
    seqs = seqs if max_num_seqs is None else max_num_seqs
    check_positive("max_num_batched_tokens", tokens, integer=True)
    check_positive("max_num_seqs", seqs, integer=True)
    allowed = g.reported_memory_bytes * gpu_memory_utilization
    weights = quantized_weight_bytes(m, weight_dtype) / tp
    activations = inference_workspace(m, tokens, min(seqs, tokens), tp)
    cache = allowed - weights - activations - RUNTIME_OVERHEAD
    per_token = kv_cache_per_token(m, kv) * kv_share(m, tp)
    blocks = max(0, int(cache // (BLOCK_SIZE * per_token)))
    return EngineBudget(gpu=g.name, tp=tp, max_model_len=length, budget=allowed, weights=weights,
                        activations=activations, non_torch=RUNTIME_OVERHEAD, kv_cache=max(cache, 0.0),
                        kv_tokens=blocks * BLOCK_SIZE, cuda_graphs=CUDA_GRAPH_BYTES,
                        slack=g.reported_memory_bytes - allowed, reserved=g.memory_bytes - g.reported_memory_bytes)
