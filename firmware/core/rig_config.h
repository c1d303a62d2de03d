/* Rig build-time configuration: identity, channel map, limits and safety defaults. */
#ifndef RIG_CONFIG_H
#define RIG_CONFIG_H

#include <stdint.h>

#ifndef RIG_FW_NAME
#define RIG_FW_NAME "thermrig-core"
#endif
/* Builds stamp the version (firmware/version.cmake): project version and git revision. */
#ifndef RIG_FW_VERSION
#define RIG_FW_VERSION "0.1.0"
#endif
#ifndef RIG_PROTO_VERSION /* overridden only to test hosts against a rig of another protocol */
#define RIG_PROTO_VERSION 1
#endif

#ifndef RIG_BOARD
#define RIG_BOARD "unknown"
#endif

/* Channels: thermocouples on MAX31855 front ends, one SHT3x ambient sensor, fans with tach. Their keys,
 * names and limits are in the channel table (rig_channels.c); RIG_NUM_TC=6 builds its six-thermocouple
 * variant. */
#ifndef RIG_NUM_TC
#define RIG_NUM_TC 4
#endif
#define RIG_NUM_FANS 2
#define RIG_TC_CHASSIS_AIR 3 /* the thermocouple the heater regulates */

/* Full scale of every actuator output and duty limit: heater, fans and hlim are in permille. */
#define RIG_FULL_SCALE_PM 1000u

/* Control tick: the MAX31855 converts at about 10 Hz. */
#define RIG_TICK_MS 100u

/* Lowest plausible thermocouple reading, centi-degC (each channel's highest is in the channel table). */
#define RIG_TC_MIN_CC (-2000)
/* Largest plausible change between two 100 ms samples (thermal masses forbid more). */
#define RIG_TC_MAX_JUMP_CC 500

/* Chassis-air setpoint range accepted from the host, centi-degC. */
#define RIG_AIR_TARGET_MIN_CC 0
#define RIG_AIR_TARGET_MAX_CC 6500

/* Heater runaway, after Klipper verify_heater: hysteresis, max_error (degC*s), gain window. */
#define RIG_VERIFY_HYST_CC 500
#define RIG_VERIFY_MAX_ERROR_CC_S 12000
#define RIG_VERIFY_GAIN_CC 200
#define RIG_VERIFY_GAIN_TIME_MS 20000u
/* Marlin THERMAL_PROTECTION: once at target, falling HYSTERESIS below it for PERIOD is a fault. */
#define RIG_HOLD_HYST_CC 400
#define RIG_HOLD_PERIOD_MS 40000u

/* Heater stuck on: commanded off for the settle time, yet chassis air rose STUCK_RISE within the window. */
#define RIG_STUCK_SETTLE_MS 10000u
#define RIG_STUCK_WINDOW_S 20u
#define RIG_STUCK_RISE_CC 200

/* Host heartbeat: the heater must be re-confirmed within MAX_HEAT_TIME (Klipper: 3 s). */
#define RIG_HOST_TIMEOUT_MS 3000u

/* Fans: 4-pin PWM, 2 tach pulses per revolution; stall = commanded on and no tach. */
#define RIG_FAN_MAX_RPM 3000u
#define RIG_FAN_MIN_DUTY_PM 200u
#define RIG_FAN_PULSES_PER_REV 2u
#define RIG_FAN_STALL_MS 3000u
#define RIG_FAN_RPM_WINDOW 10u

/* Chassis-air PID, heater output in permille (tuned on the plant model: docs/plant.md). */
#define RIG_AIR_KP 400.0f
#define RIG_AIR_KI 15.0f
#define RIG_AIR_KD 200.0f
#define RIG_AIR_D_FILTER_S 2.0f
/* SET kp/ki/kd (a host's auto-tune, `thermrig rig tune`): the gains in tenths of the units above. */
#define RIG_GAIN_SCALE 10
#define RIG_AIR_KP_MAX 20000 /* 2000 permille per degC */
#define RIG_AIR_KI_MAX 2000  /* 200 permille per degC*s */
#define RIG_AIR_KD_MAX 20000 /* 2000 permille per degC/s */

/* Telemetry period bounds, ms. 0 stops telemetry. */
#define RIG_TEL_MIN_MS 100u
#define RIG_TEL_MAX_MS 60000u
#define RIG_TEL_DEFAULT_MS 100u

#endif
