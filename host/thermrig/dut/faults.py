"""The faults a simulated rig can suffer, by name (docs/safety.md): what the fault matrix injects and
`thermrig sim`'s control socket accepts. The simulated rig applies them (thermrig.sim.faults)."""

from __future__ import annotations

from enum import StrEnum


class FaultKind(StrEnum):
    TC_OPEN = "tc-open"
    TC_SHORT_GND = "tc-short-gnd"
    TC_SHORT_VCC = "tc-short-vcc"
    TC_STUCK = "tc-stuck"  # value: the frozen reading, C (default: the current one)
    TC_NOISY = "tc-noisy"  # value: extra noise, C (default 4)
    AMBIENT_MISSING = "ambient-missing"
    AMBIENT_CRC = "ambient-crc"
    HEATER_STUCK_ON = "heater-stuck-on"
    HEATER_OPEN = "heater-open"
    FAN_STALL = "fan-stall"
    TACH_MISSING = "tach-missing"
    SERIAL_GARBAGE = "serial-garbage"  # channel 0: into the rig's receiver, 1: toward the host
    SERIAL_SILENCE = "serial-silence"  # value: seconds (default 5)
    USB_UNPLUG = "usb-unplug"  # value: seconds until the device is back (default 2)
    MCU_RESET = "mcu-reset"
    WATCHDOG_RESET = "watchdog-reset"  # the MCU restarted by its watchdog (a hung firmware)
    ROOM_STEP = "room-step"  # value: change of room temperature, C (default +5)
