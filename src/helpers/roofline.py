"""Arithmetic intensity and the roofline (Williams, Waterman & Patterson 2009, CACM 52(4)).

A kernel doing F FLOPs while moving B bytes has intensity I = F/B (FLOP/byte). On a GPU with
peak P (FLOP/s) and memory bandwidth W (bytes/s) it can reach at most min(P, I*W); the ridge
point P/W separates memory-bound (I below it) from compute-bound work.
"""

import pandas as pd

from . import gpus
from .compute import decode_step
from .gpus import GPU
from .memory import as_model, quantized_weight_bytes
from .models import Model  # noqa: F401  (type hints)
from .units import TFLOPS, check_dtype, check_list, check_positive, check_result, dtype_bytes


def ridge_point(gpu: "GPU | str", dtype: str = "bf16") -> float:
    """Intensity (FLOP/byte) at which ``gpu`` turns from memory- to compute-bound for ``dtype``."""
    g = gpus.get(gpu)
    return g.peak_flops(dtype) / g.memory_bandwidth


def attainable(gpu: "GPU | str", dtype: str, intensity: float) -> float:
    """Roofline ceiling in FLOP/s at ``intensity`` FLOP/byte."""
    g = gpus.get(gpu)
    check_positive("intensity", intensity)
    return min(g.peak_flops(dtype), intensity * g.memory_bandwidth)


def bound(gpu: "GPU | str", dtype: str, intensity: float) -> str:
    """'memory' or 'compute': which roof limits work of this intensity."""
    check_positive("intensity", intensity)
    return "memory" if intensity < ridge_point(gpu, dtype) else "compute"


def matmul_intensity(m: int, n: int, k: int, element_bytes: float = 2) -> float:
    """FLOP/byte of C[m,n] = A[m,k] @ B[k,n]: 2mnk FLOPs over reading A and B and writing C once."""
    for name, value in (("m", m), ("n", n), ("k", k)):
        check_positive(name, value, integer=True)
    check_positive("element_bytes", element_bytes)
    return check_result(2 * m * n * k / (element_bytes * (m * k + k * n + m * n)), element_bytes=element_bytes)


def training_intensity(model: "Model | str | float", tokens: int, dtype: str = "bf16") -> float:
    """Intensity of a training step's largest GEMM, the MLP up-projection, over ``tokens``
    tokens of a micro-batch (micro-batch size x sequence length)."""
    m = as_model(model)
    check_positive("tokens", tokens, integer=True)
    return matmul_intensity(tokens, m.d_ff, m.d_model, dtype_bytes(dtype))


def prefill_intensity(model: "Model | str | float", prompt_len: int, batch_size: int = 1,
                      dtype: str = "bf16") -> float:
    """Intensity of processing prompts: 2N FLOPs per token (plus causal attention) over reading the
    weights once for the whole batch (activations stay in cache and are not counted)."""
    m = as_model(model)
    check_positive("prompt_len", prompt_len, integer=True)
    check_positive("batch_size", batch_size, integer=True)
    check_dtype(dtype)
    flops = batch_size * (2 * m.n_active_params * prompt_len + 2 * m.n_layers * prompt_len**2 * m.d_model)
    return flops / quantized_weight_bytes(m, dtype)


def decode_intensity(model: "Model | str | float", batch_size: int = 1, context_len: int = 1024,
                     weight_dtype: str = "bf16", kv_dtype: str = "bf16") -> float:
    """Intensity of one decoding step: about the batch size for 16-bit weights, less as the KV
    cache grows."""
    flops, read = decode_step(model, batch_size=batch_size, context_len=context_len,
                              weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    return flops / read


def workloads(model: "Model | str | float", *, seq_len: int = 2048, micro_batch_size: int = 8,
              decode_batches: tuple[int, ...] = (1, 8, 64, 256), dtype: str = "bf16") -> dict[str, float]:
    """Intensity (FLOP/byte) of the workloads the book places on the roofline."""
    m = as_model(model)
    check_positive("seq_len", seq_len, integer=True)
    check_positive("micro_batch_size", micro_batch_size, integer=True)
    check_positive("micro_batch_size * seq_len", micro_batch_size * seq_len, integer=True)
    for i, b in enumerate(check_list("decode_batches", decode_batches)):
        check_positive(f"decode_batches[{i}]", b, integer=True)
    stored = "fp32" if dtype == "tf32" else dtype  # tf32 is a compute mode: weights and cache stay fp32
    points = {f"training GEMM ({micro_batch_size} x {seq_len:,} tokens)":
              training_intensity(m, micro_batch_size * seq_len, dtype),
              f"prefill ({seq_len:,}-token prompt)": prefill_intensity(m, seq_len, 1, stored)}
    for b in decode_batches:
        points[f"decode, batch {b}"] = decode_intensity(m, b, seq_len, stored, stored)
    return points



def table(model: "Model | str | float", gpu: "GPU | str", dtype: str = "bf16", **kwargs) -> pd.DataFrame:
    """The :func:`workloads` on ``gpu``: intensity, attainable TFLOP/s and the bound, one row each."""
    g = gpus.get(gpu)
    rows = [{"workload": label, "FLOP/byte": x, "attainable TFLOP/s": attainable(g, dtype, x) / TFLOPS,
             "bound": bound(g, dtype, x)} for label, x in workloads(model, dtype=dtype, **kwargs).items()]
    return pd.DataFrame(rows)
