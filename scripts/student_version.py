"""Write the student version of the chapters: the same notebooks without exercise solutions.

    python scripts/student_version.py [OUT]    # default OUT: _build/student

Every ``{solution}`` block is removed from the markdown cells, and code cells tagged
``remove-cell`` (which compute the solutions' numbers) are dropped. Outputs are kept, so the
figures and tables stay; nothing is kept by hand in a second copy.
"""

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = re.compile(r"^:::\{solution\}.*?^:::\s*$\n?", re.DOTALL | re.MULTILINE)


def student(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` without solution blocks and without the cells that compute them."""
    out = nbformat.from_dict(nb)
    cells = []
    for cell in out.cells:
        if cell.cell_type == "code" and "remove-cell" in cell.metadata.get("tags", []):
            continue
        if cell.cell_type == "markdown":
            cell.source = SOLUTION.sub("", cell.source)
        cells.append(cell)
    out.cells = cells
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else ROOT / "_build" / "student"
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nbformat.write(student(nbformat.read(path, as_version=4)), target / path.name)
        print(f"wrote {target / path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
