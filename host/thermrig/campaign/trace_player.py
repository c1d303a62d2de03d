"""Playing a chassis trace (hardware/chassis_trace.py) on the rig: each rig second the air target of the
trace at that moment is sent with SET (the firmware's own limits apply as to any SET); every telemetry
frame's chassis air is kept to judge the tracking (analysis/trace_tracking.py). The trace's time is the
rig's (telemetry uptime), so it runs at the simulated rig's speed as the physics do."""

from __future__ import annotations

import contextlib
import queue
import threading
from typing import Any

from thermrig.analysis.trace_tracking import tracking_error
from thermrig.hardware.chassis_trace import ChassisTrace
from thermrig.link.errors import NakError, RigTimeout
from thermrig.link.rig_link import RigLink

AIR_CHANNEL = "chassis_air"


class TracePlayer:
    def __init__(self, link: RigLink, trace: ChassisTrace) -> None:
        self.link = link
        self.trace = trace
        self.start_ms: int | None = None  # rig uptime at the trace's 0 s
        self.samples: list[tuple[float, float]] = []  # (seconds into the trace, chassis air °C)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._queue: queue.Queue | None = None
        self._started = threading.Event()

    def start(self) -> None:
        self._queue = self.link.subscribe()
        self._thread = threading.Thread(target=self._play, name="chassis-trace", daemon=True)
        self._thread.start()

    def elapsed_s(self) -> float:
        return self.samples[-1][0] if self.samples else 0.0

    def wait_until(self, seconds: float, stop: threading.Event) -> None:
        """Return once the trace has played this far (rig time), or stop is set."""
        while not stop.is_set() and self.elapsed_s() < seconds:
            stop.wait(0.1)

    def _play(self) -> None:
        assert self._queue is not None
        sent_s = -1
        while not self._stop.is_set():
            try:
                tel = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            if self.start_ms is None:
                self.start_ms = tel.uptime_ms
            t = (tel.uptime_ms - self.start_ms) / 1000
            with contextlib.suppress(KeyError):
                self.samples.append((t, tel.named(AIR_CHANNEL).value))
            if int(t) > sent_s:  # once per rig second
                sent_s = int(t)
                with contextlib.suppress(RigTimeout, NakError, OSError):
                    self.link.set(air=round(self.trace.at(t + 1) * 100))  # where the trace is next second

    def stop(self) -> dict[str, Any]:
        """Stop playing; the tracking error over what was played."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._queue is not None:
            self.link.unsubscribe(self._queue)
        return self.tracking()

    def tracking(self) -> dict[str, Any]:
        samples = list(self.samples)
        return tracking_error([s for s, _ in samples], [a for _, a in samples], self.trace.at)
