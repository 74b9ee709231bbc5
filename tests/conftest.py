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


@pytest.fixture(autouse=True, scope="session")
def _empty_caches_for_each_mutant():
    """Under mutation testing (``scripts/mutation``) mutmut forks each mutant's test run from a
    process that has already run the tests, so the package's caches hold what the unmutated code
    computed and a cached function's mutants would go unseen: empty them once at the start of
    each mutant's run. Nothing happens in an ordinary test run."""
    if "__mutmut_" in os.environ.get("MUTANT_UNDER_TEST", ""):
        for name, module in list(sys.modules.items()):
            if name == "helpers" or name.startswith("helpers."):
                for value in list(vars(module).values()):
                    if callable(getattr(value, "cache_clear", None)):
                        value.cache_clear()
    yield
