"""Walk a campaign's plan: each run is recorded (campaign.recording) while its phases run
(campaign.run_phases); each run gets a folder with its manifest. Ctrl-C leaves the rig safe, the data
flushed, the run marked aborted.

When InfluxDB is unreachable, the progress says so in one line; a run's points wait in its spool and
are sent as soon as the server answers, while the next runs go on. At the campaign's end the
orchestrator waits a bounded time for them; `unsent` names the runs whose points are not all in
InfluxDB after that (`thermrig db drain` sends them).

Each run's full summary is written as soon as its points are all in InfluxDB (as it ends, or once its
spool has drained); `unanalysed` names the runs whose summary is still incomplete at the campaign's end
(campaign.summaries completes them later). At its end the campaign writes its own results."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from thermrig.campaign.drive_thermal import check_hctm_levels
from thermrig.campaign.equilibrium import check_channels
from thermrig.campaign.plan import Plan, RunSpec
from thermrig.campaign.progress import Progress, ProgressDisplay
from thermrig.campaign.recorded_trace import resolve_recorded_traces
from thermrig.campaign.recording import InfluxWatch, RunRecording, manifest_for, run_tags
from thermrig.campaign.run_phases import Phases, Prompt
from thermrig.campaign.rundir import CampaignState, attempt_id
from thermrig.campaign.spec import CampaignError
from thermrig.campaign.summaries import analyse_campaign, analyse_run
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.writer import WriteProblem
from thermrig.dut.drive import DriveLost
from thermrig.fio.runner import FioError
from thermrig.testbed import Testbed

SETTLE_TIMEOUT_S = 30.0  # at the campaign's end: how long to wait for spools still draining
DRAIN_CHECK_S = 1.0  # while runs go on: how often the runs still sending are looked at


@dataclass(frozen=True)
class CampaignHooks:
    """Who follows a campaign: the operator asked to change the hardware (None: nobody is asked) and
    whoever shows its progress."""

    prompt: Prompt | None = None
    on_progress: Callable[[Progress], None] | None = None


class Orchestrator:
    def __init__(
        self,
        plan: Plan,
        folder: Path,
        bed: Testbed,
        influx: InfluxSettings,
        hooks: CampaignHooks | None = None,
        whole_campaign: bool = True,
    ) -> None:
        """bed: what the runs run on (its link, drive, simulation, the drive's identity and the tags every
        point carries besides the run's: a lab's place, test PC, firmware); whole_campaign False: the plan
        is one place's share of a campaign, whose results the caller writes once every share is done."""
        if bed.drive is None:
            raise CampaignError(f"testbed {bed.name} has no drive under test")
        hooks = hooks or CampaignHooks()
        link, drive, sim = bed.link, bed.drive, bed.sim
        self.bed = bed
        self.drive_identity = bed.identity
        self.point_tags = bed.tags
        self.whole_campaign = whole_campaign
        self.plan = plan
        self.folder = folder
        self.link = link
        self.influx = influx
        self.drive = drive
        self.sim = sim
        self.progress = Progress(total=len(plan.runs))
        self.display = ProgressDisplay(self.progress, hooks.on_progress)
        self.stop = threading.Event()
        self.phases = Phases(plan.campaign, bed, self.display, self.stop, hooks.prompt)
        self.draining: list[RunRecording] = []  # runs whose writer still sends their spool
        self.unsent: list[str] = []  # after run(): the runs whose points are not all in InfluxDB
        self.unanalysed: list[str] = []  # after run(): the ok runs whose full summary is not written
        self.campaign_results = False  # after run(): campaign_summary, campaign_effect, sensor_rank written
        self.readback_error = ""  # the last error of a summary's read back (its points all in InfluxDB)
        self._draining_lock = threading.Lock()
        self._watch_stop = threading.Event()

    def _watch_drains(self) -> None:
        """While runs go on: a run whose spool has drained is settled and analysed at once."""
        while not self._watch_stop.wait(DRAIN_CHECK_S):
            self._settle(drained_only=True)

    def run(self, state: CampaignState) -> None:
        if self.link.info is not None:
            check_channels(self.plan.campaign.equilibrium, self.link.info.channels)
        check_hctm_levels(self.plan.campaign, self.drive)  # before any run: the drive takes every level
        resolve_recorded_traces(self.plan.campaign, self.influx)  # trace = "influx:RUN_ID": read it now
        self.progress.done = len(state.completed)
        self._watch_stop.clear()
        watcher = threading.Thread(target=self._watch_drains, name="drain-watch", daemon=True)
        watcher.start()
        try:
            for i, spec in enumerate(self.plan.runs):
                if spec.run_id in state.completed:
                    continue
                self.progress.run = spec
                remaining = [r for r in self.plan.runs if r.run_id not in state.completed and r.index >= spec.index]
                self.progress.eta_s = sum(self.plan.estimate_s(r) for r in remaining)
                status = self._run_one(spec, self.plan.runs[i + 1] if i + 1 < len(self.plan.runs) else None)
                if status == "aborted":
                    raise KeyboardInterrupt
                if status == "ok":
                    state.mark_done(spec.run_id)
                self.progress.done += 1
                self._settle(drained_only=True)
        finally:
            self._watch_stop.set()
            watcher.join()
            self.progress.eta_s = 0.0
            self._settle(drained_only=False)
        if self.whole_campaign:
            self.display.show("analysing", "the campaign's summaries")
            readback = analyse_campaign(self.influx, self.plan.campaign.name)
            self.campaign_results = bool(readback)
            self.readback_error = self.readback_error or readback.error
        self.display.show("done", f"{len(self.plan.runs)} runs")

    def _settle(self, drained_only: bool) -> None:
        """Close the writers that have sent everything; with drained_only False, wait for the others
        (SETTLE_TIMEOUT_S in all) and note the runs still not all in InfluxDB."""
        with self._draining_lock:
            if not drained_only and any(not r.drained for r in self.draining):
                self.display.show("sending", f"{len(self.draining)} runs' points still spooled")
            deadline = time.monotonic() + SETTLE_TIMEOUT_S
            for recording in [r for r in self.draining if r.drained or not drained_only]:
                self.draining.remove(recording)
                self._settle_one(recording, deadline)

    def _settle_one(self, recording: RunRecording, deadline: float) -> None:
        if not recording.settle(max(0.0, deadline - time.monotonic())):
            self.unsent.append(recording.tags.run)
        elif recording.manifest.get("analysed") is False:  # its points are all in now: analyse it
            self._analyse(recording)

    def _outage(self, problem: WriteProblem) -> None:
        if problem.kept and not self.progress.influx:
            self.progress.influx = f"{problem.message}; points are kept in the spool and sent when it answers"
            self.display.show()

    def _back(self) -> None:
        if self.progress.influx:
            self.progress.influx = ""
            self.display.show()

    def _run_one(self, spec: RunSpec, next_run: RunSpec | None = None) -> str:
        run_id, attempt = attempt_id(self.folder, spec.run_id)  # a retried run records under ID.N
        run_dir = self.folder / run_id
        manifest = manifest_for(self.plan, spec, self.link, self.drive, self.drive_identity)
        if attempt > 1:
            manifest.update(run=run_id, attempt=attempt, plan_run=spec.run_id)
        if self.point_tags:
            manifest["lab"] = dict(self.point_tags)
        recording = RunRecording(
            run_dir,
            dataclasses.replace(run_tags(self.plan, spec), run=run_id, **self.point_tags),
            self.link,
            self.influx,
            self.drive.telemetry(),
            manifest,
            InfluxWatch(self._outage, self._back),
        )
        status, error = "failed", None
        recording.start()
        try:
            manifest.update(self.phases.run(spec, run_dir, recording.recorder, recording.tags, next_run))
            status = "ok"
        except KeyboardInterrupt:
            status = "aborted"
        except FioError as exc:  # this run failed; the campaign goes on (a resume retries it)
            error = str(exc)
        except (CampaignError, DriveLost) as exc:  # the rig faulted or went silent, the drive died: it stops
            error = str(exc)
            raise
        except Exception as exc:  # anything else stops the campaign too; the manifest still says what
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if status != "ok":
                self.bed.safe()
            else:
                recording.manifest["analysed"] = False  # until its full summary is written
                self.unanalysed.append(run_id)
            if not recording.finish(status, error):
                with self._draining_lock:
                    self.draining.append(recording)
            elif status == "ok":
                self._analyse(recording)
        return status

    def _analyse(self, recording: RunRecording) -> None:
        """The full run summary (docs/analysis.md) once every point is in InfluxDB; the manifest says it
        is written. A server gone now leaves `analysed: false`, which campaign.summaries retries."""
        readback = analyse_run(self.influx, recording.run_dir, recording.manifest)
        if readback:
            self.unanalysed.remove(recording.tags.run)
        else:
            self.readback_error = readback.error
