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
