/* Fan: RPM from tach pulses, duty mode, closed-loop RPM on a simple fan model, stall detection. */
#include "check.h"
#include "fan.h"

/* A fan with RPM = 3000 * duty (no minimum) and exact pulse accounting, 2 pulses/rev. */
typedef struct {
    float rpm;
    float phase;
} model_t;

static uint16_t model_step(model_t *m, uint16_t duty_pm, float dt)
{
    m->rpm += (3000.0f * (float)duty_pm / 1000.0f - m->rpm) * (dt / 1.5f);
    m->phase += m->rpm / 60.0f * 2.0f * dt;
    uint16_t pulses = (uint16_t)m->phase;
    m->phase -= (float)pulses;
    return pulses;
}

int main(void)
{
    fan_t fan;
    fan_init(&fan);
    /* 4 pulses every 100 ms = 20 rev/s = 1200 RPM once the window is full. */
    for (int i = 0; i < 10; i++) {
        fan_tach(&fan, 4, 100);
    }
    CHECK_INT(fan.rpm, 1200);
    fan_set_duty(&fan, 400);
    CHECK_INT(fan_update(&fan, 100), 400);

    /* Closed loop: reaches 1800 RPM within 2 % on a fan whose duty-to-RPM curve is unknown to it. */
    fan_init(&fan);
    model_t m = {0};
    fan_set_rpm(&fan, 1800);
    uint16_t duty = 0;
    for (int i = 0; i < 600; i++) {
        fan_tach(&fan, model_step(&m, duty, 0.1f), 100);
        duty = fan_update(&fan, 100);
    }
    CHECK(fan.rpm > 1764 && fan.rpm < 1836);
    CHECK(!fan_stalled(&fan));
    fan_set_rpm(&fan, 0);
    CHECK_INT(fan_update(&fan, 100), 0);
    fan_set_rpm(&fan, 10); /* a speed below what the minimum duty gives still drives the minimum */
    CHECK_INT(fan_update(&fan, 100), RIG_FAN_MIN_DUTY_PM);

    /* Stall: driven at or above the minimum duty, no pulses for RIG_FAN_STALL_MS. */
    fan_init(&fan);
    fan_set_duty(&fan, 500);
    fan_update(&fan, 100);
    for (uint32_t t = 0; t + 100u < RIG_FAN_STALL_MS; t += 100u) {
        fan_tach(&fan, 0, 100);
    }
    CHECK(!fan_stalled(&fan));
    fan_tach(&fan, 0, 100);
    CHECK(fan_stalled(&fan));
    fan_tach(&fan, 3, 100); /* a pulse clears the condition (the latched fault is the supervisor's) */
    CHECK(!fan_stalled(&fan));
    /* A fan commanded off never counts as stalled. */
    fan_set_duty(&fan, 0);
    fan_update(&fan, 100);
    for (int i = 0; i < 100; i++) {
        fan_tach(&fan, 0, 100);
    }
    CHECK(!fan_stalled(&fan));
    return check_report("test_fan");
}
