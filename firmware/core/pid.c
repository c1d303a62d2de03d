/* PID: derivative acts on the measurement (no kick on setpoint steps); integration stops while
 * the output is saturated in the direction the error pushes (conditional-integration anti-windup). */
#include "pid.h"

void pid_init(pid_ctl_t *pid, float kp, float ki, float kd, float out_min, float out_max, float d_filter_s)
{
    pid->kp = kp;
    pid->ki = ki;
    pid->kd = kd;
    pid->out_min = out_min;
    pid->out_max = out_max;
    pid->d_filter_s = d_filter_s;
    pid_reset(pid);
}

void pid_reset(pid_ctl_t *pid)
{
    pid->integral = 0.0f;
    pid->prev_meas = 0.0f;
    pid->d_state = 0.0f;
    pid->primed = false;
}

static float clampf(float v, float lo, float hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

float pid_update(pid_ctl_t *pid, float setpoint, float measured, float dt)
{
    float err = setpoint - measured;
    if (!pid->primed) {
        pid->prev_meas = measured;
        pid->primed = true;
    }
    float raw_d = (dt > 0.0f) ? (measured - pid->prev_meas) / dt : 0.0f;
    pid->prev_meas = measured;
    float alpha = (pid->d_filter_s > 0.0f) ? dt / (pid->d_filter_s + dt) : 1.0f;
    pid->d_state += alpha * (raw_d - pid->d_state);

    float p_d = pid->kp * err - pid->kd * pid->d_state;
    float candidate = pid->integral + pid->ki * err * dt;
    float unclamped = p_d + candidate;
    bool pushing_up = unclamped > pid->out_max && err > 0.0f;
    bool pushing_down = unclamped < pid->out_min && err < 0.0f;
    if (!pushing_up && !pushing_down) {
        pid->integral = candidate;
    }
    /* Keep the integrator itself inside the actuator range so it can never wind beyond it. */
    pid->integral = clampf(pid->integral, pid->out_min, pid->out_max);
    return clampf(p_d + pid->integral, pid->out_min, pid->out_max);
}
