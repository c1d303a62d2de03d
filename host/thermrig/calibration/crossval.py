"""Leave-one-cell-out over the Puget cells on the replay, without leakage: every fit starts from one point
that has seen no Puget cell (parameters.start_point: a physical prior, else each bound's middle), the
same for every fold. Each fold fits the model on the other cells from it, then predicts the cell it left
out; in sample is the same fit from the same start on every cell. `thermrig calibrate crossval`.

The start "profiles" (hardware/profiles, the fit on every cell) is the old, warm-started figure: each
fold then begins in the basin that already fits the cell it is judged on (docs/virtual-drive.md)."""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from thermrig.analysis.published import PUGET, PugetCell
from thermrig.calibration.fit import GAIN_STARTS, CellResult, FitResult, evaluate, fit
from thermrig.calibration.parameters import FIT_MODEL, Fitted, Model, current, start_point
from thermrig.dut.replay import ModelReplay
from thermrig.hardware.profiles import load_chassis


@dataclass(frozen=True)
class Fold:
    cell: PugetCell
    in_sample: CellResult  # the in-sample fit's prediction of the cell
    held_out: CellResult  # the fold's, fitted without it
    fitted: Fitted  # the fold's fit, on the other cells
    start_cost: float  # the other cells' cost at the start ...
    fold_cost: float  # ... and after the fit
    evaluations: int
    converged: bool  # the fit ended on Powell's tolerances, not on the budget

    @staticmethod
    def ok(cell: PugetCell, r: CellResult) -> bool:
        return all(cell.judge(r.onset_s, r.depth_pct))


@dataclass(frozen=True)
class Crossval:
    start: str  # how every fit started (parameters.STARTS)
    start_point: Fitted  # where: the same for the in-sample fit and every fold
    in_sample: FitResult  # the fit on every cell
    folds: list[Fold]


@dataclass(frozen=True)
class Summary:
    cells: int
    in_sample_ok: int
    held_out_ok: int
    onset_error: tuple[float, float]  # mean |onset error| / tolerance: in sample, held out
    depth_error: tuple[float, float]  # mean |depth error|, pp: in sample, held out
    unconverged: int  # folds the budget stopped


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
        sum(not f.converged for f in folds),
    )


@dataclass(frozen=True)
class _Portable:
    """The replayer as a worker process gets it: a module (thermrig.sim.plant_replay) travels by its name."""

    replayer: Any

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[str]] | str | tuple[Any, ...]:
        if isinstance(self.replayer, types.ModuleType):
            return (_module, (self.replayer.__name__,))
        return (_Portable, (self.replayer,))


def _module(name: str) -> _Portable:
    return _Portable(importlib.import_module(name))


def _fit(
    replayer: _Portable, model: Model, start: Fitted, cells: Sequence[PugetCell], maxfev: int, gains: Sequence[float]
) -> FitResult:
    return fit(replayer.replayer, model, start, cells, maxfev=maxfev, gain_starts=gains)


def crossval(
    replayer: ModelReplay,
    model: Model = FIT_MODEL,
    start: str = "prior",
    cells: Sequence[PugetCell] = PUGET,
    held_out: Sequence[PugetCell] | None = None,
    maxfev: int = 1200,
    gain_starts: Sequence[float] = GAIN_STARTS,
    jobs: int = 1,
    report: Callable[[PugetCell | None, FitResult], None] | None = None,
    profiles: Fitted | None = None,
) -> Crossval:
    """The in-sample fit on cells and one fold per cell of held_out (every cell by default), each a fit
    from the same start (parameters.start_point; profiles: what supplies the uncalibrated numbers, the
    profiles' by default) with up to maxfev evaluations; jobs fits at once in worker processes. report
    gets each fit as it ends (None: the in-sample one)."""
    chassis = load_chassis()
    base = start_point(model, start, current() if profiles is None else profiles)
    chosen = list(cells if held_out is None else held_out)
    tasks: list[PugetCell | None] = [None, *chosen]
    portable = _Portable(replayer)
    gains = tuple(gain_starts)
    results: dict[PugetCell | None, FitResult] = {}

    def train(cell: PugetCell | None) -> list[PugetCell]:
        return [c for c in cells if c != cell]

    if jobs <= 1:
        for cell in tasks:
            results[cell] = _fit(portable, model, base, train(cell), maxfev, gains)
            if report is not None:
                report(cell, results[cell])
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(_fit, portable, model, base, train(c), maxfev, gains): c for c in tasks}
            for future in as_completed(futures):
                cell = futures[future]
                results[cell] = future.result()
                if report is not None:
                    report(cell, results[cell])
    whole = results[None]
    in_sample = dict(zip(cells, evaluate(replayer, chassis, whole.fitted, cells), strict=True))
    folds = []
    for cell in chosen:
        r = results[cell]
        (predicted,) = evaluate(replayer, chassis, r.fitted, [cell])
        folds.append(Fold(cell, in_sample[cell], predicted, r.fitted, r.start_cost, r.cost, r.evaluations, r.converged))
    return Crossval(start, base, whole, folds)


def predicted(replayer: ModelReplay, cell: PugetCell | None, r: FitResult) -> list[tuple[PugetCell, CellResult]]:
    """A fit's predictions as it ends: of the cell its fold held out, or (cell None, the in-sample fit) of
    every cell, so a crossval cut short still has them."""
    cells = list(PUGET) if cell is None else [cell]
    return list(zip(cells, evaluate(replayer, load_chassis(), r.fitted, cells), strict=True))
