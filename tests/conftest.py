import os
import sys

import matplotlib
import pytest
from hypothesis import settings

matplotlib.use("Agg")

# CI runs the same examples every time; locally hypothesis explores new ones.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


def _empty_caches() -> None:
    for name, module in list(sys.modules.items()):
        if name == "helpers" or name.startswith("helpers."):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


@pytest.fixture(autouse=True, scope="session")
def _empty_caches_for_each_mutant():
    """Under mutation testing (``scripts/mutation``) mutmut forks each mutant's test run from a
    process that has already run the tests, so the package's caches hold what the unmutated code
    computed and a cached function's mutants would go unseen: empty them once at the start of
    each mutant's run. Nothing happens in an ordinary test run."""
    if "__mutmut_" in os.environ.get("MUTANT_UNDER_TEST", ""):
        _empty_caches()
    yield


@pytest.fixture(autouse=True)
def _empty_caches_while_mutmut_maps_the_tests():
    """While mutmut records which tests reach which function (its "stats" run, before any mutant),
    empty the caches before each test as well: a cached result would otherwise credit a function
    to the first test that computed it only, and its mutants would never meet the later tests
    that check it. Nothing happens in an ordinary test run."""
    if os.environ.get("MUTANT_UNDER_TEST") == "stats":
        _empty_caches()
    yield
