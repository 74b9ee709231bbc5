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


@pytest.fixture(autouse=True)
def _uncached_under_mutation_testing():
    """Under mutmut (scripts/mutation), empty the helpers' caches before each test: mutmut credits
    a function to the tests that call it while it records coverage, and a cached result would credit
    only the first test to compute it, so the others would not be run against its mutants. The
    data tables (``helpers._data``) stay cached: no mutant changes them."""
    if "MUTANT_UNDER_TEST" in os.environ:
        for name, module in list(sys.modules.items()):
            if name.startswith("helpers.") and name != "helpers._data":
                for value in list(vars(module).values()):
                    if callable(getattr(value, "cache_clear", None)):
                        value.cache_clear()
    yield
