# Chassis-air PID in fixed point: MicroPython boxes every float on the heap, so the controller of
# firmware/core/pid.c runs here on integers (centi-degC, ms, permille). Derivative on the measurement
# (no kick on setpoint steps), first-order filtered; conditional integration as anti-windup.
from micropython import const

from . import config

# Output terms in milli-permille: small enough to stay small ints (31 bits) on an RP2040, so no heap.
_I_SCALE = const(1000)
_D_SCALE = const(1000000)  # derivative state: micro-degC per second (fine enough that rounding is no bias)


def _div_round(a, b):
    """a / b rounded to the nearest integer, halves away from zero (b > 0)."""
    return (a + b // 2) // b if a >= 0 else -((b // 2 - a) // b)


class Pid:
    def __init__(self):
        # Gains in tenths (SET kp/ki/kd): integers, so the tick stays in small ints.
        self.kp = config.AIR_KP * config.GAIN_SCALE
        self.ki = config.AIR_KI * config.GAIN_SCALE
        self.kd = config.AIR_KD * config.GAIN_SCALE
        self.reset()

    def reset(self):
        self.integral = 0
        self.prev_cc = 0
        self.d_state = 0
        self.primed = False

    def update(self, target_cc, measured_cc, dt_ms):
        """Heater duty in permille, 0..1000, for one step of dt_ms."""
        err = target_cc - measured_cc
        if not self.primed:
            self.prev_cc = measured_cc
            self.primed = True
        if dt_ms > 0:
            raw_d = _div_round((measured_cc - self.prev_cc) * 10 * _D_SCALE, dt_ms)
            self.d_state += _div_round((raw_d - self.d_state) * dt_ms, config.AIR_D_FILTER_MS + dt_ms)
        self.prev_cc = measured_cc
        tenths = config.GAIN_SCALE
        p_d = self.kp * err * _I_SCALE // (100 * tenths)
        p_d -= _div_round(self.kd * self.d_state, _D_SCALE // _I_SCALE * tenths)
        candidate = self.integral + self.ki * err * dt_ms // (100 * tenths)  # Ki * degC * s
        unclamped = p_d + candidate
        top = 1000 * _I_SCALE
        pushing_up = unclamped > top and err > 0
        pushing_down = unclamped < 0 and err < 0
        if not pushing_up and not pushing_down:
            self.integral = candidate
        # The integrator itself stays inside the actuator range, so it can never wind beyond it.
        self.integral = min(max(self.integral, 0), top)
        out = p_d + self.integral
        out = min(max(out, 0), top)
        return (out + _I_SCALE // 2) // _I_SCALE
