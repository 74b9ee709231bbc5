import dataclasses
import json
import re
from pathlib import Path

import pytest

from helpers import _data, book, claims, compute, gpus, memory
from helpers.units import GB

TABLE = claims.table()
NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("0*.ipynb"))


def figures(claim_id: str):
    return claims.finding(claim_id).figures


def test_table_shape_and_content():
    assert list(TABLE.columns) == ["id", "section", "quote_zh", "claim_en", "verdict", "note", "checked_value", "source"]
    assert set(TABLE["verdict"]) <= set(claims.VERDICTS)
    assert TABLE["id"].is_unique
    assert TABLE.notna().all().all()
    assert (TABLE["checked_value"].str.len() > 40).all()
    prose = ~TABLE["quote_zh"].str.match(r"(from |def |trtexec|NVLink 3.0 92%)")  # quoted code and tables stay as written
    assert TABLE.loc[prose, "quote_zh"].str.contains(r"[\u4e00-\u9fff]").all()


def test_each_claim_is_checked_once_by_a_registered_function_or_by_sourced_text():
    """A claim that numbers settle has a check registered under its id and no verdict in the CSV
    (one place for each verdict); a claim about code or APIs has its verdict and sourced text there."""
    rows = _data.table("claims").set_index("id")
    sourced = rows["checked_text"].notna()
    assert set(claims._CHECKS) == set(rows.index[~sourced])
    assert rows.loc[~sourced, ["verdict", "note"]].isna().all().all()
    assert rows.loc[sourced, "verdict"].isin(claims.VERDICTS).all()
    assert 45 <= len(claims._CHECKS) and sourced.sum() <= 15
    with pytest.raises(ValueError, match="two checks"):
        claims._checks("gpt3-175b")(lambda: None)


def test_every_verdict_has_a_box_style():
    assert set(claims.BOX_CLASS) == set(claims.VERDICTS)
    assert claims.BOX_CLASS["wrong"] == "warning" and claims.BOX_CLASS["correct"] == "tip"
    assert "tip" not in {claims.BOX_CLASS[v] for v in ("depends", "roughly right", "unverifiable", "opinion")}


def test_findings_compose_their_sentences_from_their_figures():
    f = claims.finding("weights-175b")
    assert f.verdict == "correct" and f.note == "in 16-bit"
    assert f.figures["weights"] == pytest.approx(350 * GB) and f.figures["fp32"] == pytest.approx(700 * GB)
    assert "350 GB" in f.sentence and f"{f.figures['gib']:,.0f} GiB" in f.sentence
    with pytest.raises(ValueError, match="verdict must be one of"):
        claims._found("nearly", "text")
    with pytest.raises(ValueError, match="claim_id='nope' is not a known claim"):
        claims.finding("nope")


def test_memory_figures_follow_the_memory_model():
    # training vs inference: model states alone are 8x, outside "3-5x"
    assert figures("train-vs-infer")["states_ratio"] == pytest.approx(8)
    assert claims.finding("train-vs-infer").verdict == "wrong"
    # Adam: 12 bytes/parameter with master weights is 6x the bf16 weights, not 2x
    assert figures("adam-2x")["ratio"] == pytest.approx(6)
    assert figures("adam-2x")["bytes_per_param"] == pytest.approx(12)
    # 10B with AdamW does not fit an 80 GB A100 even before activations
    assert figures("a6000-10b")["states"] == pytest.approx(160 * GB)
    assert claims.finding("a6000-10b").note == "implausible as told"
    # recompute costs 33 %, "30 %" is roughly right
    assert figures("recompute-cost")["ratio"] == pytest.approx(4 / 3)
    # 20B weights alone exceed 24 GB; the A6000 has 48 GB
    assert figures("a6000-20b")["weights"] == pytest.approx(40 * GB) and figures("a6000-20b")["a6000_gb"] == 48
    assert figures("a6000-20b")["qlora"] < 24 * GB < figures("a6000-20b")["full"]
    # fp16 mixed precision does not halve training memory
    assert figures("fp16-halves")["saving"] < 0.2 and claims.finding("fp16-halves").verdict == "depends"
    # checkpointing's saving on the total straddles 60-70 %: it depends on the share of activations
    saving = figures("recompute-saving")
    assert saving["alone_saving"] < 0.6 < 0.7 < saving["zero3_saving"]


def test_gpu_figures_follow_the_datasheets():
    assert figures("h100-1979")["sxm_tflops"] == pytest.approx(1979, abs=0.5)
    assert figures("h100-fp8-3x")["peak_bf16"] == pytest.approx(3.17, abs=0.01)
    assert figures("a100-tf32-v100")["tf32_fp32"] == pytest.approx(9.9, abs=0.1)
    assert claims.finding("a100-tf32-v100").note.startswith("misleading")
    assert figures("rtx4090-tensor-cores")["bf16_tflops"] > figures("rtx4090-tensor-cores")["fp32_tflops"]
    assert figures("l40s-24gb")["memory_gb"] == 48 and figures("l40s-150w")["watts"] == 350
    assert figures("a6000-30b")["bf16_b"] < 30 <= figures("a6000-30b")["int4_b"]
    assert 0.4 < figures("a6000-half-price")["ratio"] < 0.6
    assert figures("int8-2-3x")["decode"] < 2 <= figures("int8-2-3x")["peak"]
    assert figures("nvlink5-1.8")["quoted_tbps"] == pytest.approx(1.8)
    assert figures("nvlink5-1.8")["vs_nvlink4"] == pytest.approx(2)
    assert figures("hbm3e-256")["b200_gb"] == 192
    assert figures("budget-4xa100")["full_b"] < 100 and figures("8xa100-100b")["full_b"] < 100


