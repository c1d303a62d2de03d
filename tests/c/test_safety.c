/* Safety supervisor: thermocouple faults, limits, jumps, verify_heater runaway, hold loss, CLEAR. */
#include "check.h"
#include "safety.h"

static max31855_reading_t reading(int32_t cc, uint8_t faults)
{
    max31855_reading_t r = {cc, 2500, faults};
    return r;
}

/* Run the heater check for `seconds` with the air following temp(t) = start + rate * t. */
static uint32_t run_heater(safety_t *s, int32_t target, int32_t start, int32_t rate_cc_per_s, uint32_t seconds)
{
    for (uint32_t ms = 0; ms < seconds * 1000u; ms += 100u) {
        safety_check_heater(s, true, target, start + (int32_t)((int64_t)rate_cc_per_s * ms / 1000), 100u);
        if (s->latched) {
            return ms;
        }
    }
    return UINT32_MAX;
}

int main(void)
{
    safety_t s;
    safety_init(&s);
    max31855_reading_t r = reading(2500, 0);
    CHECK_INT(safety_check_tc(&s, 0, &r), 0);
    CHECK(!safety_tripped(&s));

    r = reading(0, MAX31855_FAULT_OC);
    CHECK_INT(safety_check_tc(&s, 0, &r), CH_OPEN);
    CHECK_INT(s.latched, FAULT_TC_OPEN);
    r = reading(0, MAX31855_FAULT_SCG | MAX31855_FAULT_SCV);
    CHECK_INT(safety_check_tc(&s, 1, &r), CH_SHORT_GND | CH_SHORT_VCC);
    CHECK_INT(s.latched, FAULT_TC_OPEN | FAULT_TC_SHORT_GND | FAULT_TC_SHORT_VCC);
    /* Latched: a good reading does not clear it. */
    r = reading(2500, 0);
    safety_check_tc(&s, 0, &r);
    CHECK(safety_tripped(&s));
    safety_clear(&s);
    CHECK(!safety_tripped(&s));

    /* Per-channel limits: chassis air max 70 C, controller 110 C. */
    safety_init(&s);
    r = reading(7000, 0);
    CHECK_INT(safety_check_tc(&s, RIG_TC_CHASSIS_AIR, &r), 0);
    safety_init(&s);
    r = reading(7025, 0);
    CHECK_INT(safety_check_tc(&s, RIG_TC_CHASSIS_AIR, &r), CH_RANGE);
    CHECK_INT(s.latched, FAULT_OVER_TEMP);
    safety_init(&s);
    r = reading(7025, 0);
    CHECK_INT(safety_check_tc(&s, 0 /* drive_ctrl */, &r), 0);
    r = reading(RIG_TC_MIN_CC - 25, 0);
    safety_init(&s);
    safety_check_tc(&s, 2, &r);
    CHECK_INT(s.latched, FAULT_UNDER_TEMP);

    /* Implausible jump between consecutive samples; an open in between resets the reference. */
    safety_init(&s);
    r = reading(3000, 0);
    safety_check_tc(&s, 2, &r);
    r = reading(3000 + RIG_TC_MAX_JUMP_CC, 0);
    CHECK_INT(safety_check_tc(&s, 2, &r), 0);
    r = reading(3000 + 3 * RIG_TC_MAX_JUMP_CC, 0);
    CHECK_INT(safety_check_tc(&s, 2, &r), CH_JUMP);
    CHECK_INT(s.latched, FAULT_TC_JUMP);

    /* Heating at 0.2 C/s toward 45 C from 22 C: no fault, and within range after. */
    safety_init(&s);
    CHECK_INT(run_heater(&s, 4500, 2200, 20, 200), UINT32_MAX);
    /* Heater open: air stays at 22 C. Klipper: heating_gain 2 C within check_gain_time 20 s, after which
     * the error accumulates (target - hyst - temp = 18 C/s) to max_error 120: 7 s more. */
    safety_init(&s);
    uint32_t t = run_heater(&s, 4500, 2200, 0, 120);
    CHECK_INT(s.latched, FAULT_HEATER_RUNAWAY);
    CHECK(t >= RIG_VERIFY_GAIN_TIME_MS && t <= RIG_VERIFY_GAIN_TIME_MS + 10000u);
    /* Too slow: 0.05 C/s gains 1 C in 20 s, less than heating_gain. */
    safety_init(&s);
    CHECK(run_heater(&s, 4500, 2200, 5, 120) != UINT32_MAX);

    /* Marlin thermal protection: at target, then 5 C below for 40 s (just outside Klipper's 5 C
     * hysteresis band the error grows only 0.25 C/s, so max_error would take 480 s). */
    safety_init(&s);
    CHECK_INT(run_heater(&s, 4500, 4500, 0, 60), UINT32_MAX);
    t = run_heater(&s, 4500, 4475 - 400, 0, 60);
    CHECK_INT(s.latched, FAULT_HOLD_LOST);
    CHECK(t >= RIG_HOLD_PERIOD_MS - 100u && t <= RIG_HOLD_PERIOD_MS + 100u);
    /* A new target restarts the hold watch: raising it is heating, not a loss. */
    safety_init(&s);
    run_heater(&s, 3000, 3000, 0, 10);
    CHECK_INT(run_heater(&s, 4500, 3000, 20, 100), UINT32_MAX);
    /* Inactive heater: nothing is checked. */
    safety_init(&s);
    for (int i = 0; i < 1000; i++) {
        safety_check_heater(&s, false, 4500, 2000, 100u);
    }
    CHECK(!safety_tripped(&s));
    /* CLEAR starts the stuck-on watch afresh: a reading that comes back after a sensor fault is no
     * evidence that the heater is stuck. */
    safety_init(&s);
    for (int i = 0; i < 150; i++) {
        safety_check_stuck(&s, 0u, 3000, 100u);
    }
    safety_latch(&s, FAULT_TC_OPEN);
    safety_clear(&s);
    for (int i = 0; i < 50; i++) {
        safety_check_stuck(&s, 0u, 3300, 100u);
    }
    CHECK_INT(s.latched, 0);
    /* Without the CLEAR, the same jump is read as a stuck heater. */
    safety_init(&s);
    for (int i = 0; i < 150; i++) {
        safety_check_stuck(&s, 0u, 3000, 100u);
    }
    for (int i = 0; i < 50; i++) {
        safety_check_stuck(&s, 0u, 3300, 100u);
    }
    CHECK_INT(s.latched, FAULT_HEATER_STUCK);
    return check_report("test_safety");
}
