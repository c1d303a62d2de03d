"""SNIA PTS steady-state rounds: the same job again and again until the tracked variable (IOPS per
round) is steady over a 5-round window, or the round limit is reached."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from thermrig.analysis.consistency import snia_steady_state
from thermrig.dut.drive import DriveUnderTest
from thermrig.fio.runner import FioResult, LiveSample, run_fio
from thermrig.fio.workloads import ResolvedWorkload, job_file


@dataclass
class RoundsResult:
    rounds_iops: list[float] = field(default_factory=list)
    steady: bool = False
    results: list[FioResult] = field(default_factory=list)


def run_rounds(
    w: ResolvedWorkload,
    target: DriveUnderTest,
    folder: Path,
    on_live: Callable[[LiveSample], None] | None = None,
    stop: threading.Event | None = None,
    on_round: Callable[[int, float], None] | None = None,
) -> RoundsResult:
    out = RoundsResult()
    for n in range(1, w.max_rounds + 1):
        round_dir = folder / f"round-{n:02d}"
        result = run_fio(job_file(w, target, str(round_dir / "fio")), round_dir, on_live, stop, target.fio_server)
        out.results.append(result)
        job = result.result["jobs"][0]
        out.rounds_iops.append(float(job["read"]["iops"] + job["write"]["iops"]))
        if on_round is not None:
            on_round(n, out.rounds_iops[-1])
        if stop is not None and stop.is_set():
            break
        if snia_steady_state(out.rounds_iops):
            out.steady = True
            break
    return out
