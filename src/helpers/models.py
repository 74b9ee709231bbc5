"""Transformer shapes of well-known models, read from their ``config.json``, and a plausible
shape for any size.

Parameter counts from the shape follow the standard decoder layout: attention projections
(q and o of d_model x n_heads*head_dim; k and v of d_model x n_kv_heads*head_dim; or DeepSeek's
multi-head latent attention, MLA: low-rank q and kv projections, Liu et al. 2024,
arXiv:2405.04434, Sec. 2.1), an MLP of two matrices (GELU/ReLU) or three (gated: SwiGLU,
Shazeer 2020, arXiv:2002.05202, and GeGLU), MoE layers with routed experts, shared experts and a
router, dense layers before or between them, and token embeddings (doubled when the output head
is untied). Biases, norms and learned position embeddings (< 0.1 % of any preset) are left out.
"""

import json
import os
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources

import numpy as np
import pandas as pd

from . import _data, _lookup
from .units import check_bool, check_choice, check_positive

#: MLP kinds: two matrices (GELU or ReLU) or three (gated: SwiGLU, GeGLU).
MLPS = ("gelu", "relu", "swiglu")
#: How a layer arranges attention and MLP: one after the other ("sequential", each behind its own
#: norm), or side by side on the same input, x + attn(norm(x)) + mlp(norm(x)), behind one norm
#: ("parallel": GPT-J, Wang and Komatsuzaki 2021; PaLM, Chowdhery et al. 2022, arXiv:2204.02311,
#: Sec. 2; Falcon-7B; Phi-2) or two ("parallel two-norm": GPT-NeoX and Pythia, whose config
#: flag is use_parallel_residual; Falcon-40B and -180B, new_decoder_architecture).
BLOCKS = ("sequential", "parallel", "parallel two-norm")


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer. ``n_params`` is the published count; MoE models also
    have ``n_active_params`` (parameters used per token).

    Optional parts, all off by default: ``head_size`` (when heads are not d_model/n_heads wide),
    MLA (``kv_lora_rank`` > 0: the cache holds kv_lora_rank + qk_rope_head_dim values per layer
    and token, shared by all heads; ``q_lora_rank``, ``v_head_dim``), ``n_sliding_layers`` layers
    that attend to the last ``sliding_window`` tokens only, and for MoE ``moe_d_ff`` (each
    expert's width, default d_ff), ``n_shared_experts`` (always active, moe_d_ff wide) and
    ``n_dense_layers`` layers with one d_ff-wide MLP instead of experts.
    """

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
    head_size: int = 0
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    sliding_window: int = 0
    n_sliding_layers: int = 0
    moe_d_ff: int = 0
    n_shared_experts: int = 0
    n_dense_layers: int = 0
    block: str = "sequential"

    def __post_init__(self) -> None:
        for field in ("name", "display_name", "source"):
            if not isinstance(getattr(self, field), str):
                raise ValueError(f"{field} must be a string, got {getattr(self, field)!r}")
        check_positive("n_params", self.n_params)
        check_positive("n_active_params", self.n_active_params)
        for field in ("n_layers", "d_model", "n_heads", "n_kv_heads", "d_ff", "vocab_size", "context_len",
                      "n_experts", "experts_per_token"):
            check_positive(field, getattr(self, field), integer=True)
        for field in ("head_size", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "v_head_dim",
                      "sliding_window", "n_sliding_layers", "moe_d_ff", "n_shared_experts", "n_dense_layers"):
            check_positive(field, getattr(self, field), integer=True, allow_zero=True)
        check_choice("mlp", self.mlp, MLPS)
        check_choice("block", self.block, BLOCKS)
        check_bool("tied_embeddings", self.tied_embeddings)
        if (not self.head_size and self.d_model % self.n_heads) or self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads={self.n_heads} must divide d_model={self.d_model} (or head_size be given) and "
                             f"n_kv_heads={self.n_kv_heads} must divide n_heads of {self.name}")
        if self.experts_per_token > self.n_experts:
            raise ValueError(f"experts_per_token={self.experts_per_token} must be at most n_experts={self.n_experts}")
        if self.n_active_params > self.n_params:
            raise ValueError(f"n_active_params={self.n_active_params:g} must be at most n_params={self.n_params:g}")
        for field in ("n_sliding_layers", "n_dense_layers"):
            if getattr(self, field) > self.n_layers:
                raise ValueError(f"{field}={getattr(self, field)} must be at most n_layers={self.n_layers}")
        if bool(self.n_sliding_layers) != bool(self.sliding_window):
            raise ValueError(f"sliding_window={self.sliding_window} and n_sliding_layers={self.n_sliding_layers} "
                             f"must both be 0 or both positive")

    @property
    def head_dim(self) -> int:
        """Width of one query (and key) head: ``head_size``, else d_model / n_heads."""
        return self.head_size or self.d_model // self.n_heads

    @property
    def norms(self) -> tuple[int, int]:
        """Per layer, the norms' distinct inputs and their outputs: a sequential layer normalises
        the residual stream before attention and again, with attention added, before the MLP (2, 2);
        a parallel block normalises one input, once or twice (1, 1 or 1, 2)."""
        return {"sequential": (2, 2), "parallel": (1, 1), "parallel two-norm": (1, 2)}[self.block]

    @property
    def reductions_per_layer(self) -> int:
        """All-reduces of a tensor-parallel layer's forward pass: of attention's and of the MLP's
        row-parallel outputs (2), or, in a parallel block, of their sum (1: GPT-NeoX's training
        layer, TensorRT-LLM's GPT-J and Falcon layers, vLLM's Falcon)."""
        return 2 if self.block == "sequential" else 1

    @property
    def kv_dim(self) -> int:
        """Width of the K (or V) projection: n_kv_heads * head_dim (smaller than d_model under GQA)."""
        return self.n_kv_heads * self.head_dim

    @property
    def attention_dim(self) -> int:
        """Width of the query-key products: n_heads * head_dim (d_model for classic attention)."""
        return self.n_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 1

    @property
    def is_mla(self) -> bool:
        """Whether attention is DeepSeek's multi-head latent attention (one shared latent cached)."""
        return self.kv_lora_rank > 0

    @property
    def expert_d_ff(self) -> int:
        return self.moe_d_ff or self.d_ff

    @property
    def n_moe_layers(self) -> int:
        return self.n_layers - self.n_dense_layers if self.is_moe else 0

    @property
    def mlp_width(self) -> float:
        """MLP width one token passes through, averaged over the layers (the active experts' and
        shared experts' widths summed in MoE layers)."""
        moe = self.expert_d_ff * (self.experts_per_token + self.n_shared_experts)
        return (self.n_moe_layers * moe + (self.n_layers - self.n_moe_layers) * self.d_ff) / self.n_layers

    def _attention_shapes(self) -> list[tuple[int, int]]:
        d, h, q = self.d_model, self.n_heads, self.attention_dim
        if not self.is_mla:
            return [(d, q), (d, self.kv_dim), (d, self.kv_dim), (q, d)]
        v = self.v_head_dim or self.head_dim
        query = [(d, self.q_lora_rank), (self.q_lora_rank, q)] if self.q_lora_rank else [(d, q)]
        nope = self.head_dim - self.qk_rope_head_dim
        return query + [(d, self.kv_lora_rank + self.qk_rope_head_dim), (self.kv_lora_rank, h * (nope + v)),
                        (h * v, d)]

    def _mlp_shapes(self, width: int) -> list[tuple[int, int]]:
        d = self.d_model
        return [(d, width), (d, width), (width, d)] if self.mlp == "swiglu" else [(d, width), (width, d)]

    def matrices(self, *, active: bool = False) -> tuple[tuple[int, int, int], ...]:
        """(d_in, d_out, count) of every weight matrix of the transformer layers, over all layers
        (all experts, or those active per token); embeddings and output head not included."""
        counts: dict[tuple[int, int], int] = {}

        def add(shapes, n):
            for shape in shapes:
                counts[shape] = counts.get(shape, 0) + n

        add(self._attention_shapes(), self.n_layers)
        add(self._mlp_shapes(self.d_ff), self.n_layers - self.n_moe_layers)
        if self.n_moe_layers:
            routed = self.experts_per_token if active else self.n_experts
            add(self._mlp_shapes(self.expert_d_ff), self.n_moe_layers * (routed + self.n_shared_experts))
            add([(self.d_model, self.n_experts)], self.n_moe_layers)
        return tuple((i, o, n) for (i, o), n in counts.items())

    @property
    def routed_expert_shapes(self) -> tuple[tuple[int, int], ...]:
        """(d_in, d_out) of one routed expert's matrices (none for a dense model)."""
        return tuple(self._mlp_shapes(self.expert_d_ff)) if self.is_moe else ()

    @property
    def expert_params(self) -> int:
        """Parameters of one routed expert in one layer (0 for a dense model)."""
        return sum(i * o for i, o in self.routed_expert_shapes)

    @property
    def routed_share(self) -> float:
        """Share of the parameters in routed experts (from the shape; 0 for dense models): what
        expert parallelism shards."""
        if not self.is_moe:
            return 0.0
        return self.n_moe_layers * self.n_experts * self.expert_params / self.params_from_shape()

    @property
    def embedding_params(self) -> int:
        """Token embedding plus, when untied, the output head."""
        return self.vocab_size * self.d_model * (1 if self.tied_embeddings else 2)

    def params_from_shape(self, *, active: bool = False) -> int:
        """Parameters implied by the shape (all, or those active per token for MoE)."""
        return sum(i * o * n for i, o, n in self.matrices(active=active)) + self.embedding_params

    @property
    def kv_values_per_layer(self) -> int:
        """Values one token keeps in one layer's cache: K and V of every KV head, or MLA's latent
        and rotary key (Liu et al. 2024, arXiv:2405.04434, Table 1: (d_c + d_h^R) per layer)."""
        return self.kv_lora_rank + self.qk_rope_head_dim if self.is_mla else 2 * self.kv_dim

    def cached_tokens(self, context):
        """Token-layers of cache one sequence of ``context`` tokens holds, summed over the layers:
        every token on full-attention layers, at most ``sliding_window`` on sliding ones (numbers
        or numpy arrays)."""
        full = self.n_layers - self.n_sliding_layers
        return full * context + self.n_sliding_layers * np.minimum(context, self.sliding_window)

    def attention_pairs(self, before, chunk):
        """Query-key pairs, summed over the layers, when ``chunk`` tokens follow ``before`` cached
        ones under a causal mask: ((before+chunk)^2 - before^2)/2 per full layer; on a sliding
        layer each query sees at most ``sliding_window`` keys (numbers or numpy arrays)."""
        w = self.sliding_window

        def seen(n):  # pairs among the first n tokens of a sliding layer
            return np.where(n <= w, n * n / 2, w * w / 2 + (n - w) * w)

        start = np.asarray(before, dtype=float)
        end = start + chunk
        full = (self.n_layers - self.n_sliding_layers) * (end * end - start * start) / 2
        return full + (self.n_sliding_layers * (seen(end) - seen(start)) if w else 0.0)


# --- Hugging Face config.json ----------------------------------------------------------------

#: model_type values :func:`from_config` reads (a multimodal wrapper's ``text_config`` is read for
#: Llama 4 and Gemma 3), and the fields every one of them needs.
ARCHITECTURES = ("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3", "mixtral", "qwen3_moe",
                 "deepseek_v2", "deepseek_v3", "kimi_k2", "gpt_oss", "llama4")
REQUIRED_FIELDS = ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                   "intermediate_size", "vocab_size", "max_position_embeddings")
_GEMMA = ("gemma2", "gemma3")
#: Defaults of transformers' config classes for fields a published config.json leaves out
#: (Gemma3TextConfig: google/gemma-3-27b-it's text_config gives neither vocabulary nor context).
_DEFAULTS = {"gemma3": dict(vocab_size=262208, max_position_embeddings=131072, sliding_window_pattern=6,
                            tie_word_embeddings=True)}


