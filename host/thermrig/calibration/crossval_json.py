"""A crossval's result as JSON (`thermrig calibrate crossval --out`): the start, the budget, the in-sample
fit and every fold with its fitted values."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from thermrig.calibration.crossval import Crossval, Fold, summarise
from thermrig.calibration.fit import CellResult
from thermrig.calibration.parameters import read


def _cell(r: CellResult) -> dict[str, float | None]:
    return {"onset_s": r.onset_s, "depth_pct": r.depth_pct}


def _fold(f: Fold) -> dict[str, object]:
    return {
        "cell": f"{f.cell.slot} / {f.cell.profile}",
        "published": f.cell.published,
        "in_sample": _cell(f.in_sample),
        "in_sample_ok": Fold.ok(f.cell, f.in_sample),
        "held_out": _cell(f.held_out),
        "held_out_ok": Fold.ok(f.cell, f.held_out),
        "start_cost": f.start_cost,
        "fold_cost": f.fold_cost,
        "evaluations": f.evaluations,
        "converged": f.converged,
        "values": read(f.fitted),
    }


def crossval_json(result: Crossval, model: str, maxfev: int, wall_s: float) -> dict[str, object]:
    return {
        "model": model,
        "start": result.start,
        "start_values": read(result.start_point),
        "maxfev": maxfev,
        "wall_s": wall_s,
        "in_sample_fit": {
            "start_cost": result.in_sample.start_cost,
            "cost": result.in_sample.cost,
            "evaluations": result.in_sample.evaluations,
            "converged": result.in_sample.converged,
            "values": read(result.in_sample.fitted),
        },
        "summary": asdict(summarise(result.folds)),
        "folds": [_fold(f) for f in result.folds],
    }


def write_crossval(path: Path, result: Crossval, model: str, maxfev: int, wall_s: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(crossval_json(result, model, maxfev, wall_s), indent=2))
