"""The workload phase of a run: fio runs the workload (per kind, thermrig.fio.kinds) while its live and
per-second data are recorded, and the run's summary is computed. A drive that can take a fill's state
at once (the virtual drive) is given it unless the campaign asks for the real fill; while fio runs the
drive is serving (the virtual drive's simulation then runs at real time, so fio's timing is true)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from thermrig.campaign.plan import RunSpec
from thermrig.campaign.progress import ProgressDisplay
from thermrig.campaign.run_summary import run_summary
from thermrig.campaign.spec import Campaign
from thermrig.db.recorder import Recorder
from thermrig.db.schema import RunTags, fio_interval_lines, fio_live_line, summary_line
from thermrig.dut.drive import DriveUnderTest
from thermrig.fio.kinds import run_workload
from thermrig.fio.runner import LiveSample


class WorkloadPhase:
    def __init__(
        self, campaign: Campaign, drive: DriveUnderTest, display: ProgressDisplay, stop: threading.Event
    ) -> None:
        self.campaign = campaign
        self.drive = drive
        self.display = display
        self.stop = stop

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
        with self.drive.serving():
            ran = run_workload(
                spec.workload,
                self.drive,
                run_dir,
                live,
                self.stop,
                lambda note: self.display.show(detail=note),
                prefilled,
            )
        for result, names in ran.logs:
            recorder.append(fio_interval_lines({"bw": result.bw, "iops": result.iops, "lat": result.lat}, names, tags))
        summary = run_summary(ran, self.scale)
        recorder.append([summary_line(summary, time.time_ns(), tags)])
        if self.stop.is_set():
            raise KeyboardInterrupt
        return summary
