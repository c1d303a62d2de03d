"""The campaign folder: one sub-folder per run (manifest.json, fio's job, JSON result and logs, the
spool) and state.json, which says which runs are done so an interrupted campaign resumes there."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from thermrig.db.spool import pending_spools


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    with tmp.open() as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def instance_stamp() -> str:
    """When a campaign folder was started, UTC: part of every run ID, so running the same campaign again
    (into a new folder) never mixes its points with an earlier run's in InfluxDB."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S")


@dataclass
class CampaignState:
    folder: Path
    seed: int
    completed: list[str] = field(default_factory=list)
    started: str = field(default_factory=instance_stamp)

    @property
    def path(self) -> Path:
        return self.folder / "state.json"

    @classmethod
    def load(cls, folder: Path) -> CampaignState | None:
        try:
            data = json.loads((folder / "state.json").read_text())
        except (OSError, ValueError):
            return None
        return cls(folder, int(data["seed"]), list(data.get("completed", [])), str(data.get("started", "")))

    def save(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        _write_json(self.path, {"seed": self.seed, "started": self.started, "completed": self.completed})

    def mark_done(self, run_id: str) -> None:
        self.completed.append(run_id)
        self.save()


def attempt_id(folder: Path, run_id: str) -> tuple[str, int]:
    """The ID a run records under at this attempt, and the attempt's number: the run's own ID the first
    time, `ID.N` at its N-th. A failed, aborted or killed attempt keeps its folder and its points in
    InfluxDB under its own ID, so one run ID never holds two attempts' telemetry and fio logs."""
    n, name = 1, run_id
    while (folder / name).exists():
        n += 1
        name = f"{run_id}.{n}"
    return name, n


def last_attempt(folder: Path, run_id: str) -> Path:
    """The folder of the run's latest attempt (its own ID's folder when it has had one attempt or none)."""
    _, n = attempt_id(folder, run_id)
    return folder / (run_id if n <= 2 else f"{run_id}.{n - 1}")


def write_manifest(run_dir: Path, manifest: dict[str, Any]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    _write_json(run_dir / "manifest.json", manifest)


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((run_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def mark_all_stored(run_dir: Path) -> None:
    """After `thermrig db drain` sent a run's spool: its manifest says every point is in InfluxDB."""
    manifest = read_manifest(run_dir)
    if manifest is not None and manifest.get("all_points_stored") is False:
        manifest["all_points_stored"] = True
        write_manifest(run_dir, manifest)


def unsent_runs(campaign: str) -> dict[str, dict[str, Any]]:
    """The runs of a campaign whose points are not all in InfluxDB (some wait in their spool), with their
    manifests: run id -> manifest."""
    found = {}
    for spool in pending_spools():
        manifest = read_manifest(spool.path.parent)
        if manifest is not None and manifest.get("campaign") == campaign:
            found[spool.path.stem] = manifest
    return found
