"""`thermrig calibrate ...`: the virtual drive against the seeds (docs/virtual-drive.md, Calibration)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from thermrig.analysis.published import PugetCell
from thermrig.calibration.acceptance import accept
from thermrig.calibration.crossval import Crossval, Fold, crossval, predicted, summarise
from thermrig.calibration.crossval_json import write_crossval
from thermrig.calibration.fit import GAIN_STARTS, CellResult, FitResult, fit, fit_sm951
from thermrig.calibration.parameters import FIT_MODEL, MODELS, STARTS
from thermrig.calibration.pipeline import Outcome
from thermrig.calibration.profile_writer import as_toml, fitted_edits, sm951_edits
from thermrig.calibration.profile_writer import write as write_edits
from thermrig.calibration.report import CalibrationCheck, replay_report
from thermrig.calibration.sensitivity import sensitivity
from thermrig.cli.user_errors import user_errors
from thermrig.sim import plant_replay
from thermrig.testbed.signals import sigterm_interrupts

# crossval's cap a fit: Powell over 16 numbers spends 400-800 a sweep and needs 2 or more;
# every fit measured from the prior converged within 1,101-2,859 (docs/virtual-drive.md, "Out of sample")
CROSSVAL_MAXFEV = 3000

app = typer.Typer(
    rich_markup_mode=None, help="Calibrate the virtual drive against the seeds: fit, replay, full-pipeline check."
)


def _console() -> Console:
    return Console() if sys.stdout.isatty() else Console(width=160)


def render(checks: list[CalibrationCheck], title: str) -> Table:
    table = Table(title=title)
    for col in ("seed", "cell", "published", "measured", "ok"):
        table.add_column(col)
    for c in checks:
        table.add_row(c.source, c.cell, c.published, c.measured, "yes" if c.ok else "NO")
    return table


def _summary(console: Console, checks: list[CalibrationCheck]) -> None:
    passed = sum(c.ok for c in checks)
    console.print(f"{passed} of {len(checks)} cells within tolerance", markup=False)


@app.command()
@user_errors
def replay() -> None:
    """Every check on the fast replay (plant + drive model, no rig, no fio) with the current profiles."""
    console = _console()
    checks = replay_report(plant_replay)
    console.print(render(checks, "replay: published vs model, current hardware/profiles"))
    _summary(console, checks)


@app.command("fit")
@user_errors
def fit_cmd(
    write: Annotated[bool, typer.Option("--write", help="Write the result into hardware/profiles.")] = False,
    maxfev: Annotated[int, typer.Option(help="Model evaluations for the 950 Pro fit.")] = 2000,
) -> None:
    """Bounded fit (Powell) of the drive, slot and chassis-profile parameters on the replay, from the
    values the profiles hold now; then the SM951's throttle parameters against seed 002."""
    console = _console()
    best = [float("inf")]
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    ) as progress:
        task = progress.add_task("950 Pro fit", total=maxfev)

        def report(n: int, cost: float) -> None:
            best[0] = min(best[0], cost)
            progress.update(task, completed=min(n, maxfev), description=f"950 Pro fit, cost {best[0]:.2f}")

        result = fit(plant_replay, maxfev=maxfev, report=report)
        progress.update(task, completed=maxfev)
    sm951, sm_cost = fit_sm951(plant_replay)
    edits = fitted_edits(result.fitted) + sm951_edits(sm951)
    console.print(as_toml(edits), markup=False)
    console.print(
        f"950 Pro cost {result.start_cost:.3f} -> {result.cost:.3f} ({result.evaluations} evaluations); "
        f"SM951 cost {sm_cost:.3f}",
        markup=False,
    )
    if write:
        paths = write_edits(edits)
        console.print(f"written: {', '.join(str(p) for p in paths)}", markup=False)
    checks = replay_report(plant_replay)
    console.print(render(checks, "replay with the fitted parameters" if write else "replay, profiles unchanged"))
    _summary(console, checks)


def _cell(r: CellResult) -> str:
    return f"{r.depth_pct:.0f}% after {'none' if r.onset_s is None else f'{r.onset_s:.0f}'} s"


MODEL_HELP = (
    "The model (its free parameters): "
    + ", ".join(f"{m.name} ({len(m.free)})" for m in MODELS.values())
    + f"; {FIT_MODEL.name} is what make fit fits and hardware/profiles hold, the others the models it grew "
    "from (docs/virtual-drive.md, 'Models tried')."
)


def _fold_row(f: Fold) -> list[str]:
    return [
        f"{f.cell.slot} / {f.cell.profile}",
        f.cell.published,
        _cell(f.in_sample),
        "yes" if Fold.ok(f.cell, f.in_sample) else "NO",
        _cell(f.held_out),
        "yes" if Fold.ok(f.cell, f.held_out) else "NO",
        f"{f.start_cost:.1f} -> {f.fold_cost:.2f}",
        str(f.evaluations),
        "yes" if f.converged else "NO (budget)",
    ]


