"""The chassis-air PID gains `thermrig rig tune` found for a rig, kept on the host per rig and sent to the
rig after every handshake when whoever opens it asks (open_testbed's stored_gains, which the commands a
user runs on a rig set; RigLink.send_gains sends them): a rig without stored gains keeps its firmware's.

A rig is known by what HELLO says of it (firmware and board) and, when its port is a USB device, the
adapter's serial number: two rigs of one board on USB are two files; simulated rigs (a pty) share one
per firmware. One TOML file per rig under the data dir's `rigs/`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from thermrig.errors import ThermrigError
from thermrig.protocol import limits
from thermrig.protocol.messages import RigInfo
from thermrig.settings import data_dir
from thermrig.toml_file import TomlFile


class GainsError(ThermrigError, ValueError):
    pass


@dataclass(frozen=True)
class Gains:
    """The air loop's gains: heater permille per °C, per °C·s, per °C/s (the firmware's units)."""

    kp: float
    ki: float
    kd: float

    @classmethod
    def firmware_default(cls) -> Gains:
        return cls(limits.AIR_KP, limits.AIR_KI, limits.AIR_KD)

    def bounded(self) -> Gains:
        """Within what SET kp/ki/kd take (0 .. *_MAX), at the wire's resolution (tenths)."""
        g = limits.GAIN_SCALE

        def b(v: float, top: float) -> float:
            return round(min(max(v, 0.0), top) * g) / g

        return Gains(b(self.kp, limits.AIR_KP_MAX), b(self.ki, limits.AIR_KI_MAX), b(self.kd, limits.AIR_KD_MAX))

    def set_args(self) -> dict[str, int]:
        """SET's kp/ki/kd, in tenths, within the firmware's bounds."""
        b, g = self.bounded(), limits.GAIN_SCALE
        return {"kp": round(b.kp * g), "ki": round(b.ki * g), "kd": round(b.kd * g)}

    def describe(self) -> str:
        return f"kp {self.kp:.1f}, ki {self.ki:.2f}, kd {self.kd:.1f}"


@dataclass(frozen=True)
class StoredGains:
    gains: Gains
    note: str  # how they were found (the tune's figures)
    path: Path


def rig_key(info: RigInfo, usb_serial: str | None) -> str:
    """The file name a rig's gains are kept under."""
    parts = [info.board, info.firmware] + ([usb_serial] if usb_serial else [])
    return "-".join(re.sub(r"[^A-Za-z0-9_.]+", "_", p) for p in parts)


def gains_path(key: str) -> Path:
    return data_dir() / "rigs" / f"{key}.toml"


def load_gains(key: str) -> StoredGains | None:
    """The rig's stored gains, or None when none are stored."""
    path = gains_path(key)
    if not path.exists():
        return None
    f = TomlFile.read(path, GainsError)
    t = f.section("air_pid")
    f.known(t, "air_pid", {"kp", "ki", "kd", "note"})
    gains = Gains(
        f.number(t, "air_pid", "kp", 0, limits.AIR_KP_MAX),
        f.number(t, "air_pid", "ki", 0, limits.AIR_KI_MAX),
        f.number(t, "air_pid", "kd", 0, limits.AIR_KD_MAX),
    )
    note = f.get(t, "air_pid", "note", str, "text", "")
    return StoredGains(gains, note, path)


def save_gains(key: str, gains: Gains, note: str) -> Path:
    """Write the rig's gains (bounded as the firmware takes them); returns the file."""
    b = gains.bounded()
    path = gains_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    quoted = note.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
    path.write_text(
        "# The chassis-air PID gains of this rig, written by `thermrig rig tune`; sent to the rig at every\n"
        "# connection (SET kp/ki/kd: heater permille per °C, per °C·s, per °C/s). Delete the file to run\n"
        "# the firmware's defaults again.\n"
        f'[air_pid]\nkp = {b.kp}\nki = {b.ki}\nkd = {b.kd}\nnote = "{quoted}"\n'
    )
    return path
