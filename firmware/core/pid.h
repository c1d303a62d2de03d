/* PID controller: derivative on measurement, clamped output, integrator anti-windup. */
#ifndef PID_H
#define PID_H

#include <stdbool.h>

typedef struct {
    float kp, ki, kd;    /* output per degC, per degC*s, per degC/s */
    float out_min, out_max;
    float d_filter_s;    /* first-order filter time constant on the derivative */
    float integral;      /* integrator state, in output units */
    float prev_meas;
    float d_state;
    bool primed;
} pid_ctl_t;

void pid_init(pid_ctl_t *pid, float kp, float ki, float kd, float out_min, float out_max, float d_filter_s);
void pid_reset(pid_ctl_t *pid);
/* One update over dt seconds; returns the output clamped to [out_min, out_max]. */
float pid_update(pid_ctl_t *pid, float setpoint, float measured, float dt);

#endif
