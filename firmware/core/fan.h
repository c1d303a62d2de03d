/* Fan control: open-loop duty or closed-loop RPM from tach pulses, and stall detection. */
#ifndef FAN_H
#define FAN_H

#include <stdbool.h>
#include <stdint.h>

#include "rig_config.h"

typedef enum { FAN_MODE_DUTY = 0, FAN_MODE_RPM } fan_mode_t;

typedef struct {
    fan_mode_t mode;
    uint16_t duty_pm;     /* commanded duty in duty mode, permille */
    uint16_t target_rpm;  /* commanded speed in RPM mode */
    uint16_t pulses[RIG_FAN_RPM_WINDOW];
    uint32_t window_ms[RIG_FAN_RPM_WINDOW];
    uint8_t idx;
    uint32_t rpm;         /* measured over the pulse window */
    float integral;       /* RPM loop integrator, permille */
    uint32_t no_tach_ms;  /* how long the fan has been driven with no tach pulse */
    uint16_t out_pm;      /* last output duty */
} fan_t;

void fan_init(fan_t *fan);
void fan_set_duty(fan_t *fan, uint16_t duty_pm);
void fan_set_rpm(fan_t *fan, uint16_t rpm);
/* Account the tach pulses counted over the last dt_ms, update the RPM estimate. */
void fan_tach(fan_t *fan, uint16_t pulses, uint32_t dt_ms);
/* Compute the output duty for this tick. */
uint16_t fan_update(fan_t *fan, uint32_t dt_ms);
/* True when the fan has been driven at or above the minimum duty with no tach for the stall time. */
bool fan_stalled(const fan_t *fan);

#endif
