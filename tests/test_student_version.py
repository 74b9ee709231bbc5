"""The student version is generated from the chapters and must stay in step with them."""

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("student_version", ROOT / "scripts" / "student_version.py")
student_version = importlib.util.module_from_spec(spec)
spec.loader.exec_module(student_version)
CHAPTERS = sorted((ROOT / "notebooks").glob("0*.ipynb"))


def text(nb) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_student_version_keeps_exercises_and_drops_solutions(path):
    nb = nbformat.read(path, as_version=4)
    exercises = re.findall(r":::\{exercise\}\n:label: ([\w-]+)", text(nb))
    assert len(exercises) >= 3, f"{path.name} needs at least three exercises"
    assert set(re.findall(r":::\{solution\} ([\w-]+)", text(nb))) == set(exercises)
    out = student_version.student(nb)
    assert re.findall(r":::\{exercise\}\n:label: ([\w-]+)", text(out)) == exercises
    assert "{solution}" not in text(out)
    assert not any("remove-cell" in c.metadata.get("tags", []) for c in out.cells)
    kept = [c for c in nb.cells if "remove-cell" not in c.metadata.get("tags", [])]
    assert len(out.cells) == len(kept)


def test_script_writes_every_notebook(tmp_path):
    assert student_version.main([str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.ipynb")) == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
