"""The workload phase of a run: fio runs the workload (per kind, thermrig.fio.workload_run) while its live and
per-second data are recorded, and the run's summary is computed. A drive that can take a fill's state
at once (the virtual drive) is given it unless the campaign asks for the real fill; while fio runs the
drive is serving (the virtual drive's simulation then runs at real time, so fio's timing is true)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from thermrig.campaign.plan import RunSpec
from thermrig.campaign.progress import ProgressDisplay
from thermrig.campaign.run_summary import lab_job_results, run_summary
from thermrig.campaign.spec import Campaign
from thermrig.db.recorder import Recorder
from thermrig.db.schema import RunTags, fio_interval_lines, fio_live_line, summary_line
from thermrig.dut.drive import DriveUnderTest
from thermrig.fio.runner import LiveSample
from thermrig.fio.workload_run import run_workload
from thermrig.fio.workload_setup import WorkloadSetup
from thermrig.fio.workloads import WorkloadKind


class WorkloadPhase:
    def __init__(
        self, campaign: Campaign, drive: DriveUnderTest, display: ProgressDisplay, stop: threading.Event
    ) -> None:
        self.campaign = campaign
        self.drive = drive
        self.display = display
        self.stop = stop
        self.extra_fields: Callable[[], dict[str, Any]] | None = None  # e.g. a chassis trace's tracking error
        self.equilibrium: Callable[[], object] | None = None  # rate_search: waits for it between steps

    @property
    def scale(self) -> float:
        """Wire bytes per drive byte: run summaries hold bandwidth and IOPS at the drive's scale."""
        return self.drive.scale

    def run(self, spec: RunSpec, run_dir: Path, recorder: Recorder, tags: RunTags) -> dict[str, Any]:
        def live(sample: LiveSample) -> None:
            self.display.progress.live = sample
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
            self.display.show(detail=f"{(sample.read_bps + sample.write_bps) / 1e6:,.0f} MB/s")

        fill = spec.workload.fill_state()
        prefilled = fill is not None and self.campaign.drive.fast_fill and self.drive.take_fill(fill)
        with contextlib.ExitStack() as serving:
            serving.enter_context(self.drive.serving())
            setup = WorkloadSetup(self.drive, run_dir, live, self.stop, lambda note: self.display.show(detail=note))
            ran = run_workload(spec.workload, setup, prefilled, lambda: self._between_steps(serving))
        for result, names in ran.logs:
            recorder.append(fio_interval_lines({"bw": result.bw, "iops": result.iops, "lat": result.lat}, names, tags))
        summary = run_summary(ran, self.scale)
        if self.extra_fields is not None:
            summary.update(self.extra_fields())
        recorder.append([summary_line(summary, time.time_ns(), tags)])
        if spec.workload.kind == WorkloadKind.LAB:  # one result per job of the lab's file
            summary["jobs"] = lab_job_results(ran, self.scale, tags, recorder)
        if self.stop.is_set():
            raise KeyboardInterrupt
        return summary

    def _between_steps(self, serving: contextlib.ExitStack) -> None:
        """rate_search: the rig back at equilibrium between steps, the drive not serving meanwhile (idle,
        a simulation at its own pace), serving again for the next step."""
        if self.equilibrium is None:
            return
        serving.close()
        try:
            self.equilibrium()
        finally:
            serving.enter_context(self.drive.serving())
