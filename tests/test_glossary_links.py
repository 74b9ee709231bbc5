"""Every chapter links its first use of each jargon term to the glossary (issue 16, item 5)."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob("0*.ipynb"))
#: Jargon in the text -> its glossary term (book/glossary.md).
JARGON = {r"SXM": "SXM", r"HGX|DGX": "HGX, DGX", r"NICs?": "NIC", r"FSDP": "FSDP", r"NVL72": "NVL72",
          r"NVLink": "NVLink, NVSwitch", r"ZeRO": "ZeRO", r"MFU": "MFU", r"KV cache": "KV cache", r"TDP": "TDP",
          r"PUE": "PUE", r"[Gg]oodput": "Goodput", r"[Rr]oofline": "Roofline, ridge point", r"Q?LoRA": "LoRA, QLoRA",
          r"MIG": "MIG", r"GQA|[Gg]rouped-query attention": "Grouped-query attention (GQA)", r"TTFT": "TTFT, TPOT",
          r"[Cc]ontinuous batching": "Continuous batching", r"[Aa]rithmetic intensity": "Arithmetic intensity",
          r"[Cc]olocation": "Colocation", r"[Ee]gress": "Egress", r"NVLS": "NVLS (NVLink SHARP)",
          r"[Ee]xpert parallelism": "Expert parallelism (EP)"}
#: Roles, code, math and links, which the search skips (a {term} role is found separately).
SKIPPED = re.compile(r"\{term\}`[^`]*`|`[^`]*`|\$[^$]*\$|\[[^\]]*\]\([^)]*\)|<[^>]*>")
TERM_ROLE = re.compile(r"\{term\}`([^`<]*?)(?:\s*<([^>]*)>)?`")


def prose(notebook: Path) -> str:
    """The markdown a reader reads in order, without headings, admonition lines and quotes."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    lines = [line for c in cells if c["cell_type"] == "markdown" for line in "".join(c["source"]).splitlines()]
    return "\n".join(line for line in lines if not line.lstrip().startswith(("#", ":::", ">", ":class:", ":label:")))


def first_uses(text: str) -> dict[str, tuple[int, bool]]:
    """For each glossary term used: where it is first used and whether that use links the glossary."""
    found: dict[str, tuple[int, bool]] = {}
    for m in TERM_ROLE.finditer(text):
        term = (m.group(2) or m.group(1)).strip()
        found.setdefault(term.lower(), (m.start(), True))
    plain = SKIPPED.sub(lambda m: " " * len(m.group()), text)
    for pattern, term in JARGON.items():
        m = re.search(rf"(?<![\w-]){pattern}(?![\w])", plain)
        if m and (term.lower() not in found or m.start() < found[term.lower()][0]):
            found[term.lower()] = (m.start(), False)
    return found


def glossary_terms() -> set[str]:
    text = (ROOT / "book" / "glossary.md").read_text(encoding="utf-8")
    block = text.split("```{glossary}")[1].split("```")[0]
    return {line.strip().lower() for line in block.splitlines() if line.strip() and not line.startswith(" ")}


def test_jargon_names_real_glossary_terms():
    assert {t.lower() for t in JARGON.values()} <= glossary_terms()


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_first_use_of_each_term_links_the_glossary(notebook):
    text = prose(notebook)
    unlinked = sorted(term for term, (_, linked) in first_uses(text).items() if not linked)
    assert not unlinked, f"{notebook.name}: first use not linked to the glossary: {unlinked}"
    known = glossary_terms()
    assert all(term in known for term in first_uses(text)), "a {term} role names no glossary entry"
