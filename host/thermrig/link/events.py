"""What the link counts (LinkStats) and what it reports for the record of a run (LinkEvent)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass
class LinkStats:
    """Counts over the whole of a link's run (RigLink.stats: a copy, read again for the newest)."""

    frames: int = 0
    decode_errors: dict[str, int] = field(default_factory=dict)
    lost_frames: int = 0  # gaps in the rig's frame sequence numbers
    telemetry: int = 0
    naks_received: int = 0
    retries: int = 0
    reconnects: int = 0
    mcu_resets: int = 0
    gaps: int = 0
    events: dict[str, int] = field(default_factory=dict)  # every LinkEvent raised, by kind

    def copy(self) -> LinkStats:
        return replace(self, decode_errors=dict(self.decode_errors), events=dict(self.events))


@dataclass(frozen=True)
class LinkEvent:
    """Something a record of the run must show: a lost link, an MCU reset, a gap, a rig fault event.

    kind: "link_lost", "link_restored", "mcu_reset", "gap", "rig_fault", "gains" (stored air-loop gains
    sent at a handshake, link/stored_gains.py).
    utc: host time of the event, s. For a gap, start_utc..utc is the stretch without telemetry.
    """

    kind: str
    utc: float
    detail: str = ""
    start_utc: float | None = None
