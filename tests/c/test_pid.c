/* PID: convergence on a first-order plant, anti-windup, derivative on measurement, clamping. */
#include <math.h>

#include "check.h"
#include "pid.h"

/* dT/dt = (gain * u - (T - ambient)) / tau */
static float plant_step(float temp, float u, float dt)
{
    const float ambient = 20.0f, gain = 0.05f, tau = 100.0f;
    return temp + dt * (gain * u - (temp - ambient)) / tau;
}

int main(void)
{
    pid_ctl_t pid;
    pid_init(&pid, 400.0f, 15.0f, 0.0f, 0.0f, 1000.0f, 1.0f);
    float temp = 20.0f, peak = 0.0f;
    for (int i = 0; i < 6000; i++) {
        temp = plant_step(temp, pid_update(&pid, 40.0f, temp, 0.1f), 0.1f);
        peak = temp > peak ? temp : peak;
    }
    CHECK(fabsf(temp - 40.0f) < 0.05f);
    CHECK(peak < 41.0f);

    /* Anti-windup: an unreachable target held for long must not wind the integrator past the output
     * range, so once the target is reachable again the overshoot stays small. */
    pid_reset(&pid);
    temp = 20.0f;
    for (int i = 0; i < 20000; i++) {
        temp = plant_step(temp, pid_update(&pid, 200.0f, temp, 0.1f), 0.1f);
    }
    CHECK(pid.integral <= 1000.0f);
    peak = 0.0f;
    for (int i = 0; i < 6000; i++) {
        temp = plant_step(temp, pid_update(&pid, 60.0f, temp, 0.1f), 0.1f);
        peak = temp > peak ? temp : peak;
    }
    CHECK(peak < 70.0f + 0.5f); /* the plant's own maximum is 70 C at full output */
    CHECK(fabsf(temp - 60.0f) < 0.1f);

    /* Derivative on measurement: a setpoint step gives no derivative kick. */
    pid_init(&pid, 0.0f, 0.0f, 100.0f, -1000.0f, 1000.0f, 0.0f);
    CHECK(fabsf(pid_update(&pid, 30.0f, 25.0f, 0.1f)) < 1e-6f);
    CHECK(fabsf(pid_update(&pid, 80.0f, 25.0f, 0.1f)) < 1e-6f);
    /* ...but a rising measurement is damped. */
    CHECK(pid_update(&pid, 80.0f, 26.0f, 0.1f) < -999.0f);

    /* Output clamping. */
    pid_init(&pid, 1000.0f, 0.0f, 0.0f, 0.0f, 500.0f, 0.0f);
    CHECK(fabsf(pid_update(&pid, 100.0f, 0.0f, 0.1f) - 500.0f) < 1e-6f);
    CHECK(fabsf(pid_update(&pid, 0.0f, 100.0f, 0.1f)) < 1e-6f);
    return check_report("test_pid");
}
