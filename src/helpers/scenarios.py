"""The article's buying scenarios (its §5 budget tiers, and fine-tuning a 70B model on a budget),
each answered by the selector.

A scenario (``data/scenarios.csv``) states a workload, a deadline and a budget, and the GPUs the
article recommends for it. :func:`answer` runs :func:`select.recommend` on it twice: over the
whole catalog, for the book's answer, and over the article's GPU alone, at most as many as the
article names, for what the article's pick achieves on the same terms. The workloads are the
book's choices where the article names none; each row says why in its ``basis``.
"""

from dataclasses import dataclass
from functools import cache

import pandas as pd

from . import _data, gpus, select
from .flops import CHINCHILLA_TOKENS_PER_PARAM
from .units import check_choice, check_positive

#: Binding constraints of a row that meets every constraint (select.recommend's vocabulary).
MEETS = ("compute", "memory bandwidth")
#: Model sizes (billions of parameters) searched by :func:`largest_pretraining`.
SIZES_B = (0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000)


@dataclass(frozen=True)
class Answer:
    """A scenario's rankings: ``ranking`` is :func:`select.recommend` over the catalog (best first),
    ``article`` its row for the article's GPU (None where the article names none), ``best`` the top
    row that meets every constraint (None when none does)."""

    scenario: pd.Series
    ranking: pd.DataFrame
    article: pd.Series | None
    best: pd.Series | None

    @property
    def serving(self) -> bool:
        return self.scenario["task"] == "serve"

    @staticmethod
    def outcome(row: pd.Series | None, settings: bool = True) -> str:
        """One option in words: count, GPU, (settings) and the selector's reason."""
        if row is None:
            return "no GPU of the catalog meets every constraint"
        return f"{row['n_gpus']:,} × {row['gpu']}" + (f" ({row['settings']})" if settings else "") + f": {row['reason']}"

    @property
    def sentence(self) -> str:
        """What the article's pick achieves on this workload, and what the book would buy instead."""
        s = self.scenario
        article = "" if self.article is None else (
            f"The article's {s['article_pick']}: {self.outcome(self.article)}. ")
        return f"{s['workload'][0].upper()}{s['workload'][1:]}. {article}The selector's answer: {self.outcome(self.best)}."


@cache
def _table() -> pd.DataFrame:
    return _data.table("scenarios").set_index("id")


def names() -> list[str]:
    """The scenario ids, in the article's order."""
    return list(_table().index)


def get(scenario_id: str) -> pd.Series:
    """One row of ``data/scenarios.csv``."""
    check_choice("scenario_id", scenario_id, names())
    return _table().loc[scenario_id]


def _given(value):
    return None if pd.isna(value) else value


def _arguments(s: pd.Series) -> dict:
    """``select.recommend``'s keywords for a scenario: what it states, the selector's defaults otherwise."""
    out = {"task": s["task"], "deadline_days": _given(s["deadline_days"]), "budget_usd": _given(s["budget_usd"])}
    if s["task"] != "serve":
        return out | {"tokens": float(s["tokens"])}
    if pd.notna(s["requests_per_s"]):
        return out | {"requests_per_s": float(s["requests_per_s"]), "prompt_len": int(s["prompt_len"]),
                      "output_len": int(s["output_len"]), "ttft_s": _given(s["ttft_s"]), "tpot_s": _given(s["tpot_s"])}
    return out | {"batch_size": int(s["batch_size"]), "context_len": int(s["context_len"]),
                  "latency_ms": _given(s["latency_ms"])}


def _catalog(s: pd.Series) -> list[str]:
    """The GPUs a scenario may use: all, or those within its power limit (``max_watts``)."""
    if pd.isna(s["max_watts"]):
        return gpus.names()
    return [g.name for g in gpus.get_all("gpu_names", gpus.names()) if g.tdp_watts <= s["max_watts"]]


def _first_meeting(ranking: pd.DataFrame, serving_at_traffic: bool) -> pd.Series | None:
    ok = ranking["binding"].isin(MEETS)
    if serving_at_traffic:  # a traffic plan meets its targets whatever binds, unless the budget does
        ok = ranking["ms per token"].notna() & (ranking["binding"] != "budget")
    return ranking[ok].iloc[0] if ok.any() else None


def answer(scenario_id: str) -> Answer:
    """The selector's ranking for a scenario, its best row that meets every constraint, and the
    article's GPU on the same terms (at most the article's count of it)."""
    s = get(scenario_id)
    kwargs = _arguments(s)
    ranking = select.recommend(s["model"], gpu_names=_catalog(s), **kwargs)
    article = None
    if pd.notna(s["article_gpu"]):
        most = {} if pd.isna(s["article_n"]) else {"max_gpus": int(s["article_n"])}
        article = select.recommend(s["model"], gpu_names=[s["article_gpu"]], **most, **kwargs).iloc[0]
    return Answer(s, ranking, article, _first_meeting(ranking, "requests_per_s" in kwargs))


def largest_pretraining(budget_usd: float, deadline_days: float, gpu_names: list[str] | None = None) -> float:
    """Largest dense model (billions of parameters, one of :data:`SIZES_B`; 0 if none) that some GPU
    of ``gpu_names`` (default: the catalog) pre-trains compute-optimally, on 20 tokens per
    parameter (Hoffmann et al. 2022), within ``deadline_days`` and ``budget_usd`` on demand.
    Bisection: a larger model costs more and takes longer on every GPU."""
    check_positive("budget_usd", budget_usd)
    check_positive("deadline_days", deadline_days)

    def feasible(billions: float) -> bool:
        n = billions * 1e9
        ranking = select.recommend(n, tokens=CHINCHILLA_TOKENS_PER_PARAM * n, deadline_days=deadline_days,
                                   budget_usd=budget_usd, gpu_names=gpu_names)
        return bool(ranking["binding"].isin(MEETS).any())

    low, high = -1, len(SIZES_B)  # SIZES_B[low] is feasible (or low = -1), SIZES_B[high] is not (or high = len)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if feasible(SIZES_B[mid]) else (low, mid)
    return SIZES_B[low] if low >= 0 else 0.0


def table() -> pd.DataFrame:
    """Every scenario in one frame: tier, workload, the article's pick and its outcome, the
    selector's answer (without the layouts, which :attr:`Answer.sentence` gives)."""
    rows = []
    for scenario_id in names():
        a = answer(scenario_id)
        rows.append({"scenario": a.scenario["tier"], "workload": a.scenario["workload"],
                     "article's pick": _given(a.scenario["article_pick"]) or "",
                     "how it does": "" if a.article is None else a.outcome(a.article, settings=False),
                     "the selector's answer": a.outcome(a.best, settings=False)})
    return pd.DataFrame(rows)