def _read_config(config: "dict | str | os.PathLike") -> dict:
    if isinstance(config, dict):
        return config
    if isinstance(config, str) and config.lstrip().startswith("{"):
        try:
            return json.loads(config)
        except json.JSONDecodeError as e:
            raise ValueError(f"config is not valid JSON: {e}") from None
    if isinstance(config, (str, os.PathLike)):
        try:
            with open(config, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"config {str(config)!r} could not be read as a config.json: {e}") from None
    raise ValueError(f"config must be a dict, a JSON string or a path to config.json, got {config!r}")


def _field(cfg: dict, key: str):
    """``cfg[key]``; a ValueError naming the key and the fields a config needs when it is absent."""
    value = cfg.get(key)
    if value is None:
        raise ValueError(f"config has no {key!r}; a {cfg.get('model_type', '?')} config.json needs "
                         f"{', '.join(REQUIRED_FIELDS)}")
    return value


def _sliding(cfg: dict, family: str, n_layers: int) -> tuple[int, int]:
    """(window, layers that use it): HF's ``layer_types`` where given, else each family's rule."""
    types = cfg.get("layer_types")
    if types:
        local = sum(t in ("sliding_attention", "chunked_attention") for t in types)
        window = cfg.get("sliding_window") or cfg.get("attention_chunk_size") or 0
        return (window, local) if window and local else (0, 0)
    if family == "llama4":  # chunked attention on the RoPE layers: no_rope_layers[i] == 1 (HF's Llama4TextConfig)
        rope = cfg.get("no_rope_layers") or [int((i + 1) % 4 != 0) for i in range(n_layers)]
        window = cfg.get("attention_chunk_size") or 0
        return (window, sum(rope)) if window else (0, 0)
    window = cfg.get("sliding_window") or 0
    if not window:
        return 0, 0
    if family == "gemma2":  # even layers slide (HF's Gemma2DecoderLayer)
        return window, (n_layers + 1) // 2
    if family == "gemma3":  # all but every sliding_window_pattern-th layer
        pattern = cfg.get("sliding_window_pattern", 6)
        return window, n_layers - n_layers // pattern
    if family.startswith("qwen"):  # only with use_sliding_window, from max_window_layers on
        if not cfg.get("use_sliding_window"):
            return 0, 0
        return window, n_layers - min(cfg.get("max_window_layers", 0), n_layers)
    if family in ("mistral", "phi3"):
        return window, n_layers
    return 0, 0


