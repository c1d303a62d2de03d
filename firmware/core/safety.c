/* Safety supervisor. Heater verification follows Klipper's verify_heater (hysteresis, max_error,
 * heating_gain within check_gain_time, evaluated once a second) plus Marlin's THERMAL_PROTECTION
 * period once the target was reached. Everything here only latches; rig.c applies the safe state. */
#include "safety.h"

#include "rig_channels.h"

void safety_init(safety_t *s)
{
    *s = (safety_t){0};
    s->check_ms = 1000u;
}

void safety_latch(safety_t *s, uint32_t faults)
{
    s->latched |= faults;
}

static void verify_restart(safety_t *s)
{
    s->approaching = false;
    s->error_cc_s = 0;
    s->last_target_cc = 0;
    s->hold_target_cc = 0;
    s->reached = false;
    s->below_ms = 0u;
    s->check_ms = 1000u;
}

void safety_clear(safety_t *s)
{
    s->latched = 0u;
    verify_restart(s);
    s->off_ms = 0u; /* the stuck-on watch starts afresh: history from before a fault is not evidence */
    s->off_second_ms = 0u;
}

bool safety_tripped(const safety_t *s)
{
    return s->latched != 0u;
}

uint8_t safety_check_tc(safety_t *s, uint8_t ch, const max31855_reading_t *r)
{
    uint8_t flags = 0u;
    if (r->faults != 0u) {
        flags = (uint8_t)(r->faults & (CH_OPEN | CH_SHORT_GND | CH_SHORT_VCC));
        safety_latch(s, ((r->faults & MAX31855_FAULT_OC) ? FAULT_TC_OPEN : 0u) |
                            ((r->faults & MAX31855_FAULT_SCG) ? FAULT_TC_SHORT_GND : 0u) |
                            ((r->faults & MAX31855_FAULT_SCV) ? FAULT_TC_SHORT_VCC : 0u));
        s->have_last[ch] = false;
        return flags;
    }
    const rig_channel_t *limits = &RIG_CHANNELS[ch]; /* thermocouple ch is table entry ch */
    if (r->tc_cc > limits->max) {
        flags |= CH_RANGE;
        safety_latch(s, FAULT_OVER_TEMP);
    } else if (r->tc_cc < limits->min) {
        flags |= CH_RANGE;
        safety_latch(s, FAULT_UNDER_TEMP);
    }
    if (s->have_last[ch]) {
        int32_t delta = r->tc_cc - s->last_cc[ch];
        if (delta > RIG_TC_MAX_JUMP_CC || delta < -RIG_TC_MAX_JUMP_CC) {
            flags |= CH_JUMP;
            safety_latch(s, FAULT_TC_JUMP);
        }
    }
    s->last_cc[ch] = r->tc_cc;
    s->have_last[ch] = true;
    return flags;
}

/* Klipper verify_heater check_event, once per second. */
static void verify_once(safety_t *s, int32_t target_cc, int32_t air_cc)
{
    if (air_cc >= target_cc - RIG_VERIFY_HYST_CC) {
        s->approaching = false;
        if (air_cc <= target_cc + RIG_VERIFY_HYST_CC) {
            s->error_cc_s = 0;
        }
        s->last_target_cc = target_cc;
        return;
    }
    s->error_cc_s += (target_cc - RIG_VERIFY_HYST_CC) - air_cc;
    if (!s->approaching) {
        if (target_cc != s->last_target_cc) {
            s->approaching = true;
            s->goal_cc = air_cc + RIG_VERIFY_GAIN_CC;
            s->goal_ms = s->clock_ms + RIG_VERIFY_GAIN_TIME_MS;
        } else if (s->error_cc_s >= RIG_VERIFY_MAX_ERROR_CC_S) {
            safety_latch(s, FAULT_HEATER_RUNAWAY);
        }
    } else if (air_cc >= s->goal_cc) {
        s->error_cc_s = 0;
        s->goal_cc = air_cc + RIG_VERIFY_GAIN_CC;
        s->goal_ms = s->clock_ms + RIG_VERIFY_GAIN_TIME_MS;
    } else if (s->clock_ms >= s->goal_ms) {
        s->approaching = false;
    }
    s->last_target_cc = target_cc;
}

void safety_check_heater(safety_t *s, bool active, int32_t target_cc, int32_t air_cc, uint32_t dt_ms)
{
    s->clock_ms += dt_ms;
    if (!active) {
        verify_restart(s);
        return;
    }
    if (target_cc != s->hold_target_cc) {
        s->hold_target_cc = target_cc;
        s->reached = false;
    }
    if (air_cc >= target_cc - RIG_VERIFY_HYST_CC) {
        s->reached = true;
    }
    if (s->reached && air_cc < target_cc - RIG_HOLD_HYST_CC) {
        s->below_ms += dt_ms;
        if (s->below_ms >= RIG_HOLD_PERIOD_MS) {
            safety_latch(s, FAULT_HOLD_LOST);
        }
    } else {
        s->below_ms = 0u;
    }
    if (s->check_ms > dt_ms) {
        s->check_ms -= dt_ms;
        return;
    }
    s->check_ms = 1000u;
    verify_once(s, target_cc, air_cc);
}

/* A heater commanded off cannot heat the air by 2 C in 20 s: only a welded relay or shorted MOSFET
 * does that (the element's stored heat gives well under 1 C, a room step far less per 20 s). */
void safety_check_stuck(safety_t *s, uint16_t heater_pm, int32_t air_cc, uint32_t dt_ms)
{
    if (heater_pm != 0u) {
        s->off_ms = 0u;
        s->off_second_ms = 0u;
        return;
    }
    s->off_ms += dt_ms;
    if (s->off_ms < RIG_STUCK_SETTLE_MS) {
        return;
    }
    s->off_second_ms += dt_ms;
    if (s->off_ms - dt_ms < RIG_STUCK_SETTLE_MS) {
        for (uint8_t i = 0; i <= RIG_STUCK_WINDOW_S; i++) {
            s->off_air_cc[i] = air_cc; /* start of the watch: no history yet */
        }
        s->off_idx = 0u;
    }
    if (s->off_second_ms < 1000u) {
        return;
    }
    s->off_second_ms -= 1000u;
    s->off_idx = (uint8_t)((s->off_idx + 1u) % (RIG_STUCK_WINDOW_S + 1u));
    s->off_air_cc[s->off_idx] = air_cc;
    for (uint8_t i = 0; i <= RIG_STUCK_WINDOW_S; i++) {
        if (air_cc - s->off_air_cc[i] >= RIG_STUCK_RISE_CC) {
            safety_latch(s, FAULT_HEATER_STUCK);
            return;
        }
    }
}
