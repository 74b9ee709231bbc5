import json
import re
from pathlib import Path

import pytest

from helpers import claims, compute, gpus, memory, models
from helpers.units import GB

TABLE = claims.table()


def test_table_shape_and_content():
    assert list(TABLE.columns) == ["id", "section", "quote_zh", "claim_en", "verdict", "note", "checked_value", "source"]
    assert set(TABLE["verdict"]) <= set(claims.VERDICTS)
    assert TABLE["id"].is_unique
    assert TABLE.notna().all().all()
    assert (TABLE["checked_value"].str.len() > 40).all()
    prose = ~TABLE["quote_zh"].str.match(r"(from |def |trtexec|NVLink 3.0 92%)")  # quoted code and tables stay as written
    assert TABLE.loc[prose, "quote_zh"].str.contains(r"[\u4e00-\u9fff]").all()


def test_memory_claims_of_sections_2_2_and_4_2_are_covered():
    ids = set(TABLE["id"])
    assert {"train-vs-infer", "weights-175b", "gradients", "adam-2x", "a6000-10b", "recompute-saving",
            "recompute-cost", "a6000-20b"} <= ids


def test_section_2_1_claims_are_covered():
    assert {"h100-fp8-3x", "a100-tf32-v100", "rtx4090-tensor-cores", "rtx4090-30pct", "fp16-tf32-key",
            "torch-cuda-amp"} <= set(TABLE["id"])


def test_section_2_1_verdicts_follow_the_numbers():
    h100, a100, v100, rtx = gpus.get("H100"), gpus.get("A100 80GB"), gpus.get("V100"), gpus.get("4090")
    assert h100.peak_flops("bf16") / a100.peak_flops("bf16") == pytest.approx(3.2, abs=0.05)
    assert not v100.supports("tf32")
    assert not 1.6 < a100.peak_flops("tf32") / v100.peak_flops("fp32") < 2.0
    assert rtx.supports("fp8") and rtx.peak_flops("bf16") > rtx.peak_flops("fp32")
    assert rtx.peak_flops("bf16") / a100.peak_flops("bf16") > 0.45


def test_verdicts_follow_the_numbers():
    # 175B in 16 bit is 350 GB: correct
    assert memory.inference(175e9).weights == pytest.approx(350 * GB)
    # training vs inference: model states alone are 8x, outside "3-5x"
    b = memory.training(1e9)
    assert (b.weights + b.gradients + b.optimizer) / (2 * 1e9) > 5
    # Adam: 12 bytes/parameter with master weights is 6x the bf16 weights, not 2x
    assert memory.training(1e9).optimizer / memory.training(1e9).weights == pytest.approx(6)
    # 10B with AdamW does not fit an 80 GB A100 even before activations
    b10 = memory.training(10e9)
    assert b10.weights + b10.gradients + b10.optimizer > gpus.get("A100 80GB").memory_bytes
    # recompute costs 33 %, "30 %" is roughly right
    assert compute.training_flops(1e9, 1, recompute="full") / compute.training_flops(1e9, 1) == pytest.approx(4 / 3)
    # 20B weights alone exceed 24 GB; the A6000 has 48 GB
    assert memory.inference(models.dense(20e9)).weights > 24 * GB
    assert gpus.get("A6000").memory_gb_vendor == 48
    # fp16 mixed precision does not halve training memory
    m = models.get("llama-2-7b")
    assert memory.training(m, dtype="fp16").total > 0.6 * memory.training(m, dtype="fp32").total


def test_checked_values_quote_computed_figures():
    row = claims.get("weights-175b")
    assert "350 GB" in row["checked_value"] and "700 GB" in row["checked_value"]
    assert "48 GB" in claims.get("a6000-20b")["checked_value"]
    with pytest.raises(ValueError, match="claim_id='nope' is not a known claim"):
        claims.get("nope")


def test_section_3_claims_follow_the_numbers():
    from helpers import cost
    assert {"h100-1979", "nvlink4-pcie5", "node-100b", "a100-best-value", "20b-4xa100-5days", "l40s-24gb", "l40s-150w",
            "int8-2-3x", "mig-7", "trtexec", "a6000-30b", "a6000-96gb", "a6000-half-price", "a4000-16gb-140w",
            "a4000-decoders", "rtx4090-a100-7x"} <= set(TABLE["id"])
    h100 = gpus.get("H100")
    assert h100.peak_flops("fp8") / 1e12 == pytest.approx(1979)
    l40s = gpus.get("L40S")
    assert l40s.memory_gb_vendor != 24 and l40s.tdp_watts / gpus.get("A100 80GB").tdp_watts > 0.8
    assert not memory.fits(memory.training(100e9, zero_stage=3, dp=8, recompute="full"), gpus.get("A100 80GB"))
    assert not memory.fits(memory.inference(30e9), gpus.get("A6000"))
    assert 0.4 < cost.price("A6000", "purchase") / cost.price("A100 40GB", "purchase") < 0.6
    assert gpus.get("L40S").mig_instances == 0 and gpus.get("A100").mig_instances == 7
    int8 = compute.decode_throughput("llama-2-7b", l40s, weight_dtype="int8").expected
    assert int8 / compute.decode_throughput("llama-2-7b", l40s, weight_dtype="fp16").expected < 2


def test_every_claim_is_checked_in_a_chapter():
    import json
    import re
    from pathlib import Path
    text = "".join(p.read_text(encoding="utf-8") for p in Path(__file__).parent.parent.glob("notebooks/*.ipynb"))
    glued = set()
    for nb in Path(__file__).parent.parent.glob("notebooks/*.ipynb"):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            glued |= set(re.findall(r"\{glue:md\}`([a-z0-9.-]+)-verdict`", "".join(cell["source"])))
    assert set(TABLE["id"]) <= glued, set(TABLE["id"]) - glued
    assert text


def test_the_articles_known_errors_are_wrong():
    verdicts = TABLE.set_index("id")["verdict"]
    for claim_id in ("l40s-24gb", "l40s-150w", "rtx4090-tensor-cores", "hbm3e-256", "a6000-20b", "budget-4xa100",
                     "8xa100-100b", "train-vs-infer"):
        assert verdicts[claim_id] == "wrong", claim_id


BOX = re.compile(r":::\{admonition\} Check the article:[^\n]*\n:class: (\w+)\n> \{glue:md\}`([\w.-]+)-quote_zh`")


def test_check_the_article_boxes_are_coloured_by_their_verdict():
    """Every chapter's box shows a claim of claims.csv, as a warning where the verdict is wrong and a
    tip otherwise (claims.BOX_CLASS): a changed verdict fails here until its box follows."""
    verdicts = TABLE.set_index("id")["verdict"]
    boxes = [(path.name, m.group(2), m.group(1))
             for path in sorted(Path(__file__).parents[1].glob("notebooks/*.ipynb"))
             for cell in json.loads(path.read_text(encoding="utf-8"))["cells"] if cell["cell_type"] == "markdown"
             for m in BOX.finditer("".join(cell["source"]))]
    assert len(boxes) >= 60
    wrong = [(name, claim_id, shown) for name, claim_id, shown in boxes
             if shown != claims.BOX_CLASS.get(verdicts[claim_id], "tip")]
    assert not wrong, wrong
