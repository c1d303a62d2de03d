# The Raspberry Pi Pico of the simulated rig, on MicroPython's unix port: its GPIOs, SPI0, I2C0, PWM
# slices, tick counter, watchdog and timers, wired as hardware/README.md wires the rig, with the plant
# (docs/plant.md, "virtual wires") behind the sensors and actuators. `machine.py` and `time.py` beside this
# file are the MicroPython APIs over it, so the Pico's own code (main.py, thermrig_fw/hal_pico.py) runs
# unchanged. It checks what the chips check: SPI mode and clock for the MAX31855s, one chip select low at
# a time, the SHT31's address, command and conversion time, the fans' PWM frequency; a firmware that gets
# one of them wrong reads garbage or stops with a one-line `WiringError`.
#
# Time: the tick counter is the plant's time (when the plant paces) or the wall clock (when the firmware
# paces), scaled by the crystal error. The hardware runs when the MCU idles: asyncio waits for I/O or a
# timer in its `wait_io_event`, where a Pico sleeps until an interrupt; there the board asks the plant for
# the next sample ("A" with the PWM outputs), and the sample's arrival moves the clock, refreshes the
# sensors and fires the tach interrupts.
import select
import socket
import struct
import sys
from binascii import unhexlify

# The rig's wiring (hardware/README.md), declared here independently of main.py's PINS: a firmware whose
# pin map differs from the board's talks to nothing.
SPI0_SCK, SPI0_MISO = 18, 16
TC_CS = {17: 0, 20: 1, 21: 2, 22: 3}  # GPIO: thermocouple channel
I2C0_SDA, I2C0_SCL = 4, 5
SHT31_ADDR = 0x44  # its ADDR pin tied low
HEATER = 10
FANS = (6, 7)
TACHS = {8: 0, 9: 1}
PWM_CHANNELS = {HEATER: 0, FANS[0]: 1, FANS[1]: 2}  # the plant's pwm-error channels

# RP2040 pin functions
SPI0_SCK_PINS, SPI0_RX_PINS = (2, 6, 18, 22), (0, 4, 16, 20)
I2C0_SDA_PINS, I2C0_SCL_PINS = (0, 4, 8, 12, 16, 20), (1, 5, 9, 13, 17, 21)

MAX31855_MAX_HZ = 5_000_000
SHT3X_MAX_HZ = 1_000_000
SHT3X_COMMANDS = (b"\x24\x00", b"\x24\x0b", b"\x24\x16")  # single shot, no clock stretching
SHT3X_CONVERSION_US = 15_500  # high repeatability, datasheet maximum
FAN_HZ = (21_000, 28_000)  # Intel 4-wire fan spec: 25 kHz nominal
HEATER_HZ = (1, 1_000)  # a DC SSR or MOSFET stage
WDT_MAX_MS = 8_388

TICKS_PERIOD = 1 << 30  # the RP2040's ticks_ms / ticks_us wrap here
TICK_US = 100_000  # the plant's step
PWRON_RESET = 1
WDT_RESET = 3
WATCHDOG_CAUSE = 1024  # the plant's reset cause for a watchdog reset (FAULT_WATCHDOG)
EIO = 5


class WiringError(SystemExit):
    """The firmware drives the board in a way the rig's chips cannot work with: one line, then stop."""


class Reset(BaseException):
    """The MCU resets: nothing of the running firmware survives (pico_sim.py boots it again)."""

    def __init__(self, cause, local=False):
        super().__init__(cause)
        self.cause = cause
        self.local = local  # the board's own watchdog, which the plant does not know about


def wiring(msg):
    raise WiringError("pico board: " + msg)


class Gpio:
    def __init__(self):
        self.mode = None  # None: input after reset, high impedance
        self.pull = None
        self.value = 0
        self.handler = None
        self.trigger = 0
        self.pwm = None  # a Pwm when the pin's function is PWM
        self.obj = None  # the Pin its interrupt handler is given


class Pwm:
    def __init__(self, pin):
        self.pin = pin
        self.slice = (pin >> 1) & 7
        self.duty = 0
        self.invert = False


board = None  # the one board of this process: pico_sim.py makes it, machine.py and time.py use it


