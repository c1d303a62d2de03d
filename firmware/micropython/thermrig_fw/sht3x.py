# SHT3x ambient temperature and humidity over I2C: a single-shot measurement is started on one tick and
# read on the next (it needs 15 ms; the firmware never sleeps waiting for it). Both words carry a CRC-8
# (poly 0x31, init 0xFF) that decode() checks: T = -45 + 175 S/65535 C, RH = 100 S/65535 %.
from micropython import const

ADDR = const(0x44)
_MEASURE = b"\x24\x00"  # single shot, high repeatability, no clock stretching


def crc8(data, start, n):
    crc = 0xFF
    for i in range(start, start + n):
        crc ^= data[i]
        for _ in range(8):
            crc = ((crc << 1) ^ 0x31) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def crc_ok(raw):
    return crc8(raw, 0, 2) == raw[2] and crc8(raw, 3, 2) == raw[5]


def decode_t_cc(raw):
    return -4500 + (17500 * ((raw[0] << 8) | raw[1]) + 32767) // 65535


def decode_rh_dpct(raw):
    return (1000 * ((raw[3] << 8) | raw[4]) + 32767) // 65535


class Sht3x:
    """The sensor on an I2C bus passed in (machine.I2C on a board, a plant stand-in in the simulation)."""

    def __init__(self, i2c, addr=ADDR):
        self.i2c = i2c
        self.addr = addr
        self.started = False

    def poll(self, raw):
        """Once per tick: collect the measurement started on the previous tick into raw (True when the
        sensor answered; its CRCs are checked by the caller), then start the next one."""
        ok = False
        if self.started:
            try:
                self.i2c.readfrom_into(self.addr, raw)
                ok = True
            except OSError:
                pass
        try:
            self.i2c.writeto(self.addr, _MEASURE)
            self.started = True
        except OSError:
            self.started = False
        return ok
