# Rig configuration: identity, the channel map, limits and safety defaults (values of firmware/core/rig_config.h).
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

FULL_SCALE_PM = const(1000)  # heater duty, fan duty and the heater limit are permille of full scale
TICK_MS = const(100)  # the MAX31855 converts at about 10 Hz

# Per-thermocouple plausibility window and the largest plausible change per 100 ms sample, centi-degC.
TC_MIN_CC = const(-2000)
TC_MAX_CC = (11000, 9000, 9000, 7000)
TC_MAX_JUMP_CC = const(500)

AIR_TARGET_MIN_CC = const(0)
AIR_TARGET_MAX_CC = const(6500)

# Heater runaway after Klipper verify_heater; hold lost after Marlin THERMAL_PROTECTION.
VERIFY_HYST_CC = const(500)
VERIFY_MAX_ERROR_CC_S = const(12000)
VERIFY_GAIN_CC = const(200)
VERIFY_GAIN_TIME_MS = const(20000)
HOLD_HYST_CC = const(400)
HOLD_PERIOD_MS = const(40000)

# Heater stuck on: commanded off for the settle time, yet chassis air rose STUCK_RISE within the window.
STUCK_SETTLE_MS = const(10000)
STUCK_WINDOW_S = const(20)
STUCK_RISE_CC = const(200)

HOST_TIMEOUT_MS = const(3000)  # Klipper MAX_HEAT_TIME

FAN_MAX_RPM = const(3000)
FAN_MIN_DUTY_PM = const(200)
FAN_PULSES_PER_REV = const(2)
FAN_STALL_MS = const(3000)
FAN_RPM_WINDOW = const(10)

# Chassis-air PID, heater output in permille: Kp per degC, Ki per degC*s, Kd per degC/s, D filter in ms.
AIR_KP = const(400)
AIR_KI = const(15)
AIR_KD = const(200)
AIR_D_FILTER_MS = const(2000)
# SET kp/ki/kd (the host's auto-tune): the gains in tenths of the units above, and their maxima.
GAIN_SCALE = const(10)
AIR_KP_MAX = const(20000)
AIR_KI_MAX = const(2000)
AIR_KD_MAX = const(20000)

TEL_MIN_MS = const(100)
TEL_MAX_MS = const(60000)
TEL_DEFAULT_MS = const(100)

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
FAULT_OUTPUT = const(0x1000)  # the HAL could not set an output (a PWM driver error; the Zephyr boards)

CH_OPEN = const(0x01)
CH_SHORT_GND = const(0x02)
CH_SHORT_VCC = const(0x04)
CH_RANGE = const(0x08)
CH_JUMP = const(0x10)
CH_NO_DATA = const(0x20)
CH_STALL = const(0x40)
