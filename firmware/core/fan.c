/* Fan control: RPM is counted over a sliding window of ticks (2 pulses/rev), the RPM loop is a
 * PI around a duty feedforward, and a driven fan without tach pulses counts toward a stall. */
#include "fan.h"

#define FAN_RPM_KP 0.05f  /* permille per RPM */
#define FAN_RPM_KI 0.10f  /* permille per RPM*s */
#define FAN_RPM_I_LIMIT 500.0f

void fan_init(fan_t *fan)
{
    *fan = (fan_t){0};
    fan->mode = FAN_MODE_DUTY;
}

void fan_set_duty(fan_t *fan, uint16_t duty_pm)
{
    fan->mode = FAN_MODE_DUTY;
    fan->duty_pm = duty_pm;
}

void fan_set_rpm(fan_t *fan, uint16_t rpm)
{
    if (fan->mode != FAN_MODE_RPM) {
        fan->integral = 0.0f;
    }
    fan->mode = FAN_MODE_RPM;
    fan->target_rpm = rpm;
}

void fan_tach(fan_t *fan, uint16_t pulses, uint32_t dt_ms)
{
    fan->pulses[fan->idx] = pulses;
    fan->window_ms[fan->idx] = dt_ms;
    fan->idx = (uint8_t)((fan->idx + 1u) % RIG_FAN_RPM_WINDOW);
    uint32_t total = 0, ms = 0;
    for (uint8_t i = 0; i < RIG_FAN_RPM_WINDOW; i++) {
        total += fan->pulses[i];
        ms += fan->window_ms[i];
    }
    fan->rpm = ms ? (total * 60000u) / (ms * RIG_FAN_PULSES_PER_REV) : 0u;
    if (pulses == 0u && fan->out_pm >= RIG_FAN_MIN_DUTY_PM) {
        fan->no_tach_ms += dt_ms;
    } else {
        fan->no_tach_ms = 0u;
    }
}

static uint16_t clamp_pm(float v)
{
    return (uint16_t)(v < 0.0f ? 0.0f : (v > (float)RIG_FULL_SCALE_PM ? (float)RIG_FULL_SCALE_PM : v + 0.5f));
}

uint16_t fan_update(fan_t *fan, uint32_t dt_ms)
{
    if (fan->mode == FAN_MODE_DUTY) {
        fan->out_pm = fan->duty_pm;
        return fan->out_pm;
    }
    if (fan->target_rpm == 0u) {
        fan->integral = 0.0f;
        fan->out_pm = 0u;
        return 0u;
    }
    float err = (float)fan->target_rpm - (float)fan->rpm;
    float ff = (float)RIG_FULL_SCALE_PM * (float)fan->target_rpm / (float)RIG_FAN_MAX_RPM;
    fan->integral += FAN_RPM_KI * err * ((float)dt_ms / 1000.0f);
    if (fan->integral > FAN_RPM_I_LIMIT) {
        fan->integral = FAN_RPM_I_LIMIT;
    } else if (fan->integral < -FAN_RPM_I_LIMIT) {
        fan->integral = -FAN_RPM_I_LIMIT;
    }
    uint16_t out = clamp_pm(ff + FAN_RPM_KP * err + fan->integral);
    /* Never drive a fan below the duty at which it may stall while a speed is requested. */
    fan->out_pm = out < RIG_FAN_MIN_DUTY_PM ? (uint16_t)RIG_FAN_MIN_DUTY_PM : out;
    return fan->out_pm;
}

bool fan_stalled(const fan_t *fan)
{
    return fan->no_tach_ms >= RIG_FAN_STALL_MS;
}
