"""Open the rig's serial port: a device path or any pyserial URL (socket://, rfc2217://, loop://)."""

from __future__ import annotations

import serial

BAUDRATE = 115200


class PortError(RuntimeError):
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
