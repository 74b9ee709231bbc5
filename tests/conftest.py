import os

import matplotlib
from hypothesis import settings

matplotlib.use("Agg")

# CI runs the same examples every time; locally hypothesis explores new ones.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")
