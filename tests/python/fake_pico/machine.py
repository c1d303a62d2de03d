# Runs under MicroPython's unix port, not CPython: a stand-in for the Pico's `machine` module (the one
# thing here with no real counterpart), recording what the firmware does to its pins so that
# test_micropython_pico.py can run main.py, bootcheck.py and hal_pico.py as they run on a board.
import sys

WDT_RESET = 3
_log = []


def log(*event):
    _log.append(event)
    sys.stderr.write(" ".join(str(x) for x in event) + "\n")


def reset_cause():
    return WDT_RESET if "--after-watchdog" in sys.argv else 1


def disable_irq():
    return 0


def enable_irq(state):
    pass


class Pin:
    IN = 0
    OUT = 1
    PULL_UP = 1
    IRQ_FALLING = 4

    def __init__(self, no, mode=-1, pull=-1, value=None):
        self.no = no
        self.handler = None
        if value is not None:
            log("pin", no, value)

    def __call__(self, v):
        pass

    def irq(self, handler, trigger):
        self.handler = handler
        # Every tach pin sees 5 edges per tick: fired by the timer below, as interrupts would.
        _tachs.append(self)


_tachs = []


class PWM:
    def __init__(self, pin, freq=0, duty_u16=0):
        self.no = pin.no
        log("pwm", self.no, freq, duty_u16)

    def duty_u16(self, v):
        log("duty", self.no, v)


class SPI:
    def __init__(self, *args, **kwargs):
        pass

    def readinto(self, buf):
        buf[0] = 0x01  # 22.00 C
        buf[1] = 0x60
        buf[2] = 0x16
        buf[3] = 0x00


class I2C:
    def __init__(self, *args, **kwargs):
        pass

    def writeto(self, addr, data):
        raise OSError(19)  # no SHT31 fitted: the ambient channel shows no data

    def readfrom_into(self, addr, buf):
        raise OSError(19)


class WDT:
    def __init__(self, timeout):
        log("wdt", timeout)

    def feed(self):
        for pin in _tachs:
            for _ in range(5):
                pin.handler(pin)


class Timer:
    def __init__(self, period, callback):
        log("timer", period)
