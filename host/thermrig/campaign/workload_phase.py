"""The workload phase of a run: fio runs the workload (per kind, thermrig.fio.kinds) while its live and
per-second data are recorded, and the run's summary is computed. With the virtual drive (a block device
over NBD), a fill may be set the fast way and the simulation runs at real time while fio runs (so
fio's timing is true)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from thermrig.campaign.plan import RunSpec
from thermrig.campaign.progress import Board
from thermrig.campaign.run_summary import lab_job_results, run_summary
from thermrig.campaign.spec import Campaign
from thermrig.db.recorder import Recorder
from thermrig.db.schema import RunTags, fio_interval_lines, fio_live_line, summary_line
from thermrig.fio.kinds import run_workload, starts_filled
from thermrig.fio.runner import LiveSample
from thermrig.fio.workloads import LAB_KIND, Target, parse_size
from thermrig.sim.simulated_rig import SimulatedRig
from thermrig.virtual_drive.fast_fill import fast_fill


class WorkloadPhase:
    def __init__(
        self, campaign: Campaign, target: Target, board: Board, stop: threading.Event, sim: SimulatedRig | None
    ) -> None:
        self.campaign = campaign
        self.target = target
        self.board = board
        self.stop = stop
        self.sim = sim
        self.extra_fields: Callable[[], dict[str, Any]] | None = None  # e.g. a chassis trace's tracking error
        self.equilibrium: Callable[[], object] | None = None  # rate_search: waits for it between steps

    @property
    def scale(self) -> float:
        """Wire bytes per drive byte: run summaries hold bandwidth and IOPS at the drive's scale."""
        return self.campaign.drive.scale if self.target.virtual else 1.0

    def run(self, spec: RunSpec, run_dir: Path, recorder: Recorder, tags: RunTags) -> dict[str, Any]:
        def live(sample: LiveSample) -> None:
            self.board.progress.live = sample
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
            self.board.show(detail=f"{(sample.read_bps + sample.write_bps) / 1e6:,.0f} MB/s")

        with self.drive_served(spec) as target:
            ran = run_workload(
                spec.workload,
                target,
                run_dir,
                live,
                self.stop,
                lambda note: self.board.show(detail=note),
                self.scale,
                self._between_steps,
            )
        for result, names in ran.logs:
            recorder.append(fio_interval_lines({"bw": result.bw, "iops": result.iops, "lat": result.lat}, names, tags))
        summary = run_summary(ran, self.scale)
        if self.extra_fields is not None:
            summary.update(self.extra_fields())
        recorder.append([summary_line(summary, time.time_ns(), tags)])
        if spec.workload.kind == LAB_KIND:  # one result per job of the lab's file
            summary["jobs"] = lab_job_results(ran, self.scale, tags, recorder)
        if self.stop.is_set():
            raise KeyboardInterrupt
        return summary

    def _between_steps(self) -> None:
        """rate_search: the rig back at equilibrium, the drive idle and the simulation at its own speed
        meanwhile (fio runs at real time again after)."""
        if self.equilibrium is None:
            return
        if self.sim is not None and self.sim.drive is not None:
            self.sim.drive.idle()
            self.sim.set_speed(self.campaign.sim_speed)
        try:
            self.equilibrium()
        finally:
            if self.sim is not None and self.sim.drive is not None:
                self.sim.set_speed(1.0)

    @contextlib.contextmanager
    def drive_served(self, spec: RunSpec) -> Iterator[Target]:
        """The virtual drive over NBD: a fill set the fast way unless the campaign asks for the real
        one, and the simulation at real time while fio runs (so fio's timing is true); faster again
        afterwards."""
        if not self.target.virtual:
            yield self.target
            return
        assert self.sim is not None and self.sim.drive is not None
        w = spec.workload.resolved()
        prefilled = self.campaign.drive.fast_fill and starts_filled(w)
        if prefilled:
            fast_fill(self.sim.drive.model, w.kind, parse_size(w.span) if w.span else None)
        self.sim.set_speed(1.0)
        try:
            yield replace(self.target, nbd_uri=self.sim.drive.uri, prefilled=prefilled)
        finally:
            self.sim.drive.idle()
            self.sim.set_speed(self.campaign.sim_speed)
