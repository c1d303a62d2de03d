"""`thermrig calibrate check`: the chosen campaigns through the whole pipeline (calibration.pipeline), the
published numbers they are judged against (calibration.report) and report.json beside them."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from thermrig.calibration.check import CalibrationCheck
from thermrig.calibration.pipeline import Outcome, groups, run_groups
from thermrig.calibration.report import heatsink_check, puget_checks, sm951_checks


@dataclass(frozen=True)
class Acceptance:
    checks: list[CalibrationCheck]
    outcome: Outcome

    @property
    def passed(self) -> bool:
        """Every campaign ran and every cell is within tolerance."""
        return not self.outcome.failed and all(c.ok for c in self.checks)


def acceptance_checks(outcome: Outcome, quick: bool, only_seeds: bool) -> list[CalibrationCheck]:
    """The checks of the campaigns chosen: the Puget cells (quick: the ones run), the heatsink and the
    SM951's, and seeds 000 and 004 where they ran."""
    rows = outcome.rows
    checks = puget_checks([r for name, rs in rows.items() if "puget" in name or "quick" in name for r in rs])
    if quick:
        return [c for c in checks if c.measured != "not run"]
    if only_seeds:
        return outcome.seeds
    checks.append(heatsink_check(rows.get("calibrate-heatsink", [])))
    seq = rows.get("calibrate-sm951-seq", [])
    checks += sm951_checks(seq[0].onset_s if seq else None, outcome.iops)
    return checks + outcome.seeds


def write_report(path: Path, checks: list[CalibrationCheck], outcome: Outcome) -> None:
    path.write_text(
        json.dumps(
            {
                "checks": [asdict(c) for c in checks],
                "wall_s": outcome.wall_s,
                "failed": outcome.failed,
                "resumed": outcome.resumed,
                "set_aside": outcome.set_aside,
                "drive_smart": outcome.drive_smart,
                # every run read back: onset, depth, the onset's cause, host stalls, worst lag (bench figures)
                "runs": {name: [asdict(r) for r in rs] for name, rs in outcome.rows.items()},
            },
            indent=2,
        )
    )


def accept(
    out: Path,
    quick: bool,
    seeds: bool,
    only_seeds: bool,
    jobs: int,
    speed: float,
    scale: float,
    on_progress: Callable[[dict[str, tuple[int, int]]], None] | None = None,
) -> Acceptance:
    """The chosen campaigns run (calibration.pipeline.run_groups: on_progress gets each one's runs done
    of its runs), judged, and report.json written under out."""
    outcome = run_groups(groups(quick, seeds and not quick, only_seeds), out, jobs, speed, scale, on_progress)
    checks = acceptance_checks(outcome, quick, only_seeds)
    write_report(out / "report.json", checks, outcome)
    return Acceptance(checks, outcome)
