"""Sphinx extension: author-year citations in round brackets, "Kaplan et al. (2020)" and
"(Kaplan et al., 2020)", as the chapters' prose expects (sphinxcontrib-bibtex's author_year
style uses square ones). Registered as the referencing style ``author_year_round``."""

from dataclasses import dataclass, field

import sphinxcontrib.bibtex.plugin
from sphinx.application import Sphinx
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle


def _round() -> BracketStyle:
    return BracketStyle(left="(", right=")")


@dataclass
class RoundAuthorYear(AuthorYearReferenceStyle):
    bracket_parenthetical: BracketStyle = field(default_factory=_round)
    bracket_textual: BracketStyle = field(default_factory=_round)
    bracket_author: BracketStyle = field(default_factory=_round)
    bracket_label: BracketStyle = field(default_factory=_round)
    bracket_year: BracketStyle = field(default_factory=_round)


def setup(app: Sphinx) -> dict:
    sphinxcontrib.bibtex.plugin.register_plugin("sphinxcontrib.bibtex.style.referencing", "author_year_round",
                                                RoundAuthorYear)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
