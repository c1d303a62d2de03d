"""Record a rig's telemetry and link events: each frame is timestamped in UTC from the rig's uptime
(through the time sync), appended to the run's spool (fsync'd), and drained to InfluxDB behind."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass

from thermrig.db.schema import RunTags, event_line, link_event_line, telemetry_lines
from thermrig.db.spool import Spool
from thermrig.link.rig_link import LinkEvent, RigLink, RigTimeout
from thermrig.protocol.messages import Telemetry


@dataclass
class RecorderStats:
    frames: int = 0
    points: int = 0
    events: int = 0


class Recorder:
    def __init__(self, link: RigLink, spool: Spool, tags: RunTags) -> None:
        """Points go to the spool; a SpoolWriter (the caller's) drains it to InfluxDB."""
        self.link = link
        self.spool = spool
        self.tags = tags
        self.stats = RecorderStats()
        self.last: Telemetry | None = None
        self._lock = threading.Lock()  # the reader thread appends events, the recorder frames
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._frames: queue.Queue[Telemetry] | None = None

    def append(self, lines: list[str]) -> None:
        """Spool points of the run's other streams (fio, drive, phases) beside the telemetry."""
        with self._lock:
            self.spool.append(lines)  # the writer picks them up on its next round (once a second)

    def event(self, kind: str, detail: str = "") -> None:
        self.append([event_line(kind, time.time_ns(), self.tags, detail)])
        self.stats.events += 1

    def _on_link_event(self, event: LinkEvent) -> None:
        self.append([link_event_line(event, self.tags)])
        self.stats.events += 1

    def _utc_ns(self, tel: Telemetry) -> int:
        sync = self.link.sync
        while sync.fit is None:  # just started, or the MCU rebooted: one ping gives an offset
            try:
                self.link.ping()
            except RigTimeout:
                if self._stop.is_set():
                    return time.time_ns()
            sync = self.link.sync
        return round(sync.stamp(tel.uptime_ms * 1000) * 1e9)  # never before an earlier frame

    def record_frame(self, tel: Telemetry) -> None:
        lines = telemetry_lines(tel, self._utc_ns(tel), self.tags)
        self.append(lines)
        self.last = tel
        self.stats.frames += 1
        self.stats.points += len(lines)

    def start(self) -> None:
        """Record in a background thread until stop()."""
        self.link.on_event = self._on_link_event
        self._frames = frames = self.link.subscribe()  # every frame, whoever else reads the link
        for _ in range(3):  # a first clock fit before the first frame is timestamped
            self.link.ping()
        self.event("run_start", f"rig {self.link.info.firmware if self.link.info else '?'} on {self.link.port}")

        def loop() -> None:
            while not self._stop.is_set():
                try:
                    tel = frames.get(timeout=0.5)
                except queue.Empty:
                    continue
                self.record_frame(tel)

        self._thread = threading.Thread(target=loop, name="recorder", daemon=True)
        self._thread.start()

    def stop(self, reason: str = "stopped") -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._frames is not None:  # what arrived while stopping is recorded too
            self.link.unsubscribe(self._frames)
            while not self._frames.empty():
                self.record_frame(self._frames.get_nowait())
        self.link.on_event = None
        self.event("run_stop", reason)
