"""Summarise the last mutation run (``scripts/mutation``) in ``benchmarks/mutation.md``, which
``benchmarks/run.py`` copies into results.md.

Reads ``mutmut results --all true`` and, for each surviving mutant, the one line it changed
(diffing its function against the original in ``mutants/src``), and sorts the survivors into what
they change: only text (of a message or a table's label), an argument check (one that another
check already makes), a default argument, or a constant or formula. ``scripts/mutation`` runs it
from the repository root after mutmut.
"""

import ast
import collections
import csv
import difflib
import re
import subprocess
from pathlib import Path

MUTANTS = Path("mutants/src/helpers")
#: Surviving changes of a constant or formula that no test can kill, each with the reason: matched on
#: the function and the changed line before and after, so that a renumbering of mutants keeps them.
EXPLAINED = Path(__file__).with_name("mutation_explained.csv")
#: What the run is, for results.md (the tests it leaves out are pyproject.toml's [tool.mutmut] settings).
ABOUT = ("From the last `scripts/mutation` run (about 20 minutes on 2 cores; not rerun by `benchmarks/run.py`): "
         "mutmut changes one constant, operator, argument or string at a time in `memory`, `compute`, `comm`, "
         "`scaling`, `cost` and `select` and runs the tests that reach it: all but the panel and browser tests and "
         "the two refits of the calibration (left out for time), and the ruff and public-API checks (which mutmut's "
         "generated code cannot pass). A survivor is a change no test notices; `benchmarks/mutation.py` sorts them "
         "by what they change, and lists apart the changes of a constant or formula that no test can tell from the "
         "original, each with the reason (`benchmarks/mutation_explained.csv`). mutmut forks each mutant's run from "
         "a process whose caches (`functools.cache`) hold the unmutated results, so `tests/conftest.py` empties them "
         "at the start of each run; it still credits a cached function only to the tests that computed it while it "
         "recorded coverage, so some tests of it are not run against its mutants: the score is a lower bound.")


def _functions(path: Path) -> dict[str, str]:
    """Source of every function in a mutated module, by name (methods too)."""
    text = path.read_text()
    lines = text.splitlines()
    return {node.name: "\n".join(lines[node.lineno - 1:node.end_lineno]) for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.FunctionDef) and "__mutmut_" in node.name}


def _code(line: str) -> str:
    """``line`` with the contents of its string literals blanked (a changed line may be part of a
    statement, which a tokenizer would not take)."""
    return re.sub(r"[rbfRBF]*(\"[^\"]*\"|'[^']*')", '""', line)


def kind(before: str, after: str) -> str:
    """What a mutant changed: 'text' (of a message or a label only), 'check' (an argument check),
    'default' (a default argument) or 'constant or formula'."""
    if _code(before) == _code(after):
        return "text"
    if re.search(r"\bcheck_\w+\(|raise |ValueError|check_result|_band\(|argument\(", before):
        return "check"
    if before.lstrip().startswith("def ") or re.match(r"\s*\w+: .*=.*[,)]", before):
        return "default"
    return "constant or formula"


def changes() -> dict[str, tuple[str, str]]:
    """The changed (original, mutant) line of every mutant, by mutmut's name."""
    out = {}
    for path in MUTANTS.glob("*.py"):
        functions = _functions(path)
        for name, source in functions.items():
            stem, _, number = name.rpartition("__mutmut_")
            if number == "orig":
                continue
            original = functions.get(f"{stem}__mutmut_orig", "").splitlines()
            mutated = source.replace(name, f"{stem}__mutmut_orig").splitlines()
            for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, original, mutated, autojunk=False).get_opcodes():
                if tag != "equal":
                    out[f"helpers.{path.stem}.{name}"] = (" ".join(original[i1:i2]), " ".join(mutated[j1:j2]))
                    break
    return out


def summary() -> list[str]:
    """The markdown lines: mutants by module and outcome, survivors by kind, and every surviving
    change of a constant or formula."""
    results = subprocess.run(["mutmut", "results", "--all", "true"], capture_output=True, text=True, check=True).stdout
    status = dict(line.strip().rsplit(": ", 1) for line in results.splitlines() if ": " in line)
    lines = changes()
    by_module = collections.defaultdict(collections.Counter)
    survivors = collections.defaultdict(collections.Counter)
    formulas = []
    for name, state in status.items():
        module = name.split(".")[1]
        by_module[module][state] += 1
        if state == "survived":
            before, after = lines.get(name, ("", ""))
            k = kind(before, after)
            survivors[module][k] += 1
            if k == "constant or formula":
                formulas.append((name.split(".", 1)[1], before.strip(), after.strip()))
    kinds = ("text", "check", "default", "constant or formula")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = [ABOUT, "", f"Run on commit {commit or 'unknown'} (tests added later are not in these figures).", "",
           "| module | mutants | killed | survived | no test reaches it | timed out | score | survivors: text | "
           "check | default | constant or formula |", "| --- " * 11 + "|"]
    total = collections.Counter()
    for module, counts in sorted(by_module.items()):
        total += counts
        tested = counts["killed"] + counts["survived"] + counts["timeout"]
        out.append(f"| {module} | {sum(counts.values())} | {counts['killed']} | {counts['survived']} | "
                   f"{counts['no tests']} | {counts['timeout']} | {(counts['killed'] + counts['timeout']) / tested:.0%} | "
                   + " | ".join(str(survivors[module][k]) for k in kinds) + " |")
    tested = total["killed"] + total["survived"] + total["timeout"]
    reasons = explained()
    unexplained = [(n, b, a) for n, b, a in sorted(formulas) if (_function(n), b, a) not in reasons]
    out += ["", f"All: {sum(total.values())} mutants, score {(total['killed'] + total['timeout']) / tested:.1%} "
            f"(killed or timed out, of the mutants a test reaches). Of the {len(formulas)} surviving changes of a "
            f"constant or formula, {len(formulas) - len(unexplained)} are explained (below: no test can tell them "
            f"apart) and {len(unexplained)} are neither killed nor explained yet.", "",
            "<details><summary>Surviving changes of a constant or formula, not yet killed or explained</summary>", ""]
    out += [f"- `{name}`: `{before}` -> `{after}`" for name, before, after in unexplained]
    out += ["", "</details>", "", f"<details><summary>Explained: {len(formulas) - len(unexplained)} surviving changes "
            "of a constant or formula no test can kill (`benchmarks/mutation_explained.csv`)</summary>", ""]
    by_reason = collections.defaultdict(list)
    for name, before, after in sorted(formulas):
        if (_function(name), before, after) in reasons:
            by_reason[reasons[_function(name), before, after]].append(f"`{name}`")
    out += [f"- {reason}: {', '.join(names)}" for reason, names in sorted(by_reason.items())]
    stale = len(reasons) - sum(len(v) for v in by_reason.values())
    return out + ["", f"{stale} explanation(s) match no survivor of this run (killed since, or the code changed).",
                  "", "</details>"]


def _function(name: str) -> str:
    """'memory._largest' from a mutant's name, 'memory.x__largest__mutmut_12'."""
    module, _, rest = name.partition(".")
    return f"{module}.{rest.removeprefix('x_').rpartition('__mutmut_')[0]}"


def explained() -> dict[tuple[str, str, str], str]:
    """(function, line before, line after) -> why no test can kill that change."""
    with EXPLAINED.open(encoding="utf-8", newline="") as f:
        return {(row["function"], row["before"], row["after"]): row["reason"] for row in csv.DictReader(f)}


def main() -> None:
    lines = summary()
    Path(__file__).with_name("mutation.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
