# The Raspberry Pi Pico board: MAX31855s on SPI0, the SHT3x on I2C0, fans at 25 kHz PWM with tach
# counted by pin interrupts, the heater on PWM, a hardware watchdog. Pins come from main.py (PINS).
import asyncio
import time

import machine
from machine import I2C, PWM, SPI, WDT, Pin

from . import config as c
from .max31855 import Max31855
from .sht3x import Sht3x

BOARD = b"rp2040-pico"
FAN_PWM_HZ = 25000  # Intel 4-wire fan spec
HEATER_PWM_HZ = 100  # slow enough for a DC SSR; the heater's mass smooths it
WDT_MS = 2000  # fed every 100 ms tick; a stuck loop resets the MCU into its safe state
USB_SOF_RD = 0x50110048  # USBCTRL_REGS SOF_RD: the frame number of the host's last start-of-frame marker
SUSPEND_MS = 3  # a USB bus without start-of-frame markers this long is suspended (or its cable is out)


def _u16(pm):
    return pm * 65535 // 1000


DUTY_SLACK = 256  # u16: a slice's compare level rounds a duty to whole counts of its period (13 at 25 kHz)


def _drive(pwm, duty):
    """A PWM output's duty, read back from its slice: a slice that does not hold the level written to it
    has failed, and says so as a driver would (OSError EIO): main.py then makes the outputs safe and the
    watchdog restarts the MCU."""
    pwm.duty_u16(duty)
    if abs(pwm.duty_u16() - duty) > DUTY_SLACK:
        raise OSError(5)


class SetupError(Exception):
    """A peripheral the chip refuses to set up as asked (ValueError from machine): which one, and why."""


def _setup(what, make):
    try:
        return make()
    except ValueError as exc:
        raise SetupError("%s: %s" % (what, exc))


class Tach:
    """Falling edges on a fan's open-collector tach line, counted in an interrupt handler."""

    def __init__(self, pin_no):
        self.count = 0
        self.pin = Pin(pin_no, Pin.IN, Pin.PULL_UP)
        self.pin.irq(self._edge, Pin.IRQ_FALLING)

    def _edge(self, _pin):
        self.count += 1  # a small int: no allocation inside the handler

    def take(self):
        state = machine.disable_irq()
        n = self.count
        self.count = 0
        machine.enable_irq(state)
        return n


class PicoHal:
    board = BOARD

    def __init__(self, pins):
        # Safe state first: heater off, fans full, before anything else can fail.
        self.heater = PWM(Pin(pins["heater"]), freq=HEATER_PWM_HZ, duty_u16=0)
        self.fans = [PWM(Pin(p), freq=FAN_PWM_HZ, duty_u16=65535) for p in pins["fans"]]
        self.on_reset = None
        self._cause = c.FAULT_WATCHDOG if machine.reset_cause() == machine.WDT_RESET else 0
        sck, miso = pins["spi"]
        spi = _setup(
            "SPI0 (the MAX31855s)",
            lambda: SPI(0, baudrate=4_000_000, polarity=0, phase=0, sck=Pin(sck), miso=Pin(miso)),
        )
        self.tcs = [Max31855(spi, Pin(cs, Pin.OUT, value=1)) for cs in pins["tc_cs"]]
        sda, scl = pins["i2c"]
        self.sht = Sht3x(_setup("I2C0 (the SHT31)", lambda: I2C(0, sda=Pin(sda), scl=Pin(scl), freq=100_000)))
        self.tachs = [Tach(p) for p in pins["tach"]]
        self.wdt = _setup("the watchdog (WDT_MS = %d in hal_pico.py)" % WDT_MS, lambda: WDT(timeout=WDT_MS))
        self._last_us = time.ticks_us()
        self._up_ms = 0
        self._frac_us = 0
        self._next_ms = time.ticks_ms()
        self._sof = -1
        self._sof_ms = self._next_ms

    def reset_cause(self):
        return self._cause

    def _advance(self):
        # Uptime as ms plus a µs remainder, from the 30-bit µs tick counter (read at least every tick,
        # far more often than it wraps): small ints only, so the tick allocates nothing.
        t = time.ticks_us()
        self._frac_us += time.ticks_diff(t, self._last_us)
        self._last_us = t
        self._up_ms += self._frac_us // 1000
        self._frac_us %= 1000

    def now_ms(self):
        self._advance()
        return self._up_ms

    def now_us(self):
        """µs uptime for a PING's stamp: past 18 min a long int (a heap object), once per command."""
        self._advance()
        return self._up_ms * 1000 + self._frac_us

    def host_on_bus(self):
        """Whether a USB host drives the bus: its start-of-frame markers, one a millisecond, moved the USB
        controller's frame number within SUSPEND_MS. With the cable out MicroPython's USB CDC says the port is
        writable (it keeps the latest bytes for the next host), but its FIFO is full and a write then waits
        500 ms for room: every tick's frame stalled the loop (2 ticks a second) until the cable was back."""
        sof = machine.mem32[USB_SOF_RD] & 0x7FF
        now = time.ticks_ms()
        if sof != self._sof:
            self._sof = sof
            self._sof_ms = now
        return time.ticks_diff(now, self._sof_ms) <= SUSPEND_MS

    def tick(self):
        """The wait for the next 100 ms tick, for the caller to await: asyncio's sleep itself, a singleton,
        rather than a coroutine of this method's own, which would be a heap object each tick."""
        self._next_ms = time.ticks_add(self._next_ms, c.TICK_MS)
        wait = time.ticks_diff(self._next_ms, time.ticks_ms())
        if wait <= 0:
            self._next_ms = time.ticks_ms()  # late (a long command): keep the cadence from now on
            wait = 0
        return asyncio.sleep_ms(wait)

    def sample(self, s):
        for i in range(c.NUM_TC):
            self.tcs[i].read_into(s.tc_raw[i])
        s.sht_present = self.sht.poll(s.sht_raw)
        for i in range(c.NUM_FANS):
            s.tach[i] = self.tachs[i].take()

    def apply(self, heater_pm, fan_pm):
        _drive(self.heater, _u16(heater_pm))
        for i in range(c.NUM_FANS):
            _drive(self.fans[i], _u16(fan_pm[i]))

    def safe(self):
        """Heater off, fans full, each on its own: a PWM that fails (OSError) keeps none of the others from
        their safe state. The first failure is raised once all were tried."""
        failed = None
        for pwm, duty in [(self.heater, 0)] + [(fan, 65535) for fan in self.fans]:
            try:
                pwm.duty_u16(duty)
            except OSError as exc:
                failed = failed or exc
        if failed:
            raise failed

    def feed(self):
        self.wdt.feed()

    def keep_alive(self):
        """After a deliberate interrupt (mpremote wants the REPL): outputs safe, and a timer feeds the
        watchdog, which cannot be stopped once started, so the REPL stays usable for flashing."""
        self.safe()
        self._timer = machine.Timer(period=WDT_MS // 4, callback=lambda _t: self.wdt.feed())

    async def serial_closed(self):
        await asyncio.sleep_ms(c.TICK_MS)  # USB not connected: nothing to read yet
