"""Typed views of the rig's frames: HELLO info, telemetry, events, and the fault and status bits."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import IntFlag

from thermrig.errors import ThermrigError
from thermrig.protocol.channels import SCALE, ChannelError, ChannelKind, ChannelMap, kind_of
from thermrig.protocol.frame import Frame
from thermrig.protocol.limits import HOST_TIMEOUT_S, pct_of_pm

_READING = re.compile(r"(-?[0-9]+):([0-9A-Fa-f]{2})")  # a channel's value and status in TEL
_FAN_DUTY = re.compile(r"fan[0-9]+")


class Fault(IntFlag):
    """Latched fault bits (firmware/core/safety.h; tests/python/test_constants.py compares them). Any of
    them puts the rig in its safe state. WATCHDOG is also the reset cause a watchdog reset reports."""

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
    OUTPUT = 0x1000


class ChannelStatus(IntFlag):
    """Per-channel status flags carried after each telemetry value (safety.h's CH_*)."""

    OPEN = 0x01
    SHORT_GND = 0x02
    SHORT_VCC = 0x04
    RANGE = 0x08
    JUMP = 0x10
    NO_DATA = 0x20
    STALL = 0x40


# Telemetry's groups of channel kinds: temperatures, humidity (one sensor), fan speeds.
_GROUPS = (
    (ChannelKind.THERMOCOUPLE, ChannelKind.AMBIENT_T),
    (ChannelKind.HUMIDITY,),
    (ChannelKind.FAN_RPM,),
)


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
    channels: ChannelMap  # wire key -> channel name, e.g. "tc0" -> "drive_ctrl", in the rig's order
    # How long the rig heats without a host frame before it latches HOST_LOST (HELLO's hto=, ms; a
    # firmware without the field: the protocol's 3 s).
    host_timeout_s: float = HOST_TIMEOUT_S

    @classmethod
    def from_ack(cls, frame: Frame) -> RigInfo:
        kv = frame.kv()
        try:
            host_timeout_s = int(kv["hto"]) / 1000 if "hto" in kv else HOST_TIMEOUT_S
            if host_timeout_s <= 0:
                raise ValueError("hto must be positive")
            channels = ChannelMap.parse(kv["ch"])
            return cls(kv["fw"], kv["ver"], int(kv["proto"]), kv["board"], channels, host_timeout_s)
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
    temps: dict[str, Reading]  # every temperature channel by key (tc0.., amb): degC
    humidity: Reading  # % RH
    rpm: dict[str, Reading]  # rpm0, rpm1
    heater_pct: float
    fan_pct: dict[str, float]  # fan0, fan1 duty
    air_target_c: float
    heat_enabled: bool
    heat_limit_pct: float
    faults: Fault
    rx_errors: int
    channels: ChannelMap  # the HELLO map the frame was read with (before HELLO: named by their keys)
    readings: dict[str, Reading]  # every channel by key, in the rig's order

    @classmethod
    def from_frame(cls, frame: Frame, channels: ChannelMap | None = None) -> Telemetry:
        """The channels are the frame's `key=value:status` pairs, read in their kind's unit; with the
        HELLO map they must be exactly its channels."""
        kv = frame.kv()
        try:
            readings = {}
            for key, text in kv.items():
                if (m := _READING.fullmatch(text)) is not None:
                    readings[key] = Reading(int(m[1]) / SCALE[kind_of(key)], ChannelStatus(int(m[2], 16)))
            if channels is None:
                channels = ChannelMap.unnamed(list(readings))
            elif list(readings) != list(channels):
                raise ProtocolError(f"telemetry channels {list(readings)} are not the HELLO map's {list(channels)}")
            by_kind = {kind: {c.key: readings[c.key] for c in channels.of_kind(*kind)} for kind in _GROUPS}
            [humidity] = by_kind[_GROUPS[1]].values()
            return cls(
                seq=frame.seq,
                uptime_ms=int(kv["up"]),
                temps=by_kind[_GROUPS[0]],
                humidity=humidity,
                rpm=by_kind[_GROUPS[2]],
                heater_pct=pct_of_pm(int(kv["heat"])),
                fan_pct={k: pct_of_pm(int(v)) for k, v in kv.items() if _FAN_DUTY.fullmatch(k)},
                air_target_c=int(kv["air"]) / 100.0,
                heat_enabled=kv["hen"] == "1",
                heat_limit_pct=pct_of_pm(int(kv["hlim"])),
                faults=Fault(int(kv["flt"], 16)),
                rx_errors=int(kv["err"]),
                channels=channels,
                readings=readings,
            )
        except (KeyError, ValueError, ChannelError) as exc:
            raise ProtocolError(f"malformed telemetry: {' '.join(frame.args)}") from exc

    def with_channels(self, channels: ChannelMap) -> Telemetry:
        """This frame named by the HELLO map (it was read before HELLO), if its channels are the map's."""
        return replace(self, channels=channels) if list(self.readings) == list(channels) else self

    def named(self, name: str) -> Reading:
        """A channel's reading by its name in the HELLO map ("chassis_air")."""
        return self.readings[self.channels.key_of(name)]

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
