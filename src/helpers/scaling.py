"""Data-parallel training steps: compute, gradient communication, and how much of it overlaps.

Each GPU computes its share of the batch, then the gradients are averaged with an all-reduce.
PyTorch DDP and ZeRO split the gradients into buckets (25 MB by default) and all-reduce each as
soon as the backward pass has produced it, so communication overlaps the backward pass except for
the last bucket (Li et al. 2020, PyTorch Distributed, arXiv:2006.15704, Sec. 3.2). ZeRO stages 1
and 2 move the same volume as plain data parallelism; stage 3 adds an all-gather of the weights
in the forward and the backward pass, 1.5 times the volume (Rajbhandari et al. 2019, Sec. 7).
"""

from dataclasses import dataclass

import pandas as pd

from . import comm, gpus, planner, steptime
from .gpus import GPU
from .memory import ZERO_STAGES, as_model
from .models import Model
from .units import argument, check_choice, check_list, check_positive, check_result, dtype_bytes

#: PyTorch DDP's default gradient bucket (``bucket_cap_mb=25``), the step model's own.
DDP_BUCKET_BYTES = steptime.BUCKET_BYTES
#: GPU counts a :func:`sweep` tries unless given: one GPU to 1,024, doubling.
COUNTS = tuple(2**k for k in range(11))
#: Share of a training step spent in the backward pass (two of its three matrix products).
BACKWARD_SHARE = 2 / 3
ZERO_VOLUME = {0: 1.0, 1: 1.0, 2: 1.0, 3: 1.5}


@dataclass(frozen=True)
class Step:
    """Seconds of one data-parallel step, expected values."""

    compute: float
    communication: float
    exposed: float

    def __post_init__(self) -> None:
        for name in ("compute", "communication", "exposed"):
            check_positive(name, getattr(self, name), allow_zero=True)

    @property
    def total(self) -> float:
        return self.compute + self.exposed

    @property
    def efficiency(self) -> float:
        """Share of the step spent computing: the scaling efficiency against one GPU."""
        return self.compute / self.total


def allreduce_seconds(n_bytes: float, n_gpus: int, gpu_link: "comm.Link | str", *, gpus_per_node: int = 8,
                      network: "comm.Link | str | None" = None, nics_per_node: int = 1) -> float:
    """Expected seconds for an all-reduce over ``n_gpus``: inside one server over ``gpu_link``,
    across servers over ``network`` NICs (:func:`comm.multinode_allreduce_time`)."""
    check_positive("n_gpus", n_gpus, integer=True)
    check_positive("gpus_per_node", gpus_per_node, integer=True)
    check_positive("nics_per_node", nics_per_node, integer=True)
    with argument("gpu_link", gpu_link):
        comm.link(gpu_link)
    if network is not None:
        with argument("network", network):
            comm.link(network)
    if n_gpus <= gpus_per_node:
        return comm.allreduce_time(n_bytes, n_gpus, gpu_link).expected
    if network is None:
        raise ValueError(f"n_gpus={n_gpus} spans several servers of {gpus_per_node} GPUs: give a network link")
    if n_gpus % gpus_per_node:
        raise ValueError(f"n_gpus={n_gpus} must be a multiple of gpus_per_node={gpus_per_node} across servers")
    return comm.multinode_allreduce_time(n_bytes, n_gpus // gpus_per_node, gpus_per_node, gpu_link, network,
                                         nics_per_node=nics_per_node).expected


