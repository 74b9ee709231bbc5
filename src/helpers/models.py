"""Transformer shapes of well-known models, and a plausible shape for any size.

Parameter counts from the shape follow the standard decoder layout: attention projections
(q and o of d_model x d_model; k and v of d_model x n_kv_heads*head_dim), an MLP of two
matrices (GELU/ReLU) or three (SwiGLU, Shazeer 2020, arXiv:2002.05202), a router per MoE layer,
and token embeddings (doubled when the output head is untied). Biases, norms and learned
position embeddings (< 0.1 % of any preset) are left out.
"""

from dataclasses import dataclass
from functools import cache

import pandas as pd

from . import _data, _lookup
from .units import check_bool, check_choice, check_positive

#: MLP kinds: two matrices (GELU or ReLU) or three (SwiGLU).
MLPS = ("gelu", "relu", "swiglu")


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer. ``n_params`` is the published count; MoE models also
    have ``n_active_params`` (parameters used per token)."""

    name: str
    display_name: str
    n_params: float
    n_active_params: float
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    vocab_size: int
    context_len: int
    mlp: str = "gelu"
    tied_embeddings: bool = True
    n_experts: int = 1
    experts_per_token: int = 1
    source: str = ""

    def __post_init__(self) -> None:
        for field in ("name", "display_name", "source"):
            if not isinstance(getattr(self, field), str):
                raise ValueError(f"{field} must be a string, got {getattr(self, field)!r}")
        check_positive("n_params", self.n_params)
        check_positive("n_active_params", self.n_active_params)
        for field in ("n_layers", "d_model", "n_heads", "n_kv_heads", "d_ff", "vocab_size", "context_len",
                      "n_experts", "experts_per_token"):
            check_positive(field, getattr(self, field), integer=True)
        check_choice("mlp", self.mlp, MLPS)
        check_bool("tied_embeddings", self.tied_embeddings)
        if self.d_model % self.n_heads or self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads={self.n_heads} must divide d_model={self.d_model} and n_kv_heads="
                             f"{self.n_kv_heads} must divide n_heads of {self.name}")
        if self.experts_per_token > self.n_experts:
            raise ValueError(f"experts_per_token={self.experts_per_token} must be at most n_experts={self.n_experts}")
        if self.n_active_params > self.n_params:
            raise ValueError(f"n_active_params={self.n_active_params:g} must be at most n_params={self.n_params:g}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_dim(self) -> int:
        """Width of the K (or V) projection: n_kv_heads * head_dim (smaller than d_model under GQA)."""
        return self.n_kv_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 1

    def linear_shapes(self, *, active: bool = False) -> list[tuple[int, int]]:
        """(d_in, d_out) of every weight matrix of one layer (all experts, or the active ones)."""
        d, f, kv = self.d_model, self.d_ff, self.kv_dim
        attention = [(d, d), (d, kv), (d, kv), (d, d)]
        expert = [(d, f), (d, f), (f, d)] if self.mlp == "swiglu" else [(d, f), (f, d)]
        experts = self.experts_per_token if active else self.n_experts
        router = [(d, self.n_experts)] if self.is_moe else []
        return attention + expert * experts + router

    @property
    def embedding_params(self) -> int:
        """Token embedding plus, when untied, the output head."""
        return self.vocab_size * self.d_model * (1 if self.tied_embeddings else 2)

    def params_from_shape(self, *, active: bool = False) -> int:
        """Parameters implied by the shape (all, or those active per token for MoE)."""
        per_layer = sum(i * o for i, o in self.linear_shapes(active=active))
        return self.n_layers * per_layer + self.embedding_params


def _from_row(row: pd.Series) -> Model:
    return Model(
        name=row["name"],
        display_name=row["display_name"],
        n_params=float(row["n_params"]),
        n_active_params=float(row["n_active_params"]),
        **{k: int(row[k]) for k in ("n_layers", "d_model", "n_heads", "n_kv_heads", "d_ff", "vocab_size",
                                     "context_len", "n_experts", "experts_per_token")},
        mlp=row["mlp"],
        tied_embeddings=bool(row["tied_embeddings"]),
        source=row["source"],
    )


@cache
def _models() -> dict[str, Model]:
    return {row["name"]: _from_row(row) for _, row in _data.table("models").iterrows()}


@cache
def _index() -> dict[str, str]:
    index = {}
    for m in _models().values():
        for alias in (m.name, m.display_name):
            index.setdefault(_lookup.normalize(alias), m.name)
    return index


def get(name: str) -> Model:
    """The preset called ``name`` ("llama-2-70b", "Llama 2 70B", "LLAMA2-70B"), case-insensitive."""
    if isinstance(name, Model):
        return name
    return _models()[_lookup.resolve(name, _index(), "model")]


def names() -> list[str]:
    """Names of every preset, in catalog order."""
    return list(_models())


def catalog() -> pd.DataFrame:
    """The model presets as stored, one row per model, with sources."""
    return _data.table("models").copy()


#: GPT-3's aspect ratio (d_model / n_layers = 128 for the 6.7B, 13B and 175B models,
#: Brown et al. 2020, Table 2.1), head size 128 and d_ff = 4 d_model. d_model is rounded to a
#: multiple of 1024 so that the heads split evenly over 1, 2, 4 or 8 tensor-parallel GPUs.
_ASPECT, _HEAD_DIM, _VOCAB, _WIDTH_STEP = 128, 128, 50257, 1024
MIN_PARAMS, MAX_PARAMS = 1e8, 1e13


def dense(n_params: float, *, name: str | None = None) -> Model:
    """A GPT-3-style dense shape for ``n_params`` parameters (100M to 10T), for sliders.

    d_model follows 12 * n_layers * d_model**2 ~ n_params at GPT-3's aspect ratio, rounded to a
    multiple of 1024; n_layers is then fitted to the count. ``n_params`` is kept exact.
    """
    check_positive("n_params", n_params)
    if name is not None and not isinstance(name, str):
        raise ValueError(f"name must be a string or None, got {name!r}")
    if not MIN_PARAMS <= n_params <= MAX_PARAMS:
        raise ValueError(f"n_params must be between {MIN_PARAMS:.0e} and {MAX_PARAMS:.0e}, got {n_params:.3g}")
    d = max(_WIDTH_STEP, round((_ASPECT * n_params / 12) ** (1 / 3) / _WIDTH_STEP) * _WIDTH_STEP)
    layers = max(1, round((n_params - _VOCAB * d) / (12 * d * d)))
    label = name or f"dense-{n_params / 1e9:g}B"
    return Model(name=label, display_name=label, n_params=float(n_params), n_active_params=float(n_params),
                 n_layers=layers, d_model=d, n_heads=d // _HEAD_DIM, n_kv_heads=d // _HEAD_DIM, d_ff=4 * d,
                 vocab_size=_VOCAB, context_len=2048)
