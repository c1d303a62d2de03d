"""Walk a campaign's plan. Per run: the physical set-up (the operator, or the simulated rig), the chassis
profile, thermal equilibrium, a baseline, the fio workload with live and per-second data, and a
cool-down until the drive is back at its baseline. Everything is recorded through the spool; each run
gets a folder with its manifest. Ctrl-C leaves the rig safe, the data flushed, the run marked aborted."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from thermrig import __version__
from thermrig.analysis.consistency import consistency_score
from thermrig.analysis.summary_store import store_run
from thermrig.analysis.throttle_summary import logs_from_fio, throttle_summary
from thermrig.campaign.equilibrium import KEY_OF, EquilibriumWatch
from thermrig.campaign.plan import Plan, RunSpec
from thermrig.campaign.rundir import CampaignState, write_manifest
from thermrig.campaign.spec import CampaignError
from thermrig.db.local_server import free_port
from thermrig.db.query import QueryError
from thermrig.db.recorder import Recorder
from thermrig.db.schema import RunTags, drive_line, fio_interval_lines, fio_live_line, summary_line
from thermrig.db.settings import InfluxSettings
from thermrig.db.spool import Spool
from thermrig.db.writer import SpoolWriter
from thermrig.drive.monitor import DriveMonitor, Source, nvme_controller_for, nvme_source, smart_json_source
from thermrig.fio.rounds import run_rounds
from thermrig.fio.runner import FioError, LiveSample, LogPoint, fio_version, run_fio
from thermrig.fio.workloads import Target, is_random, is_write, job_file, parse_size
from thermrig.link.rig_link import RigLink
from thermrig.plant.drive_model import Pattern
from thermrig.plant.simulated_rig import SimulatedRig
from thermrig.protocol.messages import Telemetry


@dataclass
class Progress:
    """What the UI shows; the orchestrator updates it, the CLI draws it."""

    run: RunSpec | None = None
    eta_s: float = 0.0  # estimated time left: this run's remaining phases and the runs after it
    phase: str = ""
    done: int = 0
    total: int = 0
    detail: str = ""
    latest: Telemetry | None = None
    live: LiveSample | None = None


Prompt = Callable[[str], None]  # tells the operator what to change and returns once they confirm


class Orchestrator:
    def __init__(
        self,
        plan: Plan,
        folder: Path,
        link: RigLink,
        influx: InfluxSettings,
        target: Target,
        sim: SimulatedRig | None = None,
        prompt: Prompt | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        drive_identity: dict[str, str | None] | None = None,
    ) -> None:
        self.drive_identity = drive_identity or {}
        self.plan = plan
        self.campaign = plan.campaign
        self.folder = folder
        self.link = link
        self.influx = influx
        self.target = target
        self.sim = sim
        self.prompt = prompt
        self.on_progress = on_progress
        self.progress = Progress(total=len(plan.runs))
        self.stop = threading.Event()
        self._physical: dict[str, Any] | None = None

    def _show(self, phase: str | None = None, detail: str | None = None) -> None:
        if phase is not None:
            self.progress.phase = phase
        if detail is not None:
            self.progress.detail = detail
        if self.on_progress is not None:
            self.on_progress(self.progress)

    # --- the campaign ------------------------------------------------------------------------------

    def run(self, state: CampaignState) -> None:
        self.progress.done = len(state.completed)
        for spec in self.plan.runs:
            if spec.run_id in state.completed:
                continue
            self.progress.run = spec
            remaining = [r for r in self.plan.runs if r.run_id not in state.completed and r.index >= spec.index]
            self.progress.eta_s = sum(self.plan.estimate_s(r) for r in remaining)
            status = self._run_one(spec)
            if status == "aborted":
                raise KeyboardInterrupt
            if status == "ok":
                state.mark_done(spec.run_id)
            self.progress.done += 1
        self._show("done", f"{len(self.plan.runs)} runs")

    def _tags(self, spec: RunSpec) -> RunTags:
        return RunTags(
            rig=self.campaign.rig_name,
            run=spec.run_id,
            campaign=self.campaign.name,
            drive_model=self.campaign.drive.model,
            **spec.tags(),
        )

    def _run_one(self, spec: RunSpec) -> str:
        run_dir = self.folder / spec.run_id
        tags = self._tags(spec)
        spool = Spool.for_run(spec.run_id, run_dir)
        writer = SpoolWriter(spool, self.influx)
        recorder = Recorder(self.link, spool, tags)
        manifest: dict[str, Any] = self._manifest(spec)
        status, error = "failed", None
        writer.start()
        recorder.start()
        monitor = None
        source, described = self._drive_source()
        if source is not None:
            monitor = DriveMonitor(source, lambda fields, ns: recorder.append([drive_line(fields, ns, tags)]))
            monitor.start()
        manifest["drive"]["telemetry"] = described
        try:
            manifest.update(self._phases(spec, run_dir, recorder, tags))
            status = "ok"
        except KeyboardInterrupt:
            status = "aborted"
        except FioError as exc:  # this run failed; the campaign goes on (a resume retries it)
            error = str(exc)
        except CampaignError as exc:  # the rig faulted or went silent: the campaign stops
            error = str(exc)
            raise
        finally:
            if status != "ok":
                with contextlib.suppress(Exception):
                    self.link.command("SAFE")
            if monitor is not None:
                monitor.stop()
            recorder.stop(status)
            stored = writer.close(flush_timeout=30)
            manifest.update(status=status, error=error, end_utc=datetime.now(UTC).isoformat(), all_points_stored=stored)
            write_manifest(run_dir, manifest)
            if status == "ok" and stored:
                self._analyse(spec.run_id)
        return status

    def _analyse(self, run_id: str) -> None:
        """The full run summary (docs/analysis.md) once every point is in InfluxDB. The throttle fields are
        already written; a server gone now loses only the rest, which `thermrig analyze` recomputes."""
        with contextlib.suppress(QueryError):
            store_run(self.influx, self.campaign.name, run_id)

    def _drive_source(self) -> tuple[Source | None, str]:
        if self.target.virtual:
            if self.sim is None or self.sim.drive is None:
                raise CampaignError("the virtual drive needs the simulated rig with a drive profile")
            return smart_json_source(self.sim.drive.model.smart_log_json), "the virtual drive's smart-log"
        controller = nvme_controller_for(self.target.path)
        if controller is None:
            return None, "none"
        return nvme_source(controller), f"nvme smart-log and hwmon of {controller}"

    def _manifest(self, spec: RunSpec) -> dict[str, Any]:
        info = self.link.info
        return {
            "campaign": self.campaign.name,
            "campaign_file": str(self.campaign.path),
            "run": spec.run_id,
            "index": spec.index,
            "repeat": spec.repeat,
            "seed": self.plan.seed,
            "factors": {**spec.physical, "profile": spec.profile, "fan1_pct": spec.fan1_pct},
            "workload": spec.workload.__dict__,
            "versions": {
                "host": __version__,
                "fio": fio_version(),
                "firmware": f"{info.firmware} {info.version}" if info else None,
                "protocol": info.proto if info else None,
            },
            "rig": {"name": self.campaign.rig_name, "port": self.link.port, "board": info.board if info else None},
            "drive": {
                "target": self.target.path,
                "model": self.campaign.drive.model,
                "serial": self.campaign.drive.serial,
            },
            "start_utc": datetime.now(UTC).isoformat(),
        }

    # --- one run -----------------------------------------------------------------------------------

    def _phase(self, recorder: Recorder, name: str, detail: str = "") -> None:
        recorder.event("phase", f"{name} {detail}".strip())
        self._show(name, detail)

    def _phases(self, spec: RunSpec, run_dir: Path, recorder: Recorder, tags: RunTags) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self._setup_physical(spec)
        profile = self.campaign.profiles[spec.profile]
        args = profile.set_args()
        if spec.fan1_pct is not None:
            args["fan1"] = round(spec.fan1_pct * 10)
        self.link.set(**args)
        self._phase(recorder, "equilibrium", spec.profile)
        out["equilibrium"] = self._wait_equilibrium()
        self._phase(recorder, "baseline")
        baseline = self._baseline()
        out["baseline_drive_ctrl_c"] = baseline
        self._phase(recorder, "workload", spec.workload.name)
        out["workload_result"] = self._workload(spec, run_dir, recorder, tags)
        self._phase(recorder, "cooldown")
        out["cooldown"] = self._cooldown(baseline)
        return out

    def _setup_physical(self, spec: RunSpec) -> None:
        if spec.physical == self._physical:
            return
        if self.sim is not None:
            self.sim.set_physical(spec.physical.get("slot"), spec.physical.get("heatsink"))
        elif self.prompt is not None and spec.physical:
            wanted = ", ".join(f"{k} = {v}" for k, v in spec.physical.items())
            self._show("operator", wanted)
            self.prompt(f"Set up the rig: {wanted}. Confirm when done.")
        self._physical = dict(spec.physical)

    def _frames(self, seconds_rig: float, until: Callable[[Telemetry], bool] | None = None) -> list[Telemetry]:
        """Telemetry for up to seconds_rig of rig time, or until the predicate holds."""
        q = self.link.subscribe()
        frames: list[Telemetry] = []
        try:
            start = None
            while not self.stop.is_set():
                try:
                    tel = q.get(timeout=5.0)
                except queue.Empty as exc:
                    raise CampaignError(f"no telemetry from the rig on {self.link.port} for 5 s") from exc
                if tel.faults:
                    raise CampaignError(f"the rig faulted: {tel.faults!r}; the run stops (rig is safe)")
                frames.append(tel)
                self.progress.latest = tel
                start = start if start is not None else tel.uptime_ms
                if (until is not None and until(tel)) or tel.uptime_ms - start >= seconds_rig * 1000:
                    break
                if len(frames) % 10 == 0:
                    self._show()
        finally:
            self.link.unsubscribe(q)
        if self.stop.is_set():
            raise KeyboardInterrupt
        return frames

    def _wait_equilibrium(self) -> dict[str, Any]:
        rule = self.campaign.equilibrium
        watch = EquilibriumWatch(rule)

        def settled(tel: Telemetry) -> bool:
            watch.add(tel)
            if len(watch.samples) % 10 == 0:
                rates = watch.rates_c_per_min()
                self._show(detail=", ".join(f"{k} {v:+.2f} °C/min" for k, v in rates.items()))
            return watch.reached()

        frames = self._frames(rule.timeout_s, settled)
        reached = watch.reached()
        seconds = (frames[-1].uptime_ms - frames[0].uptime_ms) / 1000 if frames else 0.0
        return {"reached": reached, "after_s": seconds, "rates_c_per_min": watch.rates_c_per_min()}

    def _baseline(self) -> float:
        frames = self._frames(self.campaign.baseline_s)
        return sum(f.temps[KEY_OF["drive_ctrl"]].value for f in frames) / len(frames)

    def _workload(self, spec: RunSpec, run_dir: Path, recorder: Recorder, tags: RunTags) -> dict[str, Any]:
        def live(sample: LiveSample) -> None:
            self.progress.live = sample
            recorder.append(
                [
                    fio_live_line(
                        sample.timestamp_ms,
                        sample.read_bps,
                        sample.write_bps,
                        sample.read_iops,
                        sample.write_iops,
                        tags,
                    )
                ]
            )
            self._show(detail=f"{(sample.read_bps + sample.write_bps) / 1e6:,.0f} MB/s")

        summary: dict[str, Any] = {}
        scale = self._scale
        if spec.workload.kind == "snia_steady_state":
            with self._drive_served(spec) as target:
                rounds = run_rounds(
                    spec.workload,
                    target,
                    run_dir,
                    live,
                    self.stop,
                    lambda n, iops: self._show(detail=f"round {n}: {iops / scale:,.0f} IOPS"),
                )
            for i, r in enumerate(rounds.results, start=1):
                recorder.append(
                    fio_interval_lines(
                        {"bw": r.bw, "iops": r.iops, "lat": r.lat}, {1: f"{spec.workload.name}-round{i:02d}"}, tags
                    )
                )
            summary.update(
                rounds=len(rounds.rounds_iops),
                steady=rounds.steady,
                steady_iops=sum(rounds.rounds_iops[-5:]) / len(rounds.rounds_iops[-5:]) / scale,
            )
            result = rounds.results[-1]
        else:
            with self._drive_served(spec) as target:
                job = job_file(spec.workload, target, str(run_dir / "fio"))
                result = run_fio(job, run_dir, live, self.stop)
            names = {i: j["jobname"] for i, j in enumerate(result.result.get("jobs", []), start=1)}
            recorder.append(fio_interval_lines({"bw": result.bw, "iops": result.iops, "lat": result.lat}, names, tags))
        summary.update(self._throttle(result.bw))
        if spec.workload.kind == "consistency":  # scored on the random-write job, not the fill
            last_job = max(p.job for p in result.iops) if result.iops else 1
            iops = [float(p.value) / scale for p in result.iops if p.job == last_job]
            if len(iops) >= 2:
                score = consistency_score(iops, spec.workload.score_window_s)
                summary.update(
                    iops_average=score.average, iops_consistency=score.consistency, scored_seconds=score.seconds
                )
        recorder.append([summary_line(summary, time.time_ns(), tags)])
        if self.stop.is_set():
            raise KeyboardInterrupt
        return summary

    @property
    def _scale(self) -> float:
        """Wire bytes per drive byte: run summaries hold bandwidth and IOPS at the drive's scale."""
        return self.campaign.drive.scale if self.target.virtual else 1.0

    def _throttle(self, bw: list[LogPoint]) -> dict[str, Any]:
        """Onset and depth of the workload's measured job (analysis.throttle_summary); for the virtual
        drive, bandwidth back at the drive's scale."""
        return throttle_summary(logs_from_fio(bw), self._scale).fields(self._scale)

    @contextlib.contextmanager
    def _drive_served(self, spec: RunSpec) -> Iterator[Target]:
        """The virtual drive: told what fio will do, and the simulation at real time while fio runs (so
        fio's timing is true); faster again afterwards."""
        if not self.target.virtual:
            yield self.target
            return
        assert self.sim is not None and self.sim.drive is not None
        w = spec.workload.resolved()
        write = is_write(w.kind)
        port = self.sim.drive.port if write else free_port()
        pattern = Pattern(write=write, random=is_random(w.kind), bs=parse_size(w.bs))
        self.sim.set_speed(1.0)
        try:
            if w.kind in ("consistency", "snia_steady_state") and w.fill:
                self.sim.drive.model.precondition()  # the fill, without moving the capacity through loopback
            self.sim.drive.announce(pattern, None if write else port)
            yield replace(self.target, net_port=port)
        finally:
            self.sim.drive.idle()
            self.sim.set_speed(self.campaign.sim_speed)

    def _cooldown(self, baseline: float) -> dict[str, Any]:
        rule = self.campaign.cooldown
        key = KEY_OF["drive_ctrl"]
        frames = self._frames(rule.timeout_s, lambda t: t.temps[key].value <= baseline + rule.margin_c)
        back = frames[-1].temps[key].value <= baseline + rule.margin_c if frames else False
        seconds = (frames[-1].uptime_ms - frames[0].uptime_ms) / 1000 if frames else 0.0
        return {"back_to_baseline": back, "after_s": seconds}