def _with_gpu(monkeypatch, name: str, **changes) -> None:
    """Make ``gpus.get(name)`` answer a copy of that GPU with ``changes``, as a changed datasheet would."""
    original = gpus.get
    target = original(name).name
    monkeypatch.setattr(gpus, "get", lambda g, *a, **k: dataclasses.replace(original(g, *a, **k), **changes)
                        if isinstance(g, str) and original(g).name == target else original(g, *a, **k))


def test_verdicts_follow_the_figures_not_fixed_text(monkeypatch):
    """Change an input and the verdict, note and sentence change with it."""
    _with_gpu(monkeypatch, "L40S", memory_gb_vendor=24, tdp_watts=150)
    assert claims.finding("l40s-24gb").verdict == "correct"
    assert claims.finding("l40s-150w").verdict == "correct"
    assert "150 W = 38% of the A100-SXM4-80GB" in claims.finding("l40s-150w").sentence
    assert claims.get("l40s-24gb")["verdict"] == "correct"  # the table and the boxes read the same finding
    assert ":class: tip" in book.claim_box("l40s-24gb")


def test_the_serving_sentence_names_the_cheapest_it_computed(monkeypatch):
    """At the book's traffic level the plan decides: an L40S hour at 5 cents makes it the cheapest, at
    $50 another card is named."""
    from helpers import cost
    price = cost.price
    for hourly, expected in ((0.05, "The L40S is the cheapest per token"), (50.0, "is cheaper per token")):
        monkeypatch.setattr(cost, "price", lambda g, kind="cloud_hour", _h=hourly, **k: _h if kind == "cloud_hour" and
                            gpus.get(g).name == "L40S-48GB" else price(g, kind, **k))
        assert expected in claims.finding("l40s-serving").sentence


def test_boxes_escape_dollars_outside_code_and_quote_code_as_code():
    box = book.claim_box("budget-50k")
    assert r"\$3,000" in box and re.search(r"(?<!\\)\$", box) is None
    assert ":class: note" in box and ":name: claim-budget-50k" in box
    assert "> `from torch.cuda.amp" in book.claim_box("torch-cuda-amp")


def test_wrong_and_conditional_claims_open_the_others_fold_with_their_verdict_in_the_title():
    for claim_id in TABLE["id"]:
        verdict = claims.finding(claim_id).verdict
        first, style = book.claim_box(claim_id).splitlines()[:2]
        folded = verdict in book.FOLDED_VERDICTS
        assert style == f":class: {claims.BOX_CLASS[verdict]}{' dropdown' if folded else ''}", claim_id
        assert first.endswith(f" — {verdict}") == folded, claim_id
    assert {"wrong", "depends"}.isdisjoint(book.FOLDED_VERDICTS)


def _boxes(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [m for c in cells if c["cell_type"] == "markdown"
            for m in re.findall(r"```\{glue:md\} ([\w.-]+)-box\n:format: myst\n```", "".join(c["source"]))]


def test_every_claim_has_one_generated_box_in_a_chapter():
    """Chapters show the boxes the registry generates (no handwritten box), each claim once."""
    shown = [claim_id for path in NOTEBOOKS for claim_id in _boxes(path)]
    assert sorted(shown) == sorted(TABLE["id"])
    handwritten = [p.name for p in NOTEBOOKS for c in json.loads(p.read_text(encoding="utf-8"))["cells"]
                   if c["cell_type"] == "markdown" and "{admonition} Check the article" in "".join(c["source"])]
    assert not handwritten


def test_each_chapter_glues_the_boxes_it_shows():
    for path in NOTEBOOKS:
        text = path.read_text(encoding="utf-8")
        glued = set(re.findall(r'"name": "([\w.-]+)-box"', text))
        assert glued == set(_boxes(path)), path.name


def test_the_verdicts_rest_on_the_package_figures():
    """A spot check that figures are the package's, not copies: they equal a direct computation."""
    a100 = gpus.get("A100 80GB")
    assert figures("node-100b")["training"] == memory.training(100e9, zero_stage=3, dp=8, recompute="full").total
    assert not memory.fits(memory.training(100e9, zero_stage=3, dp=8, recompute="full"), a100)
    assert figures("recompute-cost")["ratio"] == compute.training_flops(1e9, 1e9, recompute="full") / \
        compute.training_flops(1e9, 1e9)


def test_the_precision_verdict_names_every_family_that_trained_in_fp16():
    """The fp16 runs of the validation data are GPT-3's (as PaLM estimated it), Megatron-LM 2021's,
    GPT-NeoX-20B's, OPT's and Pythia's: the sentence names each, so a new fp16 family makes it say so."""
    runs = _data.table("training_runs")
    assert set(runs.loc[runs["dtype"] == "fp16", "family"]) == {"palm-estimates", "narayanan-2021", "gpt-neox", "opt",
                                                                  "pythia"}
    sentence = claims.finding("fp16-tf32-key").sentence
    assert all(name in sentence for name in ("GPT-3", "Megatron-LM", "GPT-NeoX-20B", "OPT-175B", "Pythia"))
