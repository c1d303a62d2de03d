"""The rig's channel map as it declares it in HELLO (`ch=key:name,...`, docs/protocol.md): the host
names no channel itself. A key's letters say its kind and unit (tc, amb, rh, rpm), its name what it
measures; the InfluxDB field names follow from both."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum

from thermrig.errors import ThermrigError


class ChannelKind(StrEnum):
    THERMOCOUPLE = "tc"
    AMBIENT_T = "amb"
    HUMIDITY = "rh"
    FAN_RPM = "rpm"


# Wire value -> unit: centi-degC, deci-percent, RPM.
SCALE = {
    ChannelKind.THERMOCOUPLE: 100.0,
    ChannelKind.AMBIENT_T: 100.0,
    ChannelKind.HUMIDITY: 10.0,
    ChannelKind.FAN_RPM: 1.0,
}
_KEY = re.compile(r"(tc|amb|rh|rpm)([0-9]*)")
_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")


class ChannelError(ThermrigError, ValueError):
    """A channel map that cannot be read, or a channel this rig does not have."""


@dataclass(frozen=True)
class Channel:
    key: str  # wire key in TEL frames: tc0, amb, rh, rpm1
    name: str  # what it measures: drive_ctrl, ambient_t, fan1

    @property
    def kind(self) -> ChannelKind:
        return kind_of(self.key)

    @property
    def is_temperature(self) -> bool:
        return self.kind in (ChannelKind.THERMOCOUPLE, ChannelKind.AMBIENT_T)

    @property
    def field(self) -> str:
        """The InfluxDB field of its value: drive_ctrl_c, ambient_c (a name's "_t" says temperature,
        which "_c" says already), ambient_rh_pct, fan0_rpm."""
        unit = {ChannelKind.HUMIDITY: "pct", ChannelKind.FAN_RPM: "rpm"}.get(self.kind, "c")
        return f"{self._stem}_{unit}"

    @property
    def status_field(self) -> str:
        return f"{self._stem}_status"

    @property
    def _stem(self) -> str:
        return self.name.removesuffix("_t") if self.is_temperature else self.name


def kind_of(key: str) -> ChannelKind:
    match = _KEY.fullmatch(key)
    if match is None:
        raise ChannelError(f"channel key {key!r} is not one of tc<n>, amb, rh, rpm<n>")
    return ChannelKind(match.group(1))


@dataclass(frozen=True, eq=False)
class ChannelMap(Mapping[str, str]):
    """Key -> name, in the rig's order (the order of its TEL frames)."""

    channels: tuple[Channel, ...]

    @classmethod
    def parse(cls, text: str) -> ChannelMap:
        """HELLO's `ch=` value: "tc0:drive_ctrl,tc1:drive_nand,..."."""
        channels = []
        for pair in text.split(","):
            key, sep, name = pair.partition(":")
            if not sep or not _NAME.fullmatch(name):
                raise ChannelError(f"channel map entry {pair!r} is not key:name")
            kind_of(key)
            channels.append(Channel(key, name))
        if len({c.key for c in channels}) != len(channels) or len({c.name for c in channels}) != len(channels):
            raise ChannelError(f"channel map {text!r} repeats a key or a name")
        return cls(tuple(channels))

    @classmethod
    def unnamed(cls, keys: list[str]) -> ChannelMap:
        """Before HELLO: the channels a TEL frame carries, each named by its key."""
        return cls(tuple(Channel(k, k) for k in keys))

    def __getitem__(self, key: str) -> str:
        return self.channel(key).name

    def __iter__(self) -> Iterator[str]:
        return (c.key for c in self.channels)

    def __len__(self) -> int:
        return len(self.channels)

    def channel(self, key: str) -> Channel:
        for c in self.channels:
            if c.key == key:
                return c
        raise KeyError(key)

    def key_of(self, name: str) -> str:
        for c in self.channels:
            if c.name == name:
                return c.key
        raise ChannelError(f"this rig has no channel {name!r} (it has {', '.join(self.names)})")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.channels)

    def of_kind(self, *kinds: ChannelKind) -> tuple[Channel, ...]:
        return tuple(c for c in self.channels if c.kind in kinds)

    @property
    def temperatures(self) -> tuple[Channel, ...]:
        return self.of_kind(ChannelKind.THERMOCOUPLE, ChannelKind.AMBIENT_T)

    def __str__(self) -> str:
        return ",".join(f"{c.key}:{c.name}" for c in self.channels)
