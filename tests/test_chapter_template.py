"""Every chapter follows notebooks/_template.ipynb (issue 16, item 5): a title with what the
reader will be able to do, a setup cell, its own sections, then the template's closing sections
in order, a panel to try, exercises each with its solution, and references."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "notebooks" / "_template.ipynb"
CHAPTERS = sorted((ROOT / "notebooks").glob("0*.ipynb"))
OBJECTIVES = "**After this chapter you can**"
MIN_EXERCISES = 3


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def markdown(path: Path) -> str:
    return "\n".join("".join(c["source"]) for c in cells(path) if c["cell_type"] == "markdown")


def sections(text: str) -> dict[str, str]:
    """Each level-2 heading and the text under it, in order."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def closing_sections() -> list[str]:
    """The sections every chapter ends with: the template's, after its first (the chapter's own)."""
    return list(sections(markdown(TEMPLATE)))[1:]


def test_the_template_ends_as_chapters_must():
    assert closing_sections() == ["Try it yourself", "Exercises", "Summary", "References"]


@pytest.mark.parametrize("path", [TEMPLATE, *CHAPTERS], ids=lambda p: p.stem)
def test_a_chapter_follows_the_template(path):
    first, setup = cells(path)[:2]
    assert first["cell_type"] == "markdown" and "".join(first["source"]).startswith("# ")
    intro = "".join(first["source"])
    assert OBJECTIVES in intro and re.search(r"^- \S", intro.split(OBJECTIVES)[1], flags=re.M), "objectives missing"
    assert setup["cell_type"] == "code" and "setup" in setup["metadata"].get("tags", []), "second cell is not the setup"
    found = sections(markdown(path))
    tail = closing_sections()
    assert list(found)[-len(tail):] == tail, f"{path.name} ends with {list(found)[-len(tail):]}"
    assert len(found) > len(tail), "no section of its own"
    assert found["Try it yourself"].strip(), "empty 'Try it yourself'"
    exercises = re.findall(r":::\{exercise\}\n:label: ([\w-]+)", found["Exercises"])
    solved = re.findall(r":::\{solution\} ([\w-]+)", found["Exercises"])
    assert sorted(exercises) == sorted(solved), "an exercise without its solution (or the reverse)"
    assert len(exercises) >= (1 if path == TEMPLATE else MIN_EXERCISES)
    assert re.search(r"^- ", found["Summary"], flags=re.M), "a summary is a list"
    assert "{cite:t}`" in found["References"], "no reference cited"
