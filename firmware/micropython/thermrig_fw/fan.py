# Fan control (firmware/core/fan.c): open-loop duty or closed-loop RPM from tach pulses counted over a
# sliding window, and stall detection. Integer arithmetic: MicroPython floats are heap objects.
from array import array

from micropython import const

from . import config

MODE_DUTY = const(0)
MODE_RPM = const(1)
# RPM loop: Kp 0.05 permille/RPM, Ki 0.10 permille/(RPM*s), integrator within +-500 permille.
_SCALE = const(10000)  # loop terms in permille * 1e4
_KP = const(500)
_I_LIMIT = const(500 * 10000)


class Fan:
    def __init__(self):
        self.pulses = array("H", bytes(2 * config.FAN_RPM_WINDOW))
        self.window_ms = array("H", bytes(2 * config.FAN_RPM_WINDOW))
        self.reset()

    def reset(self):
        self.mode = MODE_DUTY
        self.duty_pm = 0
        self.target_rpm = 0
        for i in range(config.FAN_RPM_WINDOW):
            self.pulses[i] = 0
            self.window_ms[i] = 0
        self.idx = 0
        self.rpm = 0
        self.integral = 0
        self.no_tach_ms = 0
        self.out_pm = 0

    def set_duty(self, duty_pm):
        self.mode = MODE_DUTY
        self.duty_pm = duty_pm

    def set_rpm(self, rpm):
        if self.mode != MODE_RPM:
            self.integral = 0
        self.mode = MODE_RPM
        self.target_rpm = rpm

    def tach(self, pulses, dt_ms):
        """Account the tach pulses counted over the last dt_ms; update the RPM estimate."""
        self.pulses[self.idx] = min(pulses, 0xFFFF)
        self.window_ms[self.idx] = min(dt_ms, 0xFFFF)
        self.idx = (self.idx + 1) % config.FAN_RPM_WINDOW
        total = 0
        ms = 0
        for i in range(config.FAN_RPM_WINDOW):
            total += self.pulses[i]
            ms += self.window_ms[i]
        self.rpm = (total * 60000) // (ms * config.FAN_PULSES_PER_REV) if ms else 0
        if pulses == 0 and self.out_pm >= config.FAN_MIN_DUTY_PM:
            self.no_tach_ms += dt_ms
        else:
            self.no_tach_ms = 0

    def update(self, dt_ms):
        """The output duty for this tick, permille."""
        if self.mode == MODE_DUTY:
            self.out_pm = self.duty_pm
            return self.out_pm
        if self.target_rpm == 0:
            self.integral = 0
            self.out_pm = 0
            return 0
        err = self.target_rpm - self.rpm
        self.integral = min(max(self.integral + err * dt_ms, -_I_LIMIT), _I_LIMIT)
        total = 1000 * _SCALE * self.target_rpm // config.FAN_MAX_RPM + _KP * err + self.integral
        out = min(max((total + _SCALE // 2) // _SCALE, 0), 1000)
        # Never drive a fan below the duty at which it may stall while a speed is requested.
        self.out_pm = max(out, config.FAN_MIN_DUTY_PM)
        return self.out_pm

    def stalled(self):
        return self.no_tach_ms >= config.FAN_STALL_MS
