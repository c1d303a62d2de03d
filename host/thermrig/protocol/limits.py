"""The rig's limits and timings as the firmware declares them (firmware/core/rig_config.h), in the
host's units. Declared once here for the host; tests/python/test_constants.py reads the C headers and
the MicroPython firmware's config.py and fails if any of the three disagree."""

from __future__ import annotations

FULL_SCALE_PM = 1000  # heater duty, fan duty and the heater limit are permille of full scale
TICK_S = 0.1  # the control tick (the MAX31855 converts at about 10 Hz)

# Plausibility of a thermocouple reading: no mass in the rig moves more than this between two samples.
TC_MAX_JUMP_C = 5.0

AIR_TARGET_MIN_C = 0.0  # the chassis-air setpoints SET air= accepts
AIR_TARGET_MAX_C = 65.0

# Host heartbeat: heating latches HOST_LOST after this long without a host frame. A firmware reports its
# own in HELLO (hto=, ms); this is the value of one that does not (protocol 1 before the field).
HOST_TIMEOUT_S = 3.0

# Heater runaway (Klipper verify_heater): heating with the chassis air more than VERIFY_HYST_C below
# target, no VERIFY_GAIN_C gain within VERIFY_GAIN_TIME_S (the window restarts at each gain), then an
# accumulated deficit of VERIFY_MAX_ERROR_C_S latches HEATER_RUNAWAY.
VERIFY_HYST_C = 5.0
VERIFY_MAX_ERROR_C_S = 120.0
VERIFY_GAIN_C = 2.0
VERIFY_GAIN_TIME_S = 20.0

# Thermal protection while holding (Marlin THERMAL_PROTECTION): falling HOLD_HYST_C below a reached
# target for HOLD_PERIOD_S latches HOLD_LOST.
HOLD_HYST_C = 4.0
HOLD_PERIOD_S = 40.0

# Heater stuck on: commanded off for STUCK_SETTLE_S, yet the chassis air rose STUCK_RISE_C within
# STUCK_WINDOW_S, latches HEATER_STUCK.
STUCK_SETTLE_S = 10.0
STUCK_WINDOW_S = 20.0
STUCK_RISE_C = 2.0

TEL_MIN_MS = 100  # telemetry period bounds (SET rate=; 0 stops telemetry)
TEL_MAX_MS = 60000
TEL_DEFAULT_MS = 100

FAN_MAX_RPM = 3000  # SET rpm0=/rpm1= bound
FAN_STALL_S = 3.0  # a fan driven with no tach pulse for this long latches FAN_STALL

# The chassis-air PID's gains (heater permille per degC, per degC*s, per degC/s): the firmware's own, and
# the largest SET kp=/ki=/kd= take. On the wire they go in tenths (GAIN_SCALE).
AIR_KP = 400.0
AIR_KI = 15.0
AIR_KD = 200.0
GAIN_SCALE = 10
AIR_KP_MAX = 2000.0
AIR_KI_MAX = 200.0
AIR_KD_MAX = 2000.0


def pct_of_pm(permille: int) -> float:
    """A permille output (heater, fan, limit) as a percentage of full scale."""
    return permille * 100.0 / FULL_SCALE_PM
