"""Poll the drive's own telemetry at 1 Hz during a run: `nvme smart-log` and hwmon, side by side with
the rig's thermocouples (the readable sensor is often not the one that throttles)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from thermrig.drive.hwmon import nvme_hwmon_dir, read_hwmon
from thermrig.drive.smart import SmartError, SmartReader, parse_smart_log

_NVME = re.compile(r"/dev/(nvme\d+)(n\d+)?(p\d+)?$")


def nvme_controller_for(target: str) -> str | None:
    """ "nvme0" for /dev/nvme0n1, or for a file on a filesystem that lives on it; else None."""
    device = target
    if not target.startswith("/dev/"):
        r = subprocess.run(
            ["findmnt", "-n", "-o", "SOURCE", "--target", str(Path(target).parent)], capture_output=True, text=True
        )
        device = r.stdout.strip()
    m = _NVME.match(device)
    return m.group(1) if m else None


Source = Callable[[], dict[str, float | int]]


def nvme_source(controller: str) -> Source:
    """A real NVMe controller: `nvme smart-log` (with the OCP extended SMART log where the drive has it)
    and its hwmon sensors."""
    smart = SmartReader(f"/dev/{controller}")

    def sample() -> dict[str, float | int]:
        fields: dict[str, float | int] = {}
        with contextlib.suppress(SmartError, subprocess.TimeoutExpired):
            fields.update(smart.read())
        hw = nvme_hwmon_dir(controller)
        if hw is not None:
            for reading in read_hwmon(hw):
                fields[reading.field] = reading.celsius
        return fields

    return sample


def smart_json_source(smart_log_json: Callable[[], str]) -> Source:
    """Anything that prints what `nvme smart-log -o json` prints (the virtual drive), parsed the same way."""
    return lambda: parse_smart_log(smart_log_json()).fields()


class DriveMonitor:
    """Calls sink(fields, utc_ns) with whatever the drive reports: once in start(), before the run's work
    begins (the drive's account from before its first write: analysis.drop_cause counts a job's writes
    from it), then once a second on the whole second."""

    def __init__(self, source: Source, sink: Callable[[dict[str, float | int], int], None]) -> None:
        self.source = source
        self.sink = sink
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="drive-monitor", daemon=True)

    def start(self) -> None:
        self._emit()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def sample(self) -> dict[str, float | int]:
        return self.source()

    def _emit(self) -> None:
        with contextlib.suppress(OSError):
            fields = self.sample()
            if fields:
                self.sink(fields, time.time_ns())

    def _loop(self) -> None:
        while not self._stop.wait(1.0 - (time.time() % 1.0)):
            self._emit()
