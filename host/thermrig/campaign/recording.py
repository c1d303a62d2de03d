"""One run's recording: its spool (in the run's folder), the writer draining it to InfluxDB, the
recorder of the rig's telemetry and events, the drive's own telemetry, and the manifest that says what
was run on what (host, fio, firmware, rig, drive identity) and how it ended.

The writer outlives the run: after an InfluxDB outage it keeps draining the run's spool while the
campaign goes on, and the manifest's all_points_stored is rewritten once it has (settle)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from thermrig import __version__
from thermrig.campaign.plan import Plan, RunSpec
from thermrig.campaign.rundir import write_manifest
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.recording_session import RecordingSession
from thermrig.db.schema import RunTags, drive_line
from thermrig.db.spool import remember_folder
from thermrig.db.writer import WriteProblem
from thermrig.drive.monitor import DriveMonitor
from thermrig.dut.drive import DriveTelemetry, DriveUnderTest
from thermrig.fio.runner import fio_version
from thermrig.link.rig_link import RigLink

FINISH_FLUSH_S = 10.0  # at a run's end, with InfluxDB answering: the last second's points


def run_tags(plan: Plan, spec: RunSpec) -> RunTags:
    c = plan.campaign
    return RunTags(rig=c.rig_name, run=spec.run_id, campaign=c.name, drive_model=c.drive.model, **spec.tags())


def manifest_for(
    plan: Plan, spec: RunSpec, link: RigLink, drive: DriveUnderTest, identity: dict[str, str | None]
) -> dict[str, Any]:
    """The manifest as the run starts; how it ended is added by RunRecording.finish."""
    c = plan.campaign
    info = link.info
    return {
        "campaign": c.name,
        "campaign_file": str(c.path),
        "run": spec.run_id,
        "index": spec.index,
        "repeat": spec.repeat,
        "seed": plan.seed,
        "design": plan.design(),  # how the run order was drawn (order = "blocks" or random)
        "factors": {**spec.physical, "profile": spec.profile, "fan1_pct": spec.fan1_pct}
        | ({"hctm": spec.hctm.label} if spec.hctm is not None else {}),
        "workload": spec.workload.__dict__,
        "versions": {
            "host": __version__,
            "fio": fio_version(),
            "firmware": f"{info.firmware} {info.version}" if info else None,
            "protocol": info.proto if info else None,
        },
        "rig": {"name": c.rig_name, "port": link.port, "board": info.board if info else None},
        "drive": {"target": drive.name, "model": c.drive.model, "serial": c.drive.serial, **identity},
        "start_utc": datetime.now(UTC).isoformat(),
    }


@dataclass(frozen=True)
class InfluxWatch:
    """Who is told when InfluxDB stops taking a run's points (they wait in its spool) and when it takes
    them again."""

    on_outage: Callable[[WriteProblem], None] | None = None
    on_back: Callable[[], None] | None = None


class RunRecording:
    """Everything a run records, started together and finished together."""

    def __init__(
        self,
        run_dir: Path,
        tags: RunTags,
        link: RigLink,
        influx: InfluxSettings,
        telemetry: DriveTelemetry,
        manifest: dict[str, Any],
        watch: InfluxWatch | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.tags = tags
        self.link = link
        remember_folder(run_dir.parent)  # `thermrig db drain` finds what an outage or a crash leaves here
        watch = watch or InfluxWatch()
        self.session = RecordingSession(link, tags, influx, run_dir, on_error=watch.on_outage, on_back=watch.on_back)
        self.spool, self.writer, self.recorder = self.session.spool, self.session.writer, self.session.recorder
        self.manifest = manifest
        self.manifest["drive"]["telemetry"] = telemetry.described
        self.monitor = (
            None
            if telemetry.source is None
            else DriveMonitor(telemetry.source, lambda fields, ns: self.recorder.append([drive_line(fields, ns, tags)]))
        )

    def start(self) -> None:
        self.manifest["status"] = "running"  # until finish(): a manifest that still says so was cut short
        write_manifest(self.run_dir, self.manifest)
        self.session.start()
        if self.monitor is not None:
            self.monitor.start()

    def finish(self, status: str, error: str | None) -> bool:
        """Stop recording and write the manifest; whether every point is in InfluxDB already. If not,
        the writer goes on draining in the background until settle()."""
        if self.monitor is not None:
            self.monitor.stop()
        self.session.stop(status)
        stored = self.writer.healthy and self.writer.wait_empty(FINISH_FLUSH_S)
        self.manifest.update(
            status=status, error=error, end_utc=datetime.now(UTC).isoformat(), all_points_stored=stored
        )
        write_manifest(self.run_dir, self.manifest)
        if stored:
            self.session.close(flush_timeout=0)
        return stored

    def settle(self, timeout: float) -> bool:
        """Stop the writer once it has sent what it can within timeout; the manifest says the outcome.
        Whether every point is in InfluxDB (if not, they wait in the spool for `thermrig db drain`)."""
        stored = self.session.close(flush_timeout=timeout)
        self.manifest["all_points_stored"] = stored
        write_manifest(self.run_dir, self.manifest)
        return stored

    @property
    def drained(self) -> bool:
        return self.spool.pending_bytes() == 0
