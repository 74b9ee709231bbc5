"""Execute every chapter notebook in place with a fresh kernel, so that the committed outputs are
exactly what a fresh kernel gives: no timing metadata, no widget state, stable cell ids.

    python scripts/execute_notebooks.py            # re-execute notebooks/*.ipynb in place
    python scripts/execute_notebooks.py --check    # exit 1 if re-executing would change a notebook
"""

import argparse
import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def execute(path: Path) -> nbformat.NotebookNode:
    """A freshly executed, normalised copy of the notebook at ``path``."""
    nb = nbformat.read(path, as_version=4)
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"{path.stem}-{index:03d}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.metadata.pop("execution", None)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False, store_widget_state=True,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)  # random model ids; the HTML shows the static figure
    nb.metadata.pop("jupytext", None)
    nb.metadata.pop("widgets", None)  # widget state is stored during execution (the Output widget needs it), not kept
    return nb


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    parser.add_argument("--check", action="store_true", help="only report notebooks whose outputs are stale")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    stale = []
    for path in [p.resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb")):
        fresh = nbformat.writes(execute(path)) + "\n"
        if args.check:
            if fresh != path.read_text(encoding="utf-8"):
                stale.append(path)
        else:
            path.write_text(fresh, encoding="utf-8")
        print(f"{'checked' if args.check else 'executed'} {path.relative_to(ROOT)}")
    for path in stale:
        print(f"stale outputs: {path.relative_to(ROOT)} (run scripts/execute_notebooks.py)", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
