"""The firmwares the conformance suite runs on, and what does not apply to each."""

from __future__ import annotations

import os

FIRMWARES = ["rigsim", "zephyr", "zephyr-board", "micropython", "micropython-pico"]
# Stock MicroPython on the emulated RP2040 takes tens of minutes for the whole suite: only when asked
# (make conformance-rp2040 sets THERMRIG_CONFORMANCE_RP2040=only; =1 adds it to the others); make test
# runs its short form (tests/python/test_micropython_rp2040.py).
_RP2040 = os.environ.get("THERMRIG_CONFORMANCE_RP2040", "")
if _RP2040 == "only":
    FIRMWARES = ["micropython-rp2040"]
elif _RP2040:
    FIRMWARES.append("micropython-rp2040")

# A firmware's checks share one simulated rig and run on one process, in order. The emulated RP2040 runs
# the interpreter's every cycle and keeps a core busy, so its checks are shared out between two rigs, each
# on a process of its own (two cores: about half the time): those named here on a second rig, the others
# on the first, each rig's in the suite's order. Every check sets up what it needs from the rig as it finds
# it (`thermrig rig selftest --only` runs any of them on a fresh rig). Chosen by their wall times on the
# emulated chip, so that the two rigs take about as long: the room step (500 s of rig time) on the second,
# hold-lost (440 s) on the first.
SECOND_RIG: dict[str, list[str]] = {
    "micropython-rp2040": [
        "fault:tc-open:3",
        "fault:tc-open:0",
        "fault:tc-short-gnd:1",
        "fault:tc-short-vcc:2",
        "fault:spi-all-ones:2",
        "fault:spi-all-zeros:1",
        "fault:tc-stuck:3",
        "fault:tc-stuck:1",
        "fault:tc-noisy:1",
        "fault:heater-stuck-on",
        "fault:fan-stall:1",
        "fault:tach-missing:0",
        "fault:watchdog-reset",
        "fault:ambient-missing",
        "fault:ambient-crc",
        "fault:ambient-crc-temp",
        "fault:serial-garbage",
        "fault:room-step",
    ],
}
SECOND_RIG_SUFFIX = "-rig2"
# The rigs the suite opens: each firmware's, and a second one where SECOND_RIG has one.
RIGS = FIRMWARES + [firmware + SECOND_RIG_SUFFIX for firmware in FIRMWARES if firmware in SECOND_RIG]


def firmware_of(rig: str) -> str:
    """The firmware a rig runs (a second rig's name is the firmware's with SECOND_RIG_SUFFIX)."""
    return rig.removesuffix(SECOND_RIG_SUFFIX)


def runs_on(rig: str, check: str) -> bool:
    """Whether a check runs on this rig: each of a firmware's checks on exactly one of its rigs."""
    second = check in SECOND_RIG.get(firmware_of(rig), [])
    return second == rig.endswith(SECOND_RIG_SUFFIX)


# The checks that do not apply on each firmware, with a word of the reason each must give; every other
# check must pass. A check that turns n/a by accident fails, and so does one that passes where it cannot
# have run. time-sync: the suite runs in virtual time, where the rig's clock stands still between steps
# (tests/python/test_time_sync_check.py runs it in real time); pwm-error: only the board build and the
# Pico's machine.PWM, simulated or on the emulated RP2040, have a PWM driver of their own that can fail.
NOT_APPLICABLE: dict[str, dict[str, str]] = {
    "rigsim": {"time-sync": "virtual time", "fault:pwm-error:0": "no PWM driver"},
    "zephyr": {"time-sync": "virtual time", "fault:pwm-error:0": "no PWM driver"},
    "zephyr-board": {"time-sync": "virtual time"},
    "micropython": {"time-sync": "virtual time", "fault:pwm-error:0": "no PWM driver"},
    "micropython-pico": {"time-sync": "virtual time"},
    "micropython-rp2040": {"time-sync": "virtual time"},
}