def _moe(cfg: dict, family: str, n_layers: int) -> dict:
    """Experts, their width, shared experts and dense layers of an MoE config (nothing for dense)."""
    experts = cfg.get("num_local_experts") or cfg.get("num_experts") or cfg.get("n_routed_experts") or 0
    if experts <= 1:
        return {}
    if family.startswith("deepseek") or family == "kimi_k2":
        first, freq = cfg.get("first_k_dense_replace", 0), cfg.get("moe_layer_freq", 1)
        dense = sum(1 for i in range(n_layers) if i < first or i % freq)
    elif family == "qwen3_moe":
        step, only = cfg.get("decoder_sparse_step", 1), set(cfg.get("mlp_only_layers") or [])
        dense = sum(1 for i in range(n_layers) if i in only or (i + 1) % step)
    elif family == "llama4":
        moe_layers = cfg.get("moe_layers")
        step = cfg.get("interleave_moe_layer_step", 1)
        dense = n_layers - (len(moe_layers) if moe_layers is not None else n_layers // step)
    else:
        dense = 0
    shared = cfg.get("n_shared_experts") or (1 if family == "llama4" else 0)
    return dict(n_experts=experts, experts_per_token=_field(cfg, "num_experts_per_tok"),
                moe_d_ff=cfg.get("moe_intermediate_size") or _field(cfg, "intermediate_size"),
                n_shared_experts=shared, n_dense_layers=dense)


def from_config(config: "dict | str | os.PathLike", *, name: str | None = None) -> Model:
    """A :class:`Model` from a Hugging Face ``config.json`` (a dict, a JSON string or a path).

    Reads the architectures in :data:`ARCHITECTURES`: grouped-query attention and ``head_dim``;
    MLA (DeepSeek-V2/V3, Kimi K2); sliding-window layers (Mistral, Gemma 2/3's local layers,
    gpt-oss's alternating ones, Llama 4's chunked-attention layers, whose cache is likewise capped
    at the chunk); MoE experts, shared experts and dense-first or interleaved dense layers; tied or
    untied embeddings. The parameter counts are computed from the shape (DeepSeek's multi-token
    prediction module, ``num_nextn_predict_layers``, is not part of the model and not counted).
    All MLPs of these architectures are gated (three matrices).
    """
    cfg = _read_config(config)
    text = cfg.get("text_config") or cfg
    family = str(text.get("model_type") or cfg.get("model_type") or "").removesuffix("_text")
    if family not in ARCHITECTURES:
        raise ValueError(f"config model_type {family or None!r} is not one from_config reads; known: "
                         f"{', '.join(ARCHITECTURES)}. Another decoder needs {', '.join(REQUIRED_FIELDS)} "
                         f"(and for MoE num_experts and num_experts_per_tok): build a Model from them directly")
    if name is not None and not isinstance(name, str):
        raise ValueError(f"name must be a string or None, got {name!r}")
    text = {**_DEFAULTS.get(family, {}), **text, "model_type": family}
    n_layers, d, heads = (_field(text, k) for k in ("num_hidden_layers", "hidden_size", "num_attention_heads"))
    mla = {}
    if text.get("kv_lora_rank"):
        rope = _field(text, "qk_rope_head_dim")
        mla = dict(kv_lora_rank=text["kv_lora_rank"], q_lora_rank=text.get("q_lora_rank") or 0,
                   qk_rope_head_dim=rope, v_head_dim=_field(text, "v_head_dim"),
                   head_size=_field(text, "qk_nope_head_dim") + rope)
    window, sliding = _sliding(text, family, n_layers)
    moe = _moe(text, family, n_layers)
    dense_ff = text.get("intermediate_size_mlp") if family == "llama4" else None
    label = name or str(cfg.get("_name_or_path") or family).rstrip("/").split("/")[-1]
    shape = dict(
        n_layers=n_layers, d_model=d, n_heads=heads,
        n_kv_heads=heads if mla else text.get("num_key_value_heads") or heads,
        d_ff=dense_ff or _field(text, "intermediate_size"), vocab_size=_field(text, "vocab_size"),
        context_len=_field(text, "max_position_embeddings"), mlp="swiglu",
        tied_embeddings=bool(text.get("tie_word_embeddings", cfg.get("tie_word_embeddings", family in _GEMMA))),
        sliding_window=window, n_sliding_layers=sliding, **mla, **moe)
    if not mla and text.get("head_dim"):
        shape["head_size"] = text["head_dim"]
    draft = Model(name=label, display_name=label, n_params=1.0, n_active_params=1.0,
                  source=f"config.json of {cfg.get('_name_or_path') or label}", **shape)
    return replace(draft, n_params=float(draft.params_from_shape()),
                   n_active_params=float(draft.params_from_shape(active=True)))


# --- presets ---------------------------------------------------------------------------------

_SHAPE = ("n_layers", "d_model", "n_heads", "n_kv_heads", "d_ff", "vocab_size", "context_len", "n_experts",
          "experts_per_token")


def _config(file: str) -> dict:
    with resources.files("helpers").joinpath(f"data/configs/{file}").open(encoding="utf-8") as f:
        return json.load(f)


def _from_row(row: pd.Series) -> Model:
    published = dict(name=row["name"], display_name=row["display_name"], n_params=float(row["n_params"]),
                     n_active_params=float(row["n_active_params"]), source=row["source"])
    if isinstance(row.get("config"), str):  # the shape from the model's own config.json
        return replace(from_config(_config(row["config"])), **published)
    return Model(**published, **{k: int(row[k]) for k in _SHAPE}, mlp=row["mlp"],
                 tied_embeddings=bool(row["tied_embeddings"]), block=row["block"])


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
