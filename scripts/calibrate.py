"""Fit the training and serving step models' parameters on their calibration runs and write
src/helpers/data/calibration.csv (parameters and the out-of-sample bands).

    python scripts/calibrate.py           # refit and write the file
    python scripts/calibrate.py --check   # exit 1 if refitting would change the file

Run it after changing data/training_runs.csv, data/inference_runs.csv or a step model
(src/helpers/steptime.py, src/helpers/serving.py);
tests/test_calibration.py fails while the file is out of step.
"""

import argparse
import io
import sys
from pathlib import Path

from helpers import calibration

PATH = Path(__file__).resolve().parent.parent / "src" / "helpers" / "data" / "calibration.csv"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report whether the file is up to date, change nothing")
    args = parser.parse_args()
    out = io.StringIO()
    calibration.fitted_table().to_csv(out, index=False, lineterminator="\n")
    if args.check:
        same = PATH.exists() and PATH.read_text(encoding="utf-8") == out.getvalue()
        print("calibration.csv is up to date" if same else "calibration.csv is stale: run scripts/calibrate.py")
        return 0 if same else 1
    PATH.write_text(out.getvalue(), encoding="utf-8")
    print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
