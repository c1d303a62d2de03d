"""The rig's limits and timings in the host's units (degC, seconds; a few stay in ms or permille). They are
declared once, in firmware/core/rig_limits.toml, with the firmware's values; scripts/gen_limits.py
(`make limits`) writes them into the block below, as it does into the C core's rig_config.h and the
MicroPython firmware's config.py, and tests/python/test_constants.py fails when any of the three is not
what the declaration gives."""

from __future__ import annotations

# BEGIN generated from firmware/core/rig_limits.toml by scripts/gen_limits.py (make limits)
# Full scale of every actuator output and duty limit: heater duty, fan duty and the heater limit (hlim) are
# permille of it.
FULL_SCALE_PM = 1000

# Control tick: the MAX31855 converts at about 10 Hz.
TICK_S = 0.1

# The largest plausible change of a thermocouple reading between two 100 ms samples: no mass in the rig
# moves more than this.
TC_MAX_JUMP_C = 5.0

# The chassis-air setpoints SET air= accepts.
AIR_TARGET_MIN_C = 0.0
AIR_TARGET_MAX_C = 65.0

# Heater runaway, after Klipper verify_heater: heating with the chassis air more than VERIFY_HYST below
# target, no VERIFY_GAIN gain within VERIFY_GAIN_TIME (the window restarts at each gain), then an
# accumulated deficit of VERIFY_MAX_ERROR (degC*s) latches HEATER_RUNAWAY.
VERIFY_HYST_C = 5.0
VERIFY_MAX_ERROR_C_S = 120.0
VERIFY_GAIN_C = 2.0
VERIFY_GAIN_TIME_S = 20.0

# Thermal protection while holding, after Marlin THERMAL_PROTECTION: once at target, falling HOLD_HYST below
# it for HOLD_PERIOD latches HOLD_LOST.
HOLD_HYST_C = 4.0
HOLD_PERIOD_S = 40.0

# Heater stuck on: commanded off for STUCK_SETTLE, yet the chassis air rose STUCK_RISE within STUCK_WINDOW
# (whole seconds: the firmware keeps one reading a second), latches HEATER_STUCK.
STUCK_SETTLE_S = 10.0
STUCK_WINDOW_S = 20.0
STUCK_RISE_C = 2.0

# Host heartbeat: heating latches HOST_LOST after this long without a host frame (after Klipper's
# MAX_HEAT_TIME). A firmware reports its own in HELLO (hto=, ms); this is the value of one that does not
# (protocol 1 before the field).
HOST_TIMEOUT_S = 3.0

# Fans: 4-pin PWM with tach; a fan driven at FAN_MIN_DUTY or more with no tach pulse for FAN_STALL latches
# FAN_STALL.
FAN_MAX_RPM = 3000  # the highest SET rpm0=/rpm1= takes
FAN_STALL_S = 3.0

# Chassis-air PID, heater output in permille: Kp per degC, Ki per degC*s, Kd per degC/s, and the time
# constant of the D term's filter (the MicroPython firmware's integer PID takes it in ms: AIR_D_FILTER_MS).
# Tuned on the plant model: docs/plant.md.
AIR_KP = 400.0
AIR_KI = 15.0
AIR_KD = 200.0
AIR_D_FILTER_S = 2.0

# SET kp=/ki=/kd= (a host's auto-tune, `thermrig rig tune`) take the gains in tenths of the units above
# (GAIN_SCALE), up to these maxima.
GAIN_SCALE = 10
AIR_KP_MAX = 2000.0  # 2000 permille per degC
AIR_KI_MAX = 200.0  # 200 permille per degC*s
AIR_KD_MAX = 2000.0  # 2000 permille per degC/s

# Telemetry period bounds, ms (SET rate=; 0 stops telemetry).
TEL_MIN_MS = 100
TEL_MAX_MS = 60000
TEL_DEFAULT_MS = 100
# END generated


def pct_of_pm(permille: int) -> float:
    """A permille output (heater, fan, limit) as a percentage of full scale."""
    return permille * 100.0 / FULL_SCALE_PM
