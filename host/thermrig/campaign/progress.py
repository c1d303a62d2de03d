"""What the campaign's UI shows: the orchestrator and the phases update it, the CLI draws it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from thermrig.campaign.plan import RunSpec
from thermrig.fio.runner import LiveSample
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
    influx: str = ""  # while InfluxDB does not answer: what happens to the points


class ProgressDisplay:
    """The progress and whoever draws it: show() updates the phase or its detail and redraws."""

    def __init__(self, progress: Progress, on_progress: Callable[[Progress], None] | None) -> None:
        self.progress = progress
        self.on_progress = on_progress

    def show(self, phase: str | None = None, detail: str | None = None) -> None:
        if phase is not None:
            self.progress.phase = phase
        if detail is not None:
            self.progress.detail = detail
        if self.on_progress is not None:
            self.on_progress(self.progress)