def _check_crossval(model: str, start: str, maxfev: int, starts: int, jobs: int) -> None:
    if model not in MODELS:
        raise typer.BadParameter(f"--model: one of {', '.join(MODELS)}")
    if start not in STARTS:
        raise typer.BadParameter(f"--start: one of {', '.join(STARTS)}")
    if not 1 <= starts <= 1 + len(GAIN_STARTS):
        raise typer.BadParameter(f"--starts: 1 to {1 + len(GAIN_STARTS)}")
    if not 1 <= jobs <= 8 or maxfev < 1:
        raise typer.BadParameter("--jobs: 1 to 8; --maxfev: at least 1")


def _ok(cell: PugetCell, r: CellResult) -> str:
    return "yes" if Fold.ok(cell, r) else "NO"


def _fit_line(cell: PugetCell | None, r: FitResult) -> str:
    """A fit as it ends, with its predictions (crossval.predicted)."""
    cells = predicted(plant_replay, cell, r)
    if cell is not None:
        what = f"fold {cell.slot} / {cell.profile} (published {cell.published}): held out "
        what += f"{_cell(cells[0][1])} {_ok(cell, cells[0][1])}"
    else:
        what = "in sample (all 14) [" + "; ".join(f"{c.slot} / {c.profile} {_cell(p)} {_ok(c, p)}" for c, p in cells)
        what += "]"
    return (
        f"{what}; cost {r.start_cost:.1f} -> {r.cost:.2f} in {r.evaluations} evaluations"
        f"{'' if r.converged else ', stopped by the budget'}"
    )


def _fold_table(result: Crossval, title: str) -> Table:
    whole = result.in_sample
    table = Table(
        title=f"{title}; in sample: cost {whole.start_cost:.1f} -> {whole.cost:.2f} in {whole.evaluations} "
        f"evaluations{'' if whole.converged else ', stopped by the budget'}"
    )
    for col in ("cell", "published", "in sample", "ok", "held out", "ok", "fold cost", "evaluations", "converged"):
        table.add_column(col)
    for f in result.folds:
        table.add_row(*_fold_row(f))
    return table


def _crossval_summary(result: Crossval, free: int, start: str, wall_s: float) -> str:
    s = summarise(result.folds)
    return (
        f"{s.held_out_ok} of {s.cells} held-out cells within tolerance (in sample {s.in_sample_ok} of {s.cells}); "
        f"mean onset error {s.onset_error[0]:.2f} -> {s.onset_error[1]:.2f} of its tolerance, "
        f"mean depth error {s.depth_error[0]:.1f} -> {s.depth_error[1]:.1f} pp; {free} free parameters, "
        f"every fit from the {start} start; {s.unconverged} of {s.cells} folds stopped by the budget"
        f"{'' if result.in_sample.converged else ', and the in-sample fit'}; wall time {wall_s / 60:.1f} min"
    )


@app.command("crossval")
@user_errors
def crossval_cmd(
    model: Annotated[str, typer.Option(help=MODEL_HELP)] = FIT_MODEL.name,
    start: Annotated[
        str,
        typer.Option(
            help="Where every fit starts: prior (physical values with their sources, else each bound's middle; "
            "thermrig.calibration.parameters.PRIOR), middle (each bound's middle), or profiles (hardware/profiles: "
            "the old warm start, a fit that has seen every cell, the held-out one included; not out of sample)."
        ),
    ] = "prior",
    maxfev: Annotated[
        int,
        typer.Option(help="Most model evaluations a fit may use; a fit stops sooner when Powell converges."),
    ] = CROSSVAL_MAXFEV,
    starts: Annotated[
        int,
        typer.Option(
            help="Powell starts per fit, sharing the evaluations: 1 = from --start only; "
            f"2-{1 + len(GAIN_STARTS)} add make fit's restarts at the throttle gain's basins {GAIN_STARTS} (a model "
            f"that frees the gain; {FIT_MODEL.name} holds it)."
        ),
    ] = 1,
    jobs: Annotated[int, typer.Option(help="Fits run at once, each in its own process.")] = 1,
    out: Annotated[Path | None, typer.Option(help="Also write the result (every fold's values) as JSON.")] = None,
) -> None:
    """Leave-one-cell-out over the 14 Puget cells on the replay, without leakage: every fit starts from
    the same point, one that has seen no cell (--start). In sample: the fit on all 14 from it; each fold:
    the fit on the other 13 from it, then the prediction of the cell left out. Each fit's start and end
    cost, evaluations, and whether it converged or the budget stopped it, are in the table."""
    _check_crossval(model, start, maxfev, starts, jobs)
    chosen = MODELS[model]
    console = _console()
    effort = f"at most {maxfev} evaluations a fit, {starts} Powell start{'s' if starts > 1 else ''}"
    console.print(
        f"model {model} ({len(chosen.free)} free), every fit from the {start} start, {effort}: 15 fits "
        f"({jobs} at once)",
        markup=False,
    )
    began = time.monotonic()
    done = [0]

    def show(cell: PugetCell | None, r: FitResult) -> None:
        done[0] += 1
        minutes = (time.monotonic() - began) / 60
        console.print(f"[{done[0]}/15 {minutes:.1f} min] {_fit_line(cell, r)}", markup=False)

    result = crossval(
        plant_replay, chosen, start, maxfev=maxfev, gain_starts=GAIN_STARTS[: starts - 1], jobs=jobs, report=show
    )
    wall_s = time.monotonic() - began
    title = f"leave-one-cell-out, model {model}: {len(chosen.free)} free parameters, every fit from the {start} start"
    console.print(_fold_table(result, f"{title}, {effort}"))
    console.print(_crossval_summary(result, len(chosen.free), start, wall_s), markup=False)
    if start == "profiles":
        console.print(
            "the profiles start is a fit on every cell, the held-out one included: not an out-of-sample figure",
            markup=False,
        )
    if out is not None:
        write_crossval(out, result, model, maxfev, wall_s)


