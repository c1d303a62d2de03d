"""Typed views of the rig's frames: HELLO info, telemetry, events, and the fault and status bits."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntFlag

from thermrig.errors import ThermrigError
from thermrig.protocol.frame import Frame


class Fault(IntFlag):
    """Latched fault bits (firmware/core/safety.h). Any of them puts the rig in its safe state."""

    TC_OPEN = 0x0001
    TC_SHORT_GND = 0x0002
    TC_SHORT_VCC = 0x0004
    OVER_TEMP = 0x0008
    UNDER_TEMP = 0x0010
    TC_JUMP = 0x0020
    HEATER_RUNAWAY = 0x0040
    HOLD_LOST = 0x0080
    HOST_LOST = 0x0100
    FAN_STALL = 0x0200
    WATCHDOG = 0x0400
    HEATER_STUCK = 0x0800


class ChannelStatus(IntFlag):
    """Per-channel status flags carried after each telemetry value."""

    OPEN = 0x01
    SHORT_GND = 0x02
    SHORT_VCC = 0x04
    RANGE = 0x08
    JUMP = 0x10
    NO_DATA = 0x20
    STALL = 0x40


def flag_names(flags: IntFlag) -> str:
    return ",".join(f.name or "" for f in type(flags) if f in flags) or "ok"


class ProtocolError(ThermrigError, RuntimeError):
    """The rig sent something this host cannot interpret."""


@dataclass(frozen=True)
class RigInfo:
    firmware: str
    version: str
    proto: int
    board: str
    channels: dict[str, str]  # wire key -> channel name, e.g. "tc0" -> "drive_ctrl"

    @classmethod
    def from_ack(cls, frame: Frame) -> RigInfo:
        kv = frame.kv()
        try:
            channels = dict(pair.split(":", 1) for pair in kv["ch"].split(","))
            return cls(kv["fw"], kv["ver"], int(kv["proto"]), kv["board"], channels)
        except (KeyError, ValueError) as exc:
            raise ProtocolError(f"malformed HELLO reply: {' '.join(frame.args)}") from exc


@dataclass(frozen=True)
class Reading:
    value: float
    status: ChannelStatus

    @property
    def ok(self) -> bool:
        return self.status == 0


@dataclass(frozen=True)
class Telemetry:
    seq: int
    uptime_ms: int
    temps: dict[str, Reading]  # tc0..tc3, amb: degC
    humidity: Reading  # % RH
    rpm: dict[str, Reading]  # rpm0, rpm1
    heater_pct: float
    fan_pct: dict[str, float]  # fan0, fan1 duty
    air_target_c: float
    heat_enabled: bool
    heat_limit_pct: float
    faults: Fault
    rx_errors: int

    @classmethod
    def from_frame(cls, frame: Frame) -> Telemetry:
        kv = frame.kv()
        try:

            def reading(key: str, scale: float) -> Reading:
                value, status = kv[key].split(":")
                return Reading(int(value) / scale, ChannelStatus(int(status, 16)))

            return cls(
                seq=frame.seq,
                uptime_ms=int(kv["up"]),
                temps={k: reading(k, 100.0) for k in ("tc0", "tc1", "tc2", "tc3", "amb")},
                humidity=reading("rh", 10.0),
                rpm={k: reading(k, 1.0) for k in ("rpm0", "rpm1")},
                heater_pct=int(kv["heat"]) / 10.0,
                fan_pct={k: int(kv[k]) / 10.0 for k in ("fan0", "fan1")},
                air_target_c=int(kv["air"]) / 100.0,
                heat_enabled=kv["hen"] == "1",
                heat_limit_pct=int(kv["hlim"]) / 10.0,
                faults=Fault(int(kv["flt"], 16)),
                rx_errors=int(kv["err"]),
            )
        except (KeyError, ValueError) as exc:
            raise ProtocolError(f"malformed telemetry: {' '.join(frame.args)}") from exc

    @property
    def safe_state(self) -> bool:
        return bool(self.faults)


@dataclass(frozen=True)
class Nak:
    host_seq: int | None
    reason: str
    detail: str | None

    @classmethod
    def from_frame(cls, frame: Frame) -> Nak:
        if len(frame.args) < 2:
            raise ProtocolError(f"malformed NAK: {frame}")
        seq = None if frame.args[0] == "-" else int(frame.args[0])
        return cls(seq, frame.args[1], frame.args[2] if len(frame.args) > 2 else None)
