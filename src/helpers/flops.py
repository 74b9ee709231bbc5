"""Floating-point operations of training and inference, per token and per run.

6 FLOP per parameter per token for a forward and backward pass (Kaplan et al. 2020,
arXiv:2001.08361, Sec. 2.1), plus attention scores and their weighting, 12*L*s*d per token
(the s/(6h) term of Narayanan et al. 2021, arXiv:2104.04473, Eq. 3); full recompute adds one
more forward (8 instead of 6).
"""

from .memory import RECOMPUTE, as_model
from .models import Model
from .units import check_bool, check_choice, check_positive, check_result

RECOMPUTE_FACTOR = {"none": 1.0, "selective": 1.0, "full": 4 / 3}
#: Compute-optimal training data: about 20 tokens per parameter (Hoffmann et al. 2022,
#: arXiv:2203.15556, Table 3: 70B parameters for 1.4T tokens).
CHINCHILLA_TOKENS_PER_PARAM = 20


def flops_per_token(model: "Model | str | float", *, seq_len: int | None = None, training: bool = True) -> float:
    """Model FLOPs per token: 6N (training) or 2N (inference forward), N the active parameters;
    with ``seq_len``, plus attention, 12*L*s*d (training) or 4*L*s*d (forward), d the heads' total
    width; sliding-window layers count only the keys in their window (:meth:`Model.attention_pairs`)."""
    m = as_model(model)
    check_bool("training", training)
    if seq_len is not None:
        check_positive("seq_len", seq_len, integer=True)
    per_param = 6 if training else 2
    # Narayanan's 2*L*s*d per token and pass counts the whole s x s score matrix: 4*d per causal pair
    attention = 0.0 if seq_len is None else float(per_param * 4 * m.attention_dim * m.attention_pairs(0, seq_len) / seq_len)
    return per_param * m.n_active_params + attention


def training_flops(model_or_n_params: "Model | str | float", tokens: float, *, recompute: str = "none",
                   seq_len: int | None = None) -> float:
    """FLOP to train on ``tokens`` tokens: 6ND (8ND with full recompute), plus attention when
    ``seq_len`` is given. GPT-3 175B on 300B tokens: 3.14e23 (Brown et al. 2020, Table D.1)."""
    check_positive("tokens", tokens)
    check_choice("recompute", recompute, RECOMPUTE)
    flops = flops_per_token(model_or_n_params, seq_len=seq_len) * tokens * RECOMPUTE_FACTOR[recompute]
    return check_result(flops, tokens=tokens)