def data_parallel_step(gradient_bytes: float, compute_seconds: float, n_gpus: int, gpu_link: "comm.Link | str", *,
                       overlap: float = 1.0, zero_stage: int = 0, bucket_bytes: float = DDP_BUCKET_BYTES,
                       **network) -> Step:
    """One step: ``compute_seconds`` of forward and backward per GPU, then gradient communication.

    ``overlap`` is the share of the backward pass communication may hide behind (0: none, as in
    the article's table; 1: full bucketed overlap); the last bucket is always exposed.
    """
    check_positive("gradient_bytes", gradient_bytes)
    check_result(3 * gradient_bytes, gradient_bytes=gradient_bytes)  # ZeRO-3 moves up to 1.5 x 2 x the gradients
    check_positive("compute_seconds", compute_seconds)
    check_positive("n_gpus", n_gpus, integer=True)
    check_positive("bucket_bytes", bucket_bytes)
    check_positive("overlap", overlap, allow_zero=True)
    if not 0 <= overlap <= 1:
        raise ValueError(f"overlap must be between 0 and 1, got {overlap}")
    check_choice("zero_stage", zero_stage, ZERO_STAGES)
    with argument("gpu_link", gpu_link):
        comm.link(gpu_link)
    if n_gpus == 1:
        return Step(compute_seconds, 0.0, 0.0)
    total = ZERO_VOLUME[zero_stage] * allreduce_seconds(gradient_bytes, n_gpus, gpu_link, **network)
    last_bucket = total * min(1.0, bucket_bytes / gradient_bytes)
    hidden = overlap * BACKWARD_SHARE * compute_seconds
    exposed = total if overlap == 0 else max(total - hidden, last_bucket)
    return Step(compute_seconds, total, exposed)


def transformer_step(model: "Model | str | float", gpu: "GPU | str", n_gpus: int, *, tokens_per_gpu: int = 16384,
                     dtype: str | None = None, grad_dtype: str = "bf16", gpus_per_node: int = 8,
                     network: "comm.Link | str | None" = "ib-ndr", nics_per_node: int = 8, overlap: float = 1.0,
                     zero_stage: int = 0) -> Step:
    """A data-parallel step of a transformer: the forward and backward compute of ``tokens_per_gpu``
    tokens on one GPU from the calibrated step model (:func:`steptime.step_time`, 2048-token
    sequences, no recompute, in ``dtype``: bf16 unless given, fp16 on GPUs without it), gradients
    of every parameter in ``grad_dtype``, servers of ``gpus_per_node`` GPUs joined inside by the
    GPU's own link (:func:`comm.gpu_link`) and across by ``nics_per_node`` NICs of kind ``network``."""
    g, m = gpus.get(gpu), as_model(model)
    check_positive("tokens_per_gpu", tokens_per_gpu, integer=True)
    check_positive("n_gpus", n_gpus, integer=True)
    check_positive("gpus_per_node", gpus_per_node, integer=True)
    grad_bytes = dtype_bytes(grad_dtype, "grad_dtype")
    dtype = planner.training_dtype(g, dtype)
    seq_len = min(tokens_per_gpu, 2048)
    layout = steptime.Layout(global_batch=max(1, tokens_per_gpu // seq_len), seq_len=seq_len, zero_stage=0,
                             recompute="none", dtype=dtype)
    seconds = steptime.step_time(m, g, layout).compute * tokens_per_gpu / layout.tokens
    link = comm.gpu_link(g, min(n_gpus, gpus_per_node))
    return data_parallel_step(m.n_params * grad_bytes, seconds, n_gpus, link, overlap=overlap,
                              zero_stage=zero_stage, gpus_per_node=gpus_per_node, network=network,
                              nics_per_node=nics_per_node)


@dataclass(frozen=True)
class Sweep:
    """One :class:`Step` per GPU count, in the order of ``counts``."""

    counts: tuple[int, ...]
    steps: tuple[Step, ...]

    def to_frame(self) -> pd.DataFrame:
        """Columns GPUs, compute (s), communication (s), exposed (s), step (s), efficiency."""
        return pd.DataFrame([{"GPUs": n, "compute (s)": s.compute, "communication (s)": s.communication,
                              "exposed (s)": s.exposed, "step (s)": s.total, "efficiency": s.efficiency}
                             for n, s in zip(self.counts, self.steps)])


def sweep(step, counts: tuple[int, ...] = COUNTS) -> Sweep:
    """``step(n)`` (a :class:`Step`) for each GPU count."""
    if not callable(step):
        raise ValueError(f"step must be a function of the GPU count, got {step!r}")
    counts = check_list("counts", counts)
    for i, n in enumerate(counts):
        check_positive(f"counts[{i}]", n, integer=True)
    return Sweep(tuple(counts), tuple(step(n) for n in counts))


def scaling_table(step, counts: tuple[int, ...] = COUNTS) -> pd.DataFrame:
    """:func:`sweep` as a table (:meth:`Sweep.to_frame`): compute, communication, exposed and total
    seconds, and the efficiency, per GPU count."""
    return sweep(step, counts).to_frame()
