/* Safety supervisor: channel plausibility, heater verification, fault latching (docs/safety.md). */
#ifndef SAFETY_H
#define SAFETY_H

#include <stdbool.h>
#include <stdint.h>

#include "max31855.h"
#include "rig_config.h"

/* Fault bits, latched until CLEAR. Any latched fault forces the safe state. */
#define FAULT_TC_OPEN 0x0001u
#define FAULT_TC_SHORT_GND 0x0002u
#define FAULT_TC_SHORT_VCC 0x0004u
#define FAULT_OVER_TEMP 0x0008u
#define FAULT_UNDER_TEMP 0x0010u
#define FAULT_TC_JUMP 0x0020u
#define FAULT_HEATER_RUNAWAY 0x0040u /* verify_heater: not heating as expected */
#define FAULT_HOLD_LOST 0x0080u      /* thermal protection: fell away from a reached target */
#define FAULT_HOST_LOST 0x0100u
#define FAULT_FAN_STALL 0x0200u
#define FAULT_WATCHDOG 0x0400u       /* the MCU was reset by its watchdog */
#define FAULT_HEATER_STUCK 0x0800u   /* heater commanded off, chassis air still rising fast */
#define FAULT_OUTPUT 0x1000u         /* the HAL could not set an output (a PWM driver error) */

/* Per-channel status flags reported in telemetry. */
#define CH_OPEN 0x01u
#define CH_SHORT_GND 0x02u
#define CH_SHORT_VCC 0x04u
#define CH_RANGE 0x08u
#define CH_JUMP 0x10u
#define CH_NO_DATA 0x20u
#define CH_STALL 0x40u

typedef struct {
    uint32_t latched;
    int32_t last_cc[RIG_NUM_TC];
    bool have_last[RIG_NUM_TC];
    /* verify_heater */
    int32_t last_target_cc;
    bool approaching;
    int32_t goal_cc;
    uint32_t goal_ms;
    int32_t error_cc_s;
    uint32_t check_ms;   /* time until the next once-per-second check */
    uint32_t clock_ms;
    /* thermal protection while holding */
    int32_t hold_target_cc;
    bool reached;
    uint32_t below_ms;
    /* heater stuck on: chassis air once a second while the heater is commanded off */
    int32_t off_air_cc[RIG_STUCK_WINDOW_S + 1u];
    uint8_t off_idx;
    uint32_t off_ms;
    uint32_t off_second_ms;
} safety_t;

void safety_init(safety_t *s);
void safety_latch(safety_t *s, uint32_t faults);
/* Clears every latched fault and restarts heater verification; conditions still present latch again. */
void safety_clear(safety_t *s);
bool safety_tripped(const safety_t *s);

/* Check one thermocouple reading; returns its CH_* flags and latches the matching faults. */
uint8_t safety_check_tc(safety_t *s, uint8_t ch, const max31855_reading_t *r);

/* Heater verification once per control tick: active = the heater is under closed-loop control. */
void safety_check_heater(safety_t *s, bool active, int32_t target_cc, int32_t air_cc, uint32_t dt_ms);

/* Stuck-on check once per control tick: heater_pm is the duty commanded for the last tick. */
void safety_check_stuck(safety_t *s, uint16_t heater_pm, int32_t air_cc, uint32_t dt_ms);

#endif
