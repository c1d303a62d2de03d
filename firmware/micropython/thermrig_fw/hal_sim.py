# The simulated board (unix port): the plant's virtual wires (docs/plant.md) over a Unix socket. The
# sensors are read by the same drivers as on a Pico, through bus stand-ins that serve the plant's
# sample: an SPI bus with chip selects for the four MAX31855, an I2C bus for the SHT3x, tach counts.
# At boot the board says "B" and the plant answers "M <realtime> <reset cause>"; an "R <cause>" in
# answer to a request resets the MCU, which then asks again.
import asyncio
import socket
import struct
import time
from binascii import unhexlify

from . import config as c
from .max31855 import Max31855
from .sht3x import Sht3x

BOARD = b"unix-sim"


class PlantSpi:
    """SPI bus whose selected device returns its MAX31855 word from the latest plant sample."""

    def __init__(self):
        self.words = [bytearray(4) for _ in range(c.NUM_TC)]
        self.selected = -1

    def readinto(self, buf):
        if self.selected < 0:
            raise OSError(5)
        buf[:] = self.words[self.selected]


class PlantCs:
    """Chip-select pin (active low) on the plant's SPI bus."""

    def __init__(self, bus, index):
        self.bus = bus
        self.index = index

    def __call__(self, v):
        if v == 0:
            self.bus.selected = self.index
        elif self.bus.selected == self.index:
            self.bus.selected = -1


class PlantI2c:
    """I2C bus with the SHT3x answering from the plant's sample, or not at all (no ACK: OSError)."""

    def __init__(self):
        self.raw = bytearray(6)
        self.present = True

    def writeto(self, addr, data):
        if not self.present:
            raise OSError(19)

    def readfrom_into(self, addr, buf):
        if not self.present:
            raise OSError(19)
        buf[:] = self.raw


class SimHal:
    board = BOARD

    def __init__(self, plant_path, ppm=0.0, offset_us=0):
        self.realtime = False
        self.cause = 0
        self.ppm = ppm
        self.offset_us = offset_us
        self.t0_unix_us = time.time_ns() // 1000
        self.plant_t_us = 0
        self.reset_base_us = 0
        self.next_tick_us = self.t0_unix_us
        self.on_reset = None
        self.spi = PlantSpi()
        self.tcs = [Max31855(self.spi, PlantCs(self.spi, i)) for i in range(c.NUM_TC)]
        self.i2c = PlantI2c()
        self.sht = Sht3x(self.i2c)
        self.tach = [0] * c.NUM_FANS
        self.outputs = b"A 0 %d %d\n" % (c.FULL_SCALE_PM, c.FULL_SCALE_PM)  # safe until the first tick
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(struct.pack("H", socket.AF_UNIX) + plant_path.encode() + b"\x00")
        sock.setblocking(False)
        self.reader = asyncio.StreamReader(sock)
        self.writer = asyncio.StreamWriter(sock, {})

    async def start(self):
        """Ask the plant how time runs (its pace or this board's clock) and why the MCU started."""
        self.writer.write(b"B\n")
        await self.writer.drain()
        line = await self.reader.readline()
        if not line.startswith(b"M "):
            raise ValueError("bad plant message at boot: %r" % line)
        _, realtime, cause = line.split()
        self.realtime = realtime == b"1"
        self.cause = int(cause)
        self.t0_unix_us = self.next_tick_us = time.time_ns() // 1000

    def reset_cause(self):
        return self.cause

    def _sim_us(self):
        if self.realtime:
            return time.time_ns() // 1000 - self.t0_unix_us
        return self.plant_t_us

    def now_us(self):
        """The MCU's uptime: time since its last reset, scaled by the crystal error, plus an offset."""
        t = self._sim_us() - self.reset_base_us
        if self.ppm:
            return int(self.offset_us + t * (1.0 + self.ppm * 1e-6))
        return self.offset_us + t

    def now_ms(self):
        return self.now_us() // 1000

    async def tick(self):
        """Send this tick's outputs (also the request for the next sample) and wait for the sample."""
        if self.realtime:
            wait = self.next_tick_us - time.time_ns() // 1000
            if wait > 0:
                await asyncio.sleep_ms((wait + 999) // 1000)
            self.next_tick_us += c.TICK_MS * 1000
        while True:
            self.writer.write(self.outputs)
            await self.writer.drain()
            line = await self.reader.readline()
            if not line:
                raise SystemExit("plant closed the virtual wires")
            if line[0] != 0x52:
                self._parse_sample(line)
                return
            # "R <cause>": the MCU resets (its uptime restarts now) and asks again from its safe state.
            self.reset_base_us = self._sim_us()
            self.sht.started = False
            self.on_reset(int(line[2:]))

    def _parse_sample(self, line):
        # "S <t_us> <tc0> <tc1> <tc2> <tc3> <sht> <tach0> <tach1>"
        parts = line.split()
        if len(parts) != 9 or parts[0] != b"S":
            raise ValueError("bad plant message: %r" % line)
        self.plant_t_us = int(parts[1])
        for i in range(c.NUM_TC):
            self.spi.words[i][:] = unhexlify(parts[2 + i])
        self.i2c.present = parts[6] != b"-"
        if self.i2c.present:
            self.i2c.raw[:] = unhexlify(parts[6])
        for i in range(c.NUM_FANS):
            self.tach[i] = int(parts[7 + i])

    def sample(self, s):
        for i in range(c.NUM_TC):
            self.tcs[i].read_into(s.tc_raw[i])
        s.sht_present = self.sht.poll(s.sht_raw)
        for i in range(c.NUM_FANS):
            s.tach[i] = self.tach[i]

    def apply(self, heater_pm, fan_pm):
        self.outputs = b"A %d %d %d\n" % (heater_pm, fan_pm[0], fan_pm[1])

    def feed(self):
        pass  # no watchdog in the simulation: the plant's "R 1024" stands for its reset

    def host_on_bus(self):
        return True  # a socket, not USB: the bridge plays an unplug on the host's side

    async def serial_closed(self):
        raise SystemExit("serial input closed")
