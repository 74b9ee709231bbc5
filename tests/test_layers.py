"""The package's layers, enforced: the model layer computes and never draws, plots draw and never
build panels, and the code passes ruff's correctness checks."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "helpers"
#: Each presentation module and the layers above it, which it may not import.
PRESENTATION = {"plots": {"widgets", "book"}, "book": {"widgets"}, "widgets": set()}
#: What only presentation may import.
DRAWING = {"matplotlib", "ipywidgets", "IPython"}


def _imports(path: Path) -> set[str]:
    """Top-level names a module imports: helpers' own modules by name, others by package."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
    return names


MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("module", MODULES)
def test_imports_point_down_the_layers(module):
    imported = _imports(PACKAGE / f"{module}.py")
    if module in PRESENTATION:
        assert not imported & PRESENTATION[module], f"{module} imports a layer above it: {imported & PRESENTATION[module]}"
    else:
        assert not imported & (set(PRESENTATION) | DRAWING), (
            f"model-layer module {module} imports presentation: {imported & (set(PRESENTATION) | DRAWING)}")


def test_every_module_is_in_a_layer():
    assert set(PRESENTATION) <= set(MODULES) and len(MODULES) > len(PRESENTATION)


def test_ruff_finds_no_errors():
    """Pyflakes' checks (unused or undefined names, redefinitions) and syntax errors, as configured
    in pyproject.toml, over the package, tests, scripts and benchmarks."""
    root = PACKAGE.parent.parent
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests", "scripts", "benchmarks"],
                            cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
