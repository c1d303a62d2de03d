"""What each workload kind does when it runs: how fio is driven (one job file, or SNIA rounds until
steady), which per-second logs are recorded under which job names, the kind's own figures for the run
summary. The campaign asks this module; it never tests kinds (which fill the drive: FILL_PASSES in
workloads.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from thermrig.analysis.consistency import consistency_score
from thermrig.fio.job_file import unique_job_names
from thermrig.fio.rate_search import figures as search_figures
from thermrig.fio.rate_search import run_rate_search
from thermrig.fio.rounds import RoundsResult, run_rounds
from thermrig.fio.runner import FioResult, run_fio
from thermrig.fio.workload_setup import WorkloadSetup
from thermrig.fio.workloads import ResolvedWorkload, WorkloadKind, job_file


@dataclass
class WorkloadRun:
    """A workload's outcome, for the run summary and the recording."""

    result: FioResult  # the one analysed: the only fio run, or the last SNIA round
    logs: list[tuple[FioResult, dict[int, str]]] = field(default_factory=list)  # each with its job names by number
    figures: dict[str, Any] = field(default_factory=dict)  # the kind's own figures, at the drive's scale


def run_workload(
    workload: ResolvedWorkload, setup: WorkloadSetup, prefilled: bool = False, between: Callable[[], None] | None = None
) -> WorkloadRun:
    """Run one workload into setup.folder. The drive's scale (wire bytes per drive byte: the virtual
    drive's) divides IOPS back to the drive's own; prefilled: the drive took its fill at once; between: a
    rate search's wait between its steps (the rig back at equilibrium)."""
    target, folder, on_live, stop, on_note = setup.target, setup.folder, setup.on_live, setup.stop, setup.on_note
    scale = target.scale
    if workload.kind == WorkloadKind.RATE_SEARCH:
        search = run_rate_search(workload, setup, scale, between)
        logs = [(r, {1: f"{workload.name}-step{i:02d}"}) for i, r in enumerate(search.results, start=1)]
        return WorkloadRun(search.results[-1], logs, search_figures(search, workload))
    if workload.kind == WorkloadKind.SNIA_STEADY_STATE:
        rounds = run_rounds(
            workload, target, folder, on_live, stop, lambda n, iops: on_note(f"round {n}: {iops / scale:,.0f} IOPS")
        )
        return _steady_state(workload, rounds, scale)
    job = job_file(workload, target, str(folder / "fio"), prefilled)
    result = run_fio(job, folder, on_live, stop, target.fio_server)
    names = {i: j["jobname"] for i, j in enumerate(result.result.get("jobs", []), start=1)}
    if workload.kind == WorkloadKind.LAB:  # a lab's names: made tag values, clones (numjobs) told apart
        names = unique_job_names(list(names.values()))
    out = WorkloadRun(result, [(result, names)])
    if workload.kind == WorkloadKind.CONSISTENCY:
        out.figures.update(_consistency(workload, result, scale))
    return out


def _steady_state(workload: ResolvedWorkload, rounds: RoundsResult, scale: float) -> WorkloadRun:
    """The SNIA rounds' logs, one per round, and whether and where they became steady."""
    logs = [(r, {1: f"{workload.name}-round{i:02d}"}) for i, r in enumerate(rounds.results, start=1)]
    last5 = rounds.rounds_iops[-5:]
    figures = {
        "rounds": len(rounds.rounds_iops),
        "steady": rounds.steady,
        "steady_iops": sum(last5) / len(last5) / scale,
    }
    return WorkloadRun(rounds.results[-1], logs, figures)


def _consistency(workload: ResolvedWorkload, result: FioResult, scale: float) -> dict[str, Any]:
    """Scored on the random-write job (the last), not the fill."""
    last_job = max(p.job for p in result.iops) if result.iops else 1
    iops = [float(p.value) / scale for p in result.iops if p.job == last_job]
    if len(iops) < 2:
        return {}
    score = consistency_score(iops, workload.score_window_s)
    return {"iops_average": score.average, "iops_consistency": score.consistency, "scored_seconds": score.seconds}
