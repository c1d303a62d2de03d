"""One line of fio's per-second log, as thermrig.fio.runner reads it and the throttle analysis takes it
(the analysis sits below fio in the layers, so the type lives here)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LogPoint:
    """One line of a per-second fio log: Unix ms, value, direction (0 read, 1 write, 2 trim), and the
    job it belongs to (fio numbers the log files by job, from 1)."""

    timestamp_ms: int
    value: int
    ddir: int
    job: int = 1
