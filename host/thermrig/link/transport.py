"""Open the rig's serial port, a device path or any pyserial URL (socket://, rfc2217://, loop://), and
find a USB rig again after it re-enumerates under another name."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

import serial
from serial.tools import list_ports
from serial.tools.list_ports_common import ListPortInfo

from thermrig.errors import ThermrigError

BAUDRATE = 115200


class PortError(ThermrigError, RuntimeError):
    """The port cannot be opened; the message says why and what to try."""


def open_port(port: str, timeout: float = 0.05) -> serial.SerialBase:
    try:
        return serial.serial_for_url(port, baudrate=BAUDRATE, timeout=timeout, exclusive=True)
    except (serial.SerialException, ValueError, OSError) as exc:
        text = str(exc)
        if "No such file" in text or ("could not open port" in text and "Errno 2" in text):
            hint = "no such device: is the rig plugged in, or is `thermrig sim` running?"
        elif "busy" in text.lower() or "Errno 16" in text or "lock" in text.lower():
            hint = "the port is busy: another program has it open"
        elif "Permission" in text:
            hint = "permission denied: add yourself to the 'dialout' group"
        else:
            hint = text
        raise PortError(f"cannot open {port}: {hint}") from exc


@dataclass(frozen=True)
class UsbIdentity:
    """What identifies a USB rig across unplugs: its serial number (and, for the log, its by-id name)."""

    serial_number: str
    description: str


def usb_identity(port: str, ports: Iterable[ListPortInfo] | None = None) -> UsbIdentity | None:
    """The USB serial number of the device behind port (a path or a /dev/serial/by-id link), if any."""
    if "://" in port:
        return None
    device = os.path.realpath(port)
    for info in list_ports.comports() if ports is None else ports:
        if os.path.realpath(info.device) == device and info.serial_number:
            return UsbIdentity(info.serial_number, info.description or info.device)
    return None


def find_port(original: str, identity: UsbIdentity | None, ports: Iterable[ListPortInfo] | None = None) -> str | None:
    """Where the rig is now: the original path if it exists (a by-id link is recreated on replug),
    else the device with the same USB serial number under whatever name it got this time."""
    if "://" in original or os.path.exists(original):
        return original
    if identity is None:
        return None
    for info in list_ports.comports() if ports is None else ports:
        if info.serial_number == identity.serial_number:
            return info.device
    return None
