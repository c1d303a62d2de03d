"""Record a rig's telemetry and link events: each frame is timestamped in UTC from the rig's uptime
(through the time sync), appended to the run's spool (fsync'd), and drained to InfluxDB behind.

Gaps are judged on what was recorded: when the rig's clock jumps between two recorded frames by more
than the link's gap threshold, the rig reset, or the recorder restarted on a run's spool that already
holds telemetry (a killed recorder), a `gap` event is written, stamped as the first frame after the gap
and holding the last recorded frame's time before it (`gap_start_ns`) and both frames' uptimes: the
gap in the recording's own timeline, in rig time."""

from __future__ import annotations

import queue
import re
import threading
import time
from dataclasses import dataclass

from thermrig.db.schema import TELEMETRY, RunTags, event_line, gap_line, link_event_line, telemetry_lines
from thermrig.db.spool import Spool
from thermrig.link.rig_link import GAP_FACTOR, LinkEvent, RigLink, RigTimeout
from thermrig.protocol.messages import Telemetry

_UPTIME = re.compile(rb"[ ,]uptime_ms=(\d+)i")


@dataclass
class RecorderStats:
    frames: int = 0
    points: int = 0
    events: int = 0
    gaps: int = 0


@dataclass(frozen=True)
class Recorded:
    """A frame as recorded: the rig's uptime and the time it was stamped with."""

    uptime_ms: int
    utc_ns: int


def last_recorded(spool: Spool, tail_bytes: int = 1 << 16) -> Recorded | None:
    """The last telemetry frame a spool holds (a recorder killed before this one), if any."""
    try:
        with spool.path.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - tail_bytes))
            tail = fh.read()
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        if line.startswith(TELEMETRY.encode() + b",") and (m := _UPTIME.search(line)):
            try:
                return Recorded(int(m.group(1)), int(line.rsplit(b" ", 1)[1]))
            except ValueError:
                continue
    return None


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
        self._previous: Recorded | None = None  # the last frame recorded
        self._restarted = False  # the spool held this run's telemetry when this recorder started
        self._lost_at: list[int] = []  # the rig's uptime when the link was lost (its last frame's)

    def append(self, lines: list[str]) -> None:
        """Spool points of the run's other streams (fio, drive, phases) beside the telemetry."""
        with self._lock:
            self.spool.append(lines)  # the writer picks them up on its next round (once a second)

    def event(self, kind: str, detail: str = "", at_ns: int | None = None) -> None:
        """at_ns: when it happened, if earlier than now (a phase judged on telemetry already recorded)."""
        self.append([event_line(kind, time.time_ns() if at_ns is None else at_ns, self.tags, detail)])
        self.stats.events += 1

    def _on_link_event(self, event: LinkEvent) -> None:
        if event.kind == "gap":  # judged here instead, on the frames recorded and in their timeline
            return
        if event.kind == "link_lost":
            self._lost_at.append(self.link.latest.uptime_ms if self.link.latest is not None else -1)
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

    def _gap(self, tel: Telemetry) -> str | None:
        """Why the recording has a hole before this frame, or None."""
        before = self._previous
        if before is None:
            return None
        if self._restarted:
            return "recorder restarted"
        if tel.uptime_ms < before.uptime_ms:
            return "rig reset"
        if tel.uptime_ms - before.uptime_ms <= GAP_FACTOR * self.link.telemetry_period_ms:
            return None
        lost = any(before.uptime_ms <= at < tel.uptime_ms for at in self._lost_at)
        return "link lost" if lost else "telemetry lost"

    def record_frame(self, tel: Telemetry) -> None:
        now = Recorded(tel.uptime_ms, self._utc_ns(tel))
        lines = telemetry_lines(tel, now.utc_ns, self.tags)
        self.stats.points += len(lines)
        why = self._gap(tel)
        if why is not None and self._previous is not None:
            lines.append(
                gap_line(self._previous.utc_ns, now.utc_ns, self._previous.uptime_ms, tel.uptime_ms, why, self.tags)
            )
            self.stats.gaps += 1
            self.stats.events += 1
        self._previous, self._restarted = now, False
        self.append(lines)
        self.last = tel
        self.stats.frames += 1

    def start(self) -> None:
        """Record in a background thread until stop()."""
        self._previous = last_recorded(self.spool)
        self._restarted = self._previous is not None
        self.link.set_event_listener(self._on_link_event)
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
        self.link.set_event_listener(None)
        self.event("run_stop", reason)
