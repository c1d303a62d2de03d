"""Fit a model of thermrig.calibration.parameters in sample on the 14 Puget cells (make fit's three starts)
and write the 950 Pro, slot and chassis-profile values into THERMRIG_HARDWARE_DIR's profiles (never the
SM951's): the profiles a measured, not adopted model's crossval starts from (bench/xval_*/).

    cp -r bench/xval_exhaust bench/xval_NEW
    THERMRIG_HARDWARE_DIR=bench/xval_NEW PYTHONPATH=host python bench/xval_fit.py MODEL [MAXFEV]
"""

from __future__ import annotations

import sys

from thermrig.calibration.fit import fit
from thermrig.calibration.parameters import MODELS
from thermrig.calibration.profile_writer import as_toml, fitted_edits, write
from thermrig.testbed.replay import model_replay


def main() -> None:
    model = MODELS[sys.argv[1]]
    maxfev = int(sys.argv[2]) if len(sys.argv) > 2 else 1200

    def report(n: int, c: float) -> None:
        if n % 100 == 0:
            print(f"  {n} evaluations, cost {c:.3f}", flush=True)

    r = fit(model_replay(), model, maxfev=maxfev, report=report)
    print(f"model {model.name}, {len(model.free)} free: cost {r.start_cost:.3f} -> {r.cost:.3f} ({r.evaluations})")
    edits = fitted_edits(r.fitted)
    print(as_toml(edits))
    print("written:", ", ".join(str(p) for p in write(edits)))


if __name__ == "__main__":
    main()
