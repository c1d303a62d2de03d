# Rig configuration: identity, the channel map, limits and safety defaults. The limits are generated from
# firmware/core/rig_limits.toml, as are the C core's (rig_config.h): the block marked below.
from micropython import const

from .version import FW_VERSION  # apart, so that the flasher can stamp it

FW_NAME = b"thermrig-micropython"
PROTO_VERSION = const(1)

# The channel map is declared here only: HELLO sends it and the host follows what HELLO says.
CHANNEL_MAP = (
    b"tc0:drive_ctrl,tc1:drive_nand,tc2:heatsink,tc3:chassis_air,"
    b"amb:ambient_t,rh:ambient_rh,rpm0:fan0,rpm1:fan1"
)
NUM_TC = const(4)
NUM_FANS = const(2)
TC_CHASSIS_AIR = const(3)
TC_MAX_CC = (11000, 9000, 9000, 7000)  # each thermocouple's highest plausible reading, centi-degC

# BEGIN generated from firmware/core/rig_limits.toml by scripts/gen_limits.py (make limits)
# Full scale of every actuator output and duty limit: heater duty, fan duty and the heater limit (hlim) are
# permille of it.
FULL_SCALE_PM = const(1000)

# Control tick: the MAX31855 converts at about 10 Hz.
TICK_MS = const(100)

# The lowest plausible thermocouple reading (each channel's highest is in the channel table: rig_channels.c,
# and TC_MAX_CC in the MicroPython firmware's config.py).
TC_MIN_CC = const(-2000)

# The largest plausible change of a thermocouple reading between two 100 ms samples: no mass in the rig
# moves more than this.
TC_MAX_JUMP_CC = const(500)

# The chassis-air setpoints SET air= accepts.
AIR_TARGET_MIN_CC = const(0)
AIR_TARGET_MAX_CC = const(6500)

# Heater runaway, after Klipper verify_heater: heating with the chassis air more than VERIFY_HYST below
# target, no VERIFY_GAIN gain within VERIFY_GAIN_TIME (the window restarts at each gain), then an
# accumulated deficit of VERIFY_MAX_ERROR (degC*s) latches HEATER_RUNAWAY.
VERIFY_HYST_CC = const(500)
VERIFY_MAX_ERROR_CC_S = const(12000)
VERIFY_GAIN_CC = const(200)
VERIFY_GAIN_TIME_MS = const(20000)

# Thermal protection while holding, after Marlin THERMAL_PROTECTION: once at target, falling HOLD_HYST below
# it for HOLD_PERIOD latches HOLD_LOST.
HOLD_HYST_CC = const(400)
HOLD_PERIOD_MS = const(40000)

# Heater stuck on: commanded off for STUCK_SETTLE, yet the chassis air rose STUCK_RISE within STUCK_WINDOW
# (whole seconds: the firmware keeps one reading a second), latches HEATER_STUCK.
STUCK_SETTLE_MS = const(10000)
STUCK_WINDOW_S = const(20)
STUCK_RISE_CC = const(200)

# Host heartbeat: heating latches HOST_LOST after this long without a host frame (after Klipper's
# MAX_HEAT_TIME).
HOST_TIMEOUT_MS = const(3000)

# Fans: 4-pin PWM with tach; a fan driven at FAN_MIN_DUTY or more with no tach pulse for FAN_STALL latches
# FAN_STALL.
FAN_MAX_RPM = const(3000)  # the highest SET rpm0=/rpm1= takes
FAN_MIN_DUTY_PM = const(200)  # a fan asked for a speed is never driven below this
FAN_PULSES_PER_REV = const(2)
FAN_STALL_MS = const(3000)
FAN_RPM_WINDOW = const(10)  # the speed is the tach pulses of the last this many ticks

# Chassis-air PID, heater output in permille: Kp per degC, Ki per degC*s, Kd per degC/s, and the time
# constant of the D term's filter (the MicroPython firmware's integer PID takes it in ms: AIR_D_FILTER_MS).
# Tuned on the plant model: docs/plant.md.
AIR_KP = const(400)
AIR_KI = const(15)
AIR_KD = const(200)
AIR_D_FILTER_MS = const(2000)

# SET kp=/ki=/kd= (a host's auto-tune, `thermrig rig tune`) take the gains in tenths of the units above
# (GAIN_SCALE), up to these maxima.
GAIN_SCALE = const(10)
AIR_KP_MAX = const(20000)  # 2000 permille per degC
AIR_KI_MAX = const(2000)  # 200 permille per degC*s
AIR_KD_MAX = const(20000)  # 2000 permille per degC/s

# Telemetry period bounds, ms (SET rate=; 0 stops telemetry).
TEL_MIN_MS = const(100)
TEL_MAX_MS = const(60000)
TEL_DEFAULT_MS = const(100)
# END generated

# Fault bits (latched until CLEAR) and per-channel status flags, as docs/protocol.md lists them.
FAULT_TC_OPEN = const(0x0001)
FAULT_TC_SHORT_GND = const(0x0002)
FAULT_TC_SHORT_VCC = const(0x0004)
FAULT_OVER_TEMP = const(0x0008)
FAULT_UNDER_TEMP = const(0x0010)
FAULT_TC_JUMP = const(0x0020)
FAULT_HEATER_RUNAWAY = const(0x0040)
FAULT_HOLD_LOST = const(0x0080)
FAULT_HOST_LOST = const(0x0100)
FAULT_FAN_STALL = const(0x0200)
FAULT_WATCHDOG = const(0x0400)
FAULT_HEATER_STUCK = const(0x0800)
FAULT_OUTPUT_ERROR = const(0x1000)  # the HAL could not set an output (a PWM driver error; the Zephyr boards)

CH_OPEN = const(0x01)
CH_SHORT_GND = const(0x02)
CH_SHORT_VCC = const(0x04)
CH_RANGE = const(0x08)
CH_JUMP = const(0x10)
CH_NO_DATA = const(0x20)
CH_STALL = const(0x40)
