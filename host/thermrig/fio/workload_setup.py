"""What a workload runs on and reports to, as it travels from the campaign to each kind's runner."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from thermrig.dut.drive import DriveUnderTest
from thermrig.fio.runner import LiveSample


@dataclass(frozen=True)
class WorkloadSetup:
    """target: the drive under test; folder: where the run's fio files go; on_live: each live sample;
    stop: set to end the workload early; on_note: progress text between fio runs."""

    target: DriveUnderTest
    folder: Path
    on_live: Callable[[LiveSample], None]
    stop: threading.Event
    on_note: Callable[[str], None]
