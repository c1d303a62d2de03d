"""Leave-one-cell-out over the Puget cells on the replay: each fold refits the model on the other cells,
warm-started from the given parameters (the profiles' by default), then predicts the cell it left out.
In sample: the given parameters' own prediction of the cell. `thermrig calibrate crossval`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from thermrig.analysis.published import PUGET, PugetCell
from thermrig.calibration.fit import GAIN_STARTS, CellResult, evaluate, fit
from thermrig.calibration.parameters import FIT_MODEL, Fitted, Model, current
from thermrig.dut.replay import ModelReplay
from thermrig.hardware.profiles import load_chassis


@dataclass(frozen=True)
class Fold:
    cell: PugetCell
    in_sample: CellResult
    held_out: CellResult
    fitted: Fitted  # the fold's refit, on the other cells
    start_cost: float  # the other cells' cost at the warm start ...
    fold_cost: float  # ... and after the refit
    evaluations: int

    @staticmethod
    def ok(cell: PugetCell, r: CellResult) -> bool:
        return all(cell.judge(r.onset_s, r.depth_pct))


@dataclass(frozen=True)
class Summary:
    cells: int
    in_sample_ok: int
    held_out_ok: int
    onset_error: tuple[float, float]  # mean |onset error| / tolerance: in sample, held out
    depth_error: tuple[float, float]  # mean |depth error|, pp: in sample, held out


def _onset_error(cell: PugetCell, r: CellResult) -> float:
    return 1e9 if r.onset_s is None else abs(r.onset_s - cell.onset_s) / cell.onset_tolerance_s()


def summarise(folds: Sequence[Fold]) -> Summary:
    n = len(folds)

    def mean(values: list[float]) -> float:
        return sum(values) / n if n else 0.0

    return Summary(
        n,
        sum(Fold.ok(f.cell, f.in_sample) for f in folds),
        sum(Fold.ok(f.cell, f.held_out) for f in folds),
        (
            mean([_onset_error(f.cell, f.in_sample) for f in folds]),
            mean([_onset_error(f.cell, f.held_out) for f in folds]),
        ),
        (
            mean([abs(f.in_sample.depth_pct - f.cell.depth_pct) for f in folds]),
            mean([abs(f.held_out.depth_pct - f.cell.depth_pct) for f in folds]),
        ),
    )


def crossval(
    replayer: ModelReplay,
    model: Model = FIT_MODEL,
    base: Fitted | None = None,
    cells: Sequence[PugetCell] = PUGET,
    held_out: Sequence[PugetCell] | None = None,
    maxfev: int = 400,
    gain_starts: Sequence[float] = GAIN_STARTS,
    report: Callable[[PugetCell, Fold], None] | None = None,
) -> list[Fold]:
    """One fold per cell of held_out (every cell by default): fit on cells without it, predict it."""
    chassis = load_chassis()
    base = current() if base is None else base
    in_sample = dict(zip(cells, evaluate(replayer, chassis, base, cells), strict=True))
    folds = []
    for cell in cells if held_out is None else held_out:
        train = [c for c in cells if c != cell]
        r = fit(replayer, model, base, train, maxfev=maxfev, gain_starts=gain_starts)
        (predicted,) = evaluate(replayer, chassis, r.fitted, [cell])
        fold = Fold(cell, in_sample[cell], predicted, r.fitted, r.start_cost, r.cost, r.evaluations)
        folds.append(fold)
        if report is not None:
            report(cell, fold)
    return folds