class Board:
    def __init__(self, plant_path, ppm, offset_us, wall_ns, sleep_ms):
        # wall_ns, sleep_ms: the host's wall clock and a sleep on it (the unix port's time.time_ns and
        # time.sleep_ms, which pico_sim.py passes in: time.py, the board's own `time`, reads this board)
        self._wall_ns = wall_ns
        self._sleep_ms = sleep_ms
        self.ppm = ppm
        self.offset_us = offset_us
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(struct.pack("H", socket.AF_UNIX) + plant_path.encode() + b"\x00")
        self.poller = select.poll()
        self.poller.register(self.sock, select.POLLIN)
        self.rx = b""
        self.plant_t_us = 0
        self.words = [b"\xff\xff\xff\xff"] * len(TC_CS)  # no sample yet: MISO undriven
        self.sht = None
        self.pwm_failing = [False, False, False]  # heater, fan0, fan1: the plant's "P" (pwm-error)
        self.announced = False
        self.cause = 0
        self.power_on()

    # --- reset and boot ------------------------------------------------------------------------------

    def power_on(self, watchdog=False):
        """Every peripheral back to its reset state; ask the plant how time runs and why we started."""
        self.gpio = [Gpio() for _ in range(30)]
        self.slice_hz = [0] * 8
        self.spi = None
        self.i2c = None
        self.sht_due_us = None  # a started SHT3x measurement: when it is ready
        self.irq_enabled = True
        self.pending = []
        self.wdt_ms = 0
        self.fed_us = 0
        self.timers = []
        self.in_flight = False
        self.reset_base_us = self.plant_t_us
        self.anchor = None  # (clock_us, wall_us) once the clock runs in real time
        self.clock_us = self.offset_us
        self.send(b"B\n")
        line = self.readline()
        if not line.startswith(b"M "):
            raise ValueError("bad plant message at boot: %r" % line)
        _, realtime, cause = line.split()
        self.realtime = realtime == b"1"
        self.cause = WATCHDOG_CAUSE if watchdog else int(cause)
        self.next_sample_us = self.clock_us

    def reset_cause(self):
        return WDT_RESET if self.cause == WATCHDOG_CAUSE else PWRON_RESET

    # --- the clock -----------------------------------------------------------------------------------

    def _wall_us(self):
        return self._wall_ns() // 1000

    def now_us(self):
        if self.realtime and self.anchor is not None:
            clock, wall = self.anchor
            return clock + int((self._wall_us() - wall) * (1.0 + self.ppm * 1e-6))
        return self.clock_us

    def _set_plant_time(self, t_us):
        self.plant_t_us = t_us
        if self.realtime:
            if self.anchor is None:
                self.anchor = (self.clock_us, self._wall_us())
                self._announce(self.anchor[1])
            return
        elapsed = t_us - self.reset_base_us
        self.clock_us = self.offset_us + int(elapsed * (1.0 + self.ppm * 1e-6))
        if not self.announced:
            self._announce(self._wall_us())

    def _announce(self, t0_unix_us):
        """Once, on stderr: how the firmware's uptime relates to the host's clock (SimTruth). hal_pico counts
        its uptime from its start, at the tick counter's first value: the uptime has no offset."""
        if not self.announced:
            self.announced = True
            sys.stderr.write('{"t0_unix_us": %d, "ppm": %f, "offset_us": 0}\n' % (t0_unix_us, self.ppm))

    # --- the virtual wires ---------------------------------------------------------------------------

    def send(self, data):
        self.sock.send(data)

    def readline(self):
        while b"\n" not in self.rx:
            chunk = self.sock.recv(256)
            if not chunk:
                raise SystemExit("plant closed the virtual wires")
            self.rx += chunk
        line, self.rx = self.rx.split(b"\n", 1)
        return line

    def outputs(self):
        heater = self._output_pm(HEATER, 0, HEATER_HZ, "heater")
        fan0 = self._output_pm(FANS[0], 1000, FAN_HZ, "fan0")
        fan1 = self._output_pm(FANS[1], 1000, FAN_HZ, "fan1")
        return b"A %d %d %d\n" % (heater, fan0, fan1)

    def _output_pm(self, pin, undriven_pm, hz_range, name):
        g = self.gpio[pin]
        if g.pwm is not None:
            hz = self.slice_hz[g.pwm.slice]
            if not hz_range[0] <= hz <= hz_range[1]:
                wiring("%s PWM (GP%d) at %d Hz: it needs %d-%d Hz" % (name, pin, hz, hz_range[0], hz_range[1]))
            pm = (g.pwm.duty * 1000 + 32767) // 65535
            return 1000 - pm if g.pwm.invert else pm
        if g.mode == 1:  # a plain output: off or full
            return 1000 if g.value else 0
        return undriven_pm  # the heater stage's pull-down; a 4-wire fan runs full on an open PWM input

    def exchange_started(self):
        """Ask for the next sample, with the outputs as they are now."""
        self.send(self.outputs())
        self.in_flight = True

    def take_reply(self):
        """Wait for the plant's answer to the request in flight (handle_line)."""
        while self.in_flight:
            self.handle_line(self.readline())

    def pump(self):
        """Handle the plant's whole lines already here, without waiting for more."""
        if self.poller.poll(0):
            chunk = self.sock.recv(256)
            if not chunk:
                raise SystemExit("plant closed the virtual wires")
            self.rx += chunk
        while b"\n" in self.rx:
            line, self.rx = self.rx.split(b"\n", 1)
            self.handle_line(line)

    def handle_line(self, line):
        """A sample (the clock moves, the sensors refresh, tach edges fire), a reset, or a PWM failure."""
        if line.startswith(b"P "):  # "P <channel> <1|0>": the PWM driver of heater (0) or fan 1-2 fails
            _, channel, on = line.split()
            self.pwm_failing[int(channel)] = on == b"1"
            return
        self.in_flight = False
        if line.startswith(b"R "):
            raise Reset(int(line[2:]))
        parts = line.split()
        if len(parts) != 9 or parts[0] != b"S":
            raise ValueError("bad plant message: %r" % line)
        self._set_plant_time(int(parts[1]))
        self.words = [unhexlify(w) for w in parts[2:6]]
        self.sht = None if parts[6] == b"-" else unhexlify(parts[6])
        for pin, fan in TACHS.items():
            self._edges(pin, int(parts[7 + fan]))
        self._run_timers()
        self._check_watchdog()

    def _edges(self, pin, n):
        """n tach pulses: the fan's open collector pulls the line low n times, if something pulls it up."""
        g = self.gpio[pin]
        if g.pull != 1 or g.handler is None or not g.trigger:
            return
        for _ in range(n):
            if self.irq_enabled:
                g.handler(g.obj)
            else:
                self.pending.append(g)

    def enable_irq(self):
        self.irq_enabled = True
        pending, self.pending = self.pending, []
        for g in pending:
            g.handler(g.obj)

    # --- the MCU idling ------------------------------------------------------------------------------

    def idle(self, dt_ms, wait):
        """asyncio has nothing to run for dt_ms (-1: until I/O): the hardware runs meanwhile. `wait` is
        asyncio's own wait for I/O, given the plant's socket too so that a sample wakes the loop."""
        if dt_ms == 0:
            wait(0)
            return
        if self.realtime:
            now = self.now_us()
            if now - self.next_sample_us >= 0:
                self.exchange_started()
                self.take_reply()
                self.next_sample_us += TICK_US
            left = (self.next_sample_us - self.now_us() + 999) // 1000
            wait(max(0, left) if dt_ms < 0 else max(0, min(dt_ms, left)))
            return
        if not self.in_flight:
            self.exchange_started()
        wait(dt_ms if dt_ms >= 0 else 1000)
        self.pump()

    def idle_forever(self):
        """The firmware has stopped (interrupted to the REPL, or crashed): time and the hardware go on."""
        while True:
            if self.realtime:
                delay = (self.next_sample_us - self.now_us()) // 1000
                if delay > 0:
                    self._sleep_ms(delay)
                self.next_sample_us += TICK_US
            self.exchange_started()
            self.take_reply()

    def _run_timers(self):
        now = self.now_us()
        for t in self.timers:
            while now - t[0] >= 0:
                t[0] += t[1] * 1000
                t[2](t[3])

    def _check_watchdog(self):
        if self.wdt_ms and self.now_us() - self.fed_us > self.wdt_ms * 1000:
            raise Reset(WATCHDOG_CAUSE, local=True)

    # --- peripherals ---------------------------------------------------------------------------------

    def spi_init(self, bus_id, baudrate, polarity, phase, bits, firstbit, sck, miso):
        if bus_id != 0:
            wiring("the MAX31855s are on SPI0, not SPI%d" % bus_id)
        if sck not in SPI0_SCK_PINS or miso not in SPI0_RX_PINS:
            wiring("SPI0 has no SCK on GP%s or RX on GP%s" % (sck, miso))
        if (sck, miso) != (SPI0_SCK, SPI0_MISO):
            wiring(
                "the MAX31855s' SCK and SO are on GP%d and GP%d, not GP%s and GP%s" % (SPI0_SCK, SPI0_MISO, sck, miso)
            )
        if not 0 < baudrate <= MAX31855_MAX_HZ:
            wiring("SPI at %d Hz: the MAX31855 takes up to %d Hz" % (baudrate, MAX31855_MAX_HZ))
        if (polarity, phase) != (0, 0):
            wiring(
                "SPI mode polarity=%d phase=%d: the MAX31855 needs mode 0 (SCK idle low, SO read on the rising edge)"
                % (polarity, phase)
            )
        if bits != 8 or firstbit != 0:
            wiring("SPI with %d-bit words, firstbit=%d: the MAX31855 sends its word MSB first" % (bits, firstbit))
        self.spi = (sck, miso)

    def spi_read(self, buf):
        if self.spi is None:
            wiring("SPI read before SPI0 was set up")
        selected = [ch for pin, ch in TC_CS.items() if self.gpio[pin].mode == 1 and self.gpio[pin].value == 0]
        if len(selected) > 1:
            wiring("chip selects of thermocouples %s low at once: their SO outputs fight on MISO" % selected)
        word = self.words[selected[0]] if selected else b"\xff\xff\xff\xff"  # no chip drives MISO
        n = len(buf)
        for i in range(n):
            buf[i] = word[i] if i < 4 else 0

    def i2c_init(self, bus_id, sda, scl, freq):
        if bus_id != 0:
            wiring("the SHT31 is on I2C0, not I2C%d" % bus_id)
        if sda not in I2C0_SDA_PINS or scl not in I2C0_SCL_PINS:
            wiring("I2C0 has no SDA on GP%s or SCL on GP%s" % (sda, scl))
        if (sda, scl) != (I2C0_SDA, I2C0_SCL):
            wiring("the SHT31's SDA and SCL are on GP%d and GP%d, not GP%s and GP%s" % (I2C0_SDA, I2C0_SCL, sda, scl))
        if not 0 < freq <= SHT3X_MAX_HZ:
            wiring("I2C at %d Hz: the SHT31 takes up to %d Hz" % (freq, SHT3X_MAX_HZ))
        self.i2c = (sda, scl)

    def _sht_addressed(self, addr):
        if self.i2c is None:
            wiring("I2C transfer before I2C0 was set up")
        if addr != SHT31_ADDR or self.sht is None:
            raise OSError(EIO)  # nobody acknowledges the address

    def i2c_write(self, addr, data):
        self._sht_addressed(addr)
        if bytes(data) not in SHT3X_COMMANDS:
            raise OSError(EIO)  # not a command this firmware's single-shot read can use: NAK
        self.sht_due_us = self.now_us() + SHT3X_CONVERSION_US
        return len(data)

    def i2c_read(self, addr, buf):
        self._sht_addressed(addr)
        if self.sht_due_us is None or self.now_us() - self.sht_due_us < 0:
            raise OSError(EIO)  # no measurement, or still converting: without clock stretching it NAKs
        self.sht_due_us = None
        n = len(buf)
        for i in range(n):
            buf[i] = self.sht[i] if i < 6 else 0xFF

    def pwm_init(self, pin, freq, duty, invert):
        g = self.gpio[pin]
        g.pwm = Pwm(pin)
        g.pwm.invert = invert
        if freq is not None:
            self.slice_hz[g.pwm.slice] = freq  # both channels of a slice share its frequency
        if duty is not None:
            g.pwm.duty = duty
        return g.pwm

    def pwm_set(self, pwm, duty):
        channel = PWM_CHANNELS.get(pwm.pin)
        if channel is not None and self.pwm_failing[channel]:
            raise OSError(EIO)  # the injected pwm-error: the PWM driver fails this output
        pwm.duty = duty

    def wdt_start(self, timeout_ms):
        if not 1 <= timeout_ms <= WDT_MAX_MS:
            raise ValueError("WDT timeout %d ms: the RP2040 takes 1-%d ms" % (timeout_ms, WDT_MAX_MS))
        self.wdt_ms = timeout_ms
        self.fed_us = self.now_us()

    def wdt_feed(self):
        self.fed_us = self.now_us()

    def timer_start(self, period_ms, callback, obj):
        self.timers.append([self.now_us() + period_ms * 1000, period_ms, callback, obj])
