"""The release the book points readers to is written in several places (launch links, the
Colab setup cells, the citation); they must all name the package's version and one repository."""

import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
REPOSITORY = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]["url"]


def test_pinned_links_name_this_release_and_repository():
    owner_repo = REPOSITORY.removeprefix("https://github.com/")
    for name in ("README.md", "book/workshop.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        pins = re.findall(rf"{re.escape(owner_repo)}(?:/blob|\.git)?[/@]v(\d+\.\d+\.\d+)|--branch v(\d+\.\d+\.\d+)", text)
        assert pins, f"{name} has no link pinned to a release"
        assert {a or b for a, b in pins} == {VERSION}, f"{name} pins {pins}, the package is {VERSION}"


def test_citation_names_this_release_and_repository():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert str(citation["version"]) == VERSION and citation["repository-code"] == REPOSITORY


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_setup_cell_installs_this_release_from_this_repository(path):
    """Colab lacks the package: the first code cell installs it from the repository the book's
    launch buttons point to, at the tag of the package's version, and only when it is missing."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    first = "".join(next(c for c in cells if c["cell_type"] == "code")["source"])
    assert f'git+{REPOSITORY}@v{VERSION}"' in first
    assert first.index("except ModuleNotFoundError:") < first.index("%pip install")
