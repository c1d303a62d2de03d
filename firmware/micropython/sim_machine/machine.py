# `machine` for the simulated Pico (rp2040.py): the subset of MicroPython's rp2 port that the Pico's own
# code uses (Pin with IRQ, SPI, I2C, PWM, WDT, Timer, reset_cause, disable_irq/enable_irq, mem32), with the
# rp2 port's signatures, so main.py and thermrig_fw/hal_pico.py run here unchanged.
import rp2040

PWRON_RESET = rp2040.PWRON_RESET
WDT_RESET = rp2040.WDT_RESET


def _board():
    return rp2040.board


def reset_cause():
    return _board().reset_cause()


USB_SOF_RD = 0x50110048


class _Mem32:
    """mem32 for the one register the Pico's code reads: the USB controller's SOF_RD, the frame number of the
    host's last start-of-frame marker, one a millisecond. This Pico's USB is the unix port's stdio, whose host
    never leaves the bus (the simulation plays an unplug on the host's side of the line)."""

    def __getitem__(self, addr):
        if addr != USB_SOF_RD:
            raise ValueError("mem32[0x%08x] is not simulated" % addr)
        return (_board().now_us() // 1000) & 0x7FF


mem32 = _Mem32()


def disable_irq():
    b = _board()
    state = b.irq_enabled
    b.irq_enabled = False
    return state


def enable_irq(state):
    if state:
        _board().enable_irq()


class Pin:
    IN = 0
    OUT = 1
    OPEN_DRAIN = 2
    PULL_UP = 1
    PULL_DOWN = 2
    IRQ_FALLING = 4
    IRQ_RISING = 8

    def __init__(self, id, mode=-1, pull=-1, *, value=None):
        if not 0 <= id < 30:
            raise ValueError("invalid pin")
        self.id = id
        g = _board().gpio[id]
        if mode != -1:
            g.mode = mode
            g.pwm = None  # back to a GPIO function
        if pull != -1:
            g.pull = pull
        if value is not None:
            g.value = 1 if value else 0

    def __call__(self, v=None):
        return self.value(v)

    def value(self, v=None):
        g = _board().gpio[self.id]
        if v is None:
            return g.value
        g.value = 1 if v else 0

    def on(self):
        self.value(1)

    def off(self):
        self.value(0)

    def irq(self, handler=None, trigger=IRQ_FALLING | IRQ_RISING, hard=False):
        g = _board().gpio[self.id]
        g.handler = handler
        g.trigger = trigger
        g.obj = self

    def __repr__(self):
        return "Pin(GPIO%d)" % self.id


class SPI:
    MSB = 0
    LSB = 1

    def __init__(
        self, id, baudrate=1_000_000, *, polarity=0, phase=0, bits=8, firstbit=MSB, sck=None, mosi=None, miso=None
    ):
        sck_no = sck.id if sck is not None else None
        miso_no = miso.id if miso is not None else None
        _board().spi_init(id, baudrate, polarity, phase, bits, firstbit, sck_no, miso_no)

    def readinto(self, buf, write=0):
        _board().spi_read(buf)

    def read(self, n, write=0):
        buf = bytearray(n)
        _board().spi_read(buf)
        return bytes(buf)


class I2C:
    def __init__(self, id, *, scl=None, sda=None, freq=400_000, timeout=50_000):
        sda_no = sda.id if sda is not None else None
        scl_no = scl.id if scl is not None else None
        _board().i2c_init(id, sda_no, scl_no, freq)

    def writeto(self, addr, buf, stop=True):
        return _board().i2c_write(addr, buf)

    def readfrom_into(self, addr, buf, stop=True):
        _board().i2c_read(addr, buf)

    def readfrom(self, addr, n, stop=True):
        buf = bytearray(n)
        _board().i2c_read(addr, buf)
        return bytes(buf)


class PWM:
    def __init__(self, dest, *, freq=None, duty_u16=None, invert=False):
        self._pwm = _board().pwm_init(dest.id, freq, duty_u16, invert)

    def freq(self, value=None):
        b = _board()
        if value is None:
            return b.slice_hz[self._pwm.slice]
        b.slice_hz[self._pwm.slice] = value

    def duty_u16(self, value=None):
        if value is None:
            return self._pwm.duty
        if not 0 <= value <= 65535:
            raise ValueError("duty_u16 must be 0-65535")
        _board().pwm_set(self._pwm, value)

    def deinit(self):
        g = _board().gpio[self._pwm.pin]
        g.pwm = None
        g.mode = None


class WDT:
    def __init__(self, id=0, timeout=5000):
        _board().wdt_start(timeout)

    def feed(self):
        _board().wdt_feed()


class Timer:
    ONE_SHOT = 0
    PERIODIC = 1

    def __init__(self, id=-1, *, mode=PERIODIC, period=-1, callback=None):
        if callback is not None:
            _board().timer_start(period, callback, self)
