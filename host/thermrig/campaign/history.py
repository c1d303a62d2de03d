"""What a rig's recorded runs took, phase by phase, read from their manifests (`rig_time_s`, written by
campaign.run_phases; older manifests give the equilibrium's and cool-down's `after_s`): the planner's
estimates by chassis transition and by profile and workload, instead of fixed guesses."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

START = "-"  # the condition before a campaign's first run, or after a hardware change: unknown


@dataclass(frozen=True)
class RunRecord:
    """One recorded run's phases in rig time."""

    rig: str
    before: str  # the chassis condition the run started from: the previous run's profile, or START
    profile: str
    workload: str  # kind and runtime, e.g. "seq_write 60 s"
    rule: str  # the equilibrium rule it was judged by
    cooldown_mode: str
    equilibrium_s: float
    baseline_s: float | None
    cooldown_s: float
    transition: str = "passive"  # how a change of chassis condition was taken: waited out or driven
    cooldown_skipped: bool = False  # no cool-down: the next run was in another condition


def workload_key(workload: dict[str, Any]) -> str:
    return f"{workload.get('kind')} {workload.get('runtime_s')} s"


def _record(m: dict[str, Any], before: str) -> RunRecord | None:
    try:
        baseline = (m.get("rig_time_s") or {}).get("baseline")  # older manifests: not recorded
        return RunRecord(
            rig=m["rig"]["name"],
            before=before,
            profile=str(m["factors"]["profile"]),
            workload=workload_key(m["workload"]),
            rule=m["equilibrium"].get("rule", "trend"),
            cooldown_mode=m["cooldown"].get("mode", "passive"),
            equilibrium_s=float(m["equilibrium"]["after_s"]),
            baseline_s=None if baseline is None else float(baseline),
            # its rig time: with an active cool-down's fans full past the margin, more than its after_s
            cooldown_s=float((m.get("rig_time_s") or {}).get("cooldown", m["cooldown"]["after_s"])),
            transition=m["equilibrium"].get("transition", "passive"),
            cooldown_skipped=bool(m["cooldown"].get("skipped", False)),
        )
    except (KeyError, TypeError, ValueError):  # an aborted or failed run, or another shape: not history
        return None


def _physical(m: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in m.get("factors", {}).items() if k not in ("profile", "fan1_pct")}


def records_of_campaign(manifests: Iterable[dict[str, Any]]) -> list[RunRecord]:
    """A campaign folder's runs in their order, each with the condition it started from."""
    out = []
    previous: dict[str, Any] | None = None
    for m in sorted(manifests, key=lambda m: (m.get("start_utc", ""), m.get("index", 0))):
        same_setup = previous is not None and _physical(previous) == _physical(m)
        before = str(previous["factors"]["profile"]) if previous is not None and same_setup else START
        if m.get("status") == "ok" and (r := _record(m, before)) is not None:
            out.append(r)
        previous = m
    return out


@dataclass(frozen=True)
class History:
    """Recorded runs of one rig; each estimate is a median, None when nothing like it was recorded."""

    rig: str
    runs: tuple[RunRecord, ...]
    source: str  # where they were read

    @classmethod
    def read(cls, folder: Path, rig: str) -> History:
        """Every manifest under folder (a campaign folder or a folder of them) of the named rig."""
        by_campaign: dict[Path, list[dict[str, Any]]] = {}
        for path in sorted(folder.rglob("manifest.json")) if folder.is_dir() else ():
            try:
                m = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(m, dict) and m.get("rig", {}).get("name") == rig:
                by_campaign.setdefault(path.parent.parent, []).append(m)
        runs = [r for ms in by_campaign.values() for r in records_of_campaign(ms)]
        return cls(rig, tuple(runs), str(folder))

    def _median(self, values: list[float]) -> float | None:
        return statistics.median(values) if values else None

    def equilibrium_s(
        self, before: str, profile: str, rule: str, cooldown_mode: str, transition: str = "passive"
    ) -> float | None:
        """By transition (from the previous condition to this one); else by whether the condition changed.
        Runs judged by the same rule after the same kind of cool-down only (an active one leaves the drive
        cooler than the profile keeps it), their changes of condition taken the same way."""
        runs = [
            r for r in self.runs if r.rule == rule and r.cooldown_mode == cooldown_mode and r.transition == transition
        ]
        same = [r.equilibrium_s for r in runs if r.before == before and r.profile == profile]
        if same:
            return self._median(same)
        unchanged = before == profile
        return self._median([r.equilibrium_s for r in runs if (r.before == r.profile) == unchanged])

    def baseline_s(self, baseline: str) -> float | None:
        """Rig time of the baseline phase: a tail baseline takes none unless the equilibrium was shorter."""
        known = [r.baseline_s for r in self.runs if r.baseline_s is not None]
        return self._median([s for s in known if (s == 0) == (baseline == "tail")])

    def cooldown_s(self, profile: str, workload: str, mode: str) -> float | None:
        """By profile and workload; else by workload; else by profile (cool-downs that were not skipped)."""
        runs = [r for r in self.runs if r.cooldown_mode == mode and not r.cooldown_skipped]
        for match in (
            lambda r: r.profile == profile and r.workload == workload,
            lambda r: r.workload == workload,
            lambda r: r.profile == profile,
        ):
            values = [r.cooldown_s for r in runs if match(r)]
            if values:
                return self._median(values)
        return None
