"""Guards on the committed notebooks: nbval passes a notebook that was never executed, so check
here that every chapter was executed top to bottom by scripts/execute_notebooks.py."""

import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: tags of cells allowed to have no output (imports and setup)
NO_OUTPUT_TAGS = {"setup"}


def code_cells(path: Path) -> list[dict]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [c for c in cells if c["cell_type"] == "code" and "".join(c["source"]).strip()]


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]
    for entry in toc.get("chapters", []) + [c for p in toc.get("parts", []) for c in p.get("chapters", [])]:
        files.append(entry["file"])
    return files


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_code_cell_executed_in_order(path):
    counts = [c["execution_count"] for c in code_cells(path)]
    assert None not in counts, f"{path.name}: unexecuted cells; run scripts/execute_notebooks.py"
    assert counts == list(range(1, len(counts) + 1)), f"{path.name}: not executed top to bottom in one kernel"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_outputs_present_and_clean(path):
    for cell in code_cells(path):
        tags = set(cell["metadata"].get("tags", []))
        kinds = [o["output_type"] for o in cell["outputs"]]
        assert "error" not in kinds, f"{path.name}: error output in {cell['source'][:1]}"
        assert not any(o.get("name") == "stderr" for o in cell["outputs"]), f"{path.name}: stderr in {cell['source'][:1]}"
        if not tags & NO_OUTPUT_TAGS and "remove-cell" not in tags:
            assert cell["outputs"], f"{path.name}: a code cell has no output: {''.join(cell['source'])[:80]!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_widget_state_or_timing_committed(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert "widgets" not in nb["metadata"]
    for cell in code_cells(path):
        assert "execution" not in cell["metadata"]
        for output in cell["outputs"]:
            assert "application/vnd.jupyter.widget-view+json" not in output.get("data", {})


def test_toc_lists_existing_files_only():
    for entry in toc_files():
        matches = list(ROOT.glob(entry + ".*"))
        assert matches, f"_toc.yml lists {entry}, which does not exist"


def test_every_toc_chapter_notebook_is_tested():
    listed = {ROOT / (f + ".ipynb") for f in toc_files() if f.startswith("notebooks/")}
    assert listed <= set(NOTEBOOKS)



def test_one_glue_key_one_value_across_the_book():
    """One number for one fact: a glued value is keyed by what it is, so a key glued in two chapters
    names the same quantity and must print the same value in both (a changed input that reaches one
    chapter and not the other fails here). Unrelated quantities take distinct keys."""
    seen: dict[str, dict[str, str]] = {}
    for path in NOTEBOOKS:
        for cell in code_cells(path):
            for output in cell.get("outputs", []):
                record = output.get("metadata", {}).get("scrapbook")
                if record:
                    data = output["data"]
                    value = "".join(data.get(record["mime_prefix"] + "text/markdown") or
                                    data.get(record["mime_prefix"] + "text/plain") or "")
                    seen.setdefault(record["name"], {})[path.name] = value
    assert len(seen) > 100
    differing = {key: where for key, where in seen.items() if len(set(where.values())) > 1}
    assert not differing, f"glue keys printing different values in different chapters: {differing}"
