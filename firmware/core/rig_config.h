/* Rig build-time configuration: identity, channel map, limits and safety defaults. The limits are
 * generated from rig_limits.toml (the block marked below), as the MicroPython firmware's and the
 * host's are. */
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

/* BEGIN generated from firmware/core/rig_limits.toml by scripts/gen_limits.py (make limits) */
/* Full scale of every actuator output and duty limit: heater duty, fan duty and the heater limit (hlim)
 * are permille of it. */
#define RIG_FULL_SCALE_PM 1000u

/* Control tick: the MAX31855 converts at about 10 Hz. */
#define RIG_TICK_MS 100u

/* The lowest plausible thermocouple reading (each channel's highest is in the channel table:
 * rig_channels.c, and TC_MAX_CC in the MicroPython firmware's config.py). */
#define RIG_TC_MIN_CC (-2000)

/* The largest plausible change of a thermocouple reading between two 100 ms samples: no mass in the rig
 * moves more than this. */
#define RIG_TC_MAX_JUMP_CC 500

/* The chassis-air setpoints SET air= accepts. */
#define RIG_AIR_TARGET_MIN_CC 0
#define RIG_AIR_TARGET_MAX_CC 6500

/* Heater runaway, after Klipper verify_heater: heating with the chassis air more than VERIFY_HYST below
 * target, no VERIFY_GAIN gain within VERIFY_GAIN_TIME (the window restarts at each gain), then an
 * accumulated deficit of VERIFY_MAX_ERROR (degC*s) latches HEATER_RUNAWAY. */
#define RIG_VERIFY_HYST_CC 500
#define RIG_VERIFY_MAX_ERROR_CC_S 12000
#define RIG_VERIFY_GAIN_CC 200
#define RIG_VERIFY_GAIN_TIME_MS 20000u

/* Thermal protection while holding, after Marlin THERMAL_PROTECTION: once at target, falling HOLD_HYST
 * below it for HOLD_PERIOD latches HOLD_LOST. */
#define RIG_HOLD_HYST_CC 400
#define RIG_HOLD_PERIOD_MS 40000u

/* Heater stuck on: commanded off for STUCK_SETTLE, yet the chassis air rose STUCK_RISE within
 * STUCK_WINDOW (whole seconds: the firmware keeps one reading a second), latches HEATER_STUCK. */
#define RIG_STUCK_SETTLE_MS 10000u
#define RIG_STUCK_WINDOW_S 20u
#define RIG_STUCK_RISE_CC 200

/* Host heartbeat: heating latches HOST_LOST after this long without a host frame (after Klipper's
 * MAX_HEAT_TIME). */
#define RIG_HOST_TIMEOUT_MS 3000u

/* Fans: 4-pin PWM with tach; a fan driven at FAN_MIN_DUTY or more with no tach pulse for FAN_STALL
 * latches FAN_STALL. */
#define RIG_FAN_MAX_RPM 3000u    /* the highest SET rpm0=/rpm1= takes */
#define RIG_FAN_MIN_DUTY_PM 200u /* a fan asked for a speed is never driven below this */
#define RIG_FAN_PULSES_PER_REV 2u
#define RIG_FAN_STALL_MS 3000u
#define RIG_FAN_RPM_WINDOW 10u   /* the speed is the tach pulses of the last this many ticks */

/* Chassis-air PID, heater output in permille: Kp per degC, Ki per degC*s, Kd per degC/s, and the time
 * constant of the D term's filter (the MicroPython firmware's integer PID takes it in ms:
 * AIR_D_FILTER_MS). Tuned on the plant model: docs/plant.md. */
#define RIG_AIR_KP 400.0f
#define RIG_AIR_KI 15.0f
#define RIG_AIR_KD 200.0f
#define RIG_AIR_D_FILTER_S 2.0f

/* SET kp=/ki=/kd= (a host's auto-tune, `thermrig rig tune`) take the gains in tenths of the units above
 * (GAIN_SCALE), up to these maxima. */
#define RIG_GAIN_SCALE 10
#define RIG_AIR_KP_MAX 20000 /* 2000 permille per degC */
#define RIG_AIR_KI_MAX 2000  /* 200 permille per degC*s */
#define RIG_AIR_KD_MAX 20000 /* 2000 permille per degC/s */

/* Telemetry period bounds, ms (SET rate=; 0 stops telemetry). */
#define RIG_TEL_MIN_MS 100u
#define RIG_TEL_MAX_MS 60000u
#define RIG_TEL_DEFAULT_MS 100u
/* END generated */

#endif
