"""How a command shows a duration: hours, minutes and seconds, the hours only when there are any."""

from __future__ import annotations


def hms(seconds: float) -> str:
    """15h05m00s, 5m03s, 0m00s (seconds rounded)."""
    s = round(seconds)
    h, m, sec = s // 3600, s % 3600 // 60, s % 60
    return f"{h}h{m:02d}m{sec:02d}s" if h else f"{m}m{sec:02d}s"
