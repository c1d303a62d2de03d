"""`thermrig rig record`'s procedure: record a rig's telemetry into InfluxDB through a recording
session until a deadline or Ctrl-C (or SIGTERM, which the testbed turns into one), telling the caller
how far it is twice a second, then flush. The rig is the caller's open testbed's, which leaves it safe
however it ends. The command line only parses and renders."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.recording_session import RecordingSession
from thermrig.db.schema import RunTags
from thermrig.db.writer import WriteProblem
from thermrig.link.rig_link import RigLink

STATUS_EVERY_S = 0.5


@dataclass(frozen=True)
class RecordingStatus:
    frames: int
    points: int
    in_influx: int
    waiting_bytes: int  # in the spool, not yet in InfluxDB
    chassis_air_c: float | None
    problem: str | None  # the last write problem while InfluxDB is not taking points


@dataclass(frozen=True)
class RecordingDone:
    frames: int
    points: int
    waiting_bytes: int  # left in the spool for `thermrig db drain`; 0: every point is in InfluxDB
    reason: str


def record_rig(
    link: RigLink,
    tags: RunTags,
    settings: InfluxSettings,
    seconds: float | None,
    on_start: Callable[[str], None],
    on_status: Callable[[RecordingStatus], None],
) -> RecordingDone:
    """Record until `seconds` have passed (None: until Ctrl-C). on_start gets the spool's path."""
    problems: list[WriteProblem] = []
    session = RecordingSession(link, tags, settings, on_error=problems.append)
    spool, writer, recorder = session.spool, session.writer, session.recorder
    session.start()
    on_start(str(spool.path))
    reason = "stopped by the operator"
    deadline = None if seconds is None else time.monotonic() + seconds
    try:
        while deadline is None or time.monotonic() < deadline:
            time.sleep(STATUS_EVERY_S)
            last = recorder.last
            on_status(
                RecordingStatus(
                    frames=recorder.stats.frames,
                    points=recorder.stats.points,
                    in_influx=writer.points_written,
                    waiting_bytes=spool.pending_bytes(),
                    chassis_air_c=last.named("chassis_air").value if last else None,
                    problem=None if writer.healthy or not problems else problems[-1].message,
                )
            )
        reason = f"stopped after {seconds:g} s"
    except KeyboardInterrupt:
        pass
    finally:
        session.stop(reason)
        done = session.close(flush_timeout=10.0)
    waiting = 0 if done else spool.pending_bytes()
    return RecordingDone(recorder.stats.frames, recorder.stats.points, waiting, reason)