@app.command("sensitivity")
@user_errors
def sensitivity_cmd(
    share: Annotated[float, typer.Option(help="Move each parameter this share of its bound's range.")] = 0.05,
    least: Annotated[float, typer.Option(help="List the cells it moves by at least this many tolerances.")] = 0.25,
    model: Annotated[str, typer.Option(help=MODEL_HELP)] = FIT_MODEL.name,
) -> None:
    """Which Puget cells each free parameter of the fit moves at the profiles' values (replay)."""
    if model not in MODELS:
        raise typer.BadParameter(f"--model: one of {', '.join(MODELS)}")
    console = _console()
    for s in sensitivity(plant_replay, MODELS[model], share=share):
        moved = [
            f"{m.cell.slot} / {m.cell.profile} {'onset' if m.onset >= m.depth else 'depth'} {max(m.onset, m.depth):.1f}"
            for m in s.cells
            if max(m.onset, m.depth) >= least
        ]
        console.print(f"{s.name} = {s.value:.3g}: {', '.join(moved) or 'no cell'}", markup=False)


@app.command()
@user_errors
def check(
    out: Annotated[Path, typer.Option(help="Campaign files, folders, logs and report.json.")] = Path(
        "build/calibration"
    ),
    quick: Annotated[bool, typer.Option("--quick", help="Two Puget cells only (what make test runs).")] = False,
    seeds: Annotated[
        bool,
        typer.Option(
            "--seeds/--no-seeds",
            help="Also seeds 000 and 004: the mixed sweeps and the hour of random writes, heatsink vs bare "
            "(four campaigns of 40-75 min; with --jobs 4 or more they add about 25 min).",
        ),
    ] = True,
    only_seeds: Annotated[
        bool, typer.Option("--only-seeds", help="Seeds 000 and 004 only (their four campaigns, about 75 min).")
    ] = False,
    jobs: Annotated[int, typer.Option(help="Campaigns run at once (each its own rig and drive).")] = 3,
    speed: Annotated[float, typer.Option(help="Simulation speed between workloads (fio always runs at 1x).")] = 10,
    scale: Annotated[float, typer.Option(help="Virtual drive bandwidth scale (times and ratios unchanged).")] = 0.05,
) -> None:
    """Every calibration cell through the whole pipeline: simulated rig, virtual drive, real fio, a
    private InfluxDB; the tables read back from InfluxDB beside the published numbers. Exit 1 when a cell
    is out of tolerance."""
    if jobs < 1 or speed < 1 or not 0 < scale <= 1:
        raise typer.BadParameter("jobs >= 1, speed >= 1, 0 < scale <= 1")
    console = _console()
    with (
        sigterm_interrupts(),  # like Ctrl-C: the campaigns stop safe, the server goes down
        Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
        ) as progress,
    ):
        tasks: dict[str, TaskID] = {}

        def show(state: dict[str, tuple[int, int]]) -> None:
            for name, (done, total) in state.items():
                if name not in tasks:
                    tasks[name] = progress.add_task(name, total=total)
                progress.update(tasks[name], completed=done)

        accepted = accept(out, quick, seeds, only_seeds, jobs, speed, scale, show)
    console.print(render(accepted.checks, "pipeline: published vs measured (fio logs read back from InfluxDB)"))
    _summary(console, accepted.checks)
    _say_outcome(console, accepted.outcome, out)
    if not accepted.passed:
        raise typer.Exit(1)


def _say_outcome(console: Console, outcome: Outcome, out: Path) -> None:
    """The wall time, and the campaigns resumed, run again or failed."""
    console.print(f"wall time {outcome.wall_s / 60:.1f} min; campaigns in {out}", markup=False)
    for name, times in outcome.resumed.items():
        console.print(
            f"{name} stopped and was resumed {times}x (its log says why; the run it stopped in was retried)",
            markup=False,
        )
    for name, runs in outcome.set_aside.items():
        console.print(
            f"{name} was run again: the host stalled {', '.join(runs)} before its onset (kept in "
            f"{name}.set-aside; the attempt after it is read)",
            markup=False,
        )
    if outcome.failed:
        console.print(f"campaigns that failed: {', '.join(outcome.failed)} (logs in {out})", markup=False)
