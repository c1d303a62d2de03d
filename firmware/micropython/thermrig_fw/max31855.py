# MAX31855 thermocouple front end: a read-only SPI device. The 32-bit word, big-endian: D31..D18
# thermocouple (0.25 C, signed), D16 fault, D2 short to VCC, D1 short to GND, D0 open. Decoded from its
# four bytes so no 32-bit int is formed (it would not be a small int on an RP2040: a heap object).
from micropython import const

FAULT_OC = const(0x01)
FAULT_SCG = const(0x02)
FAULT_SCV = const(0x04)


def decode_tc_cc(raw):
    """Thermocouple temperature in centi-degC (meaningless when faults(raw) is not 0)."""
    tc = (raw[0] << 6) | (raw[1] >> 2)
    if tc & 0x2000:
        tc -= 0x4000
    return tc * 25


def faults(raw):
    if raw[0] == raw[1] == raw[2] == raw[3] and raw[0] in (0, 0xFF):
        return FAULT_OC  # no chip drove MISO (all ones or zeros): read as open, as the Zephyr core does
    f = raw[3] & 0x07
    if raw[1] & 0x01 and not f:
        f = FAULT_OC  # fault flag without a cause bit: treat as open
    return f


class Max31855:
    """One chip on a shared SPI bus: the bus and its chip-select pin are passed in (machine.SPI and
    machine.Pin on a board, stand-ins backed by the plant in the simulation)."""

    def __init__(self, spi, cs):
        self.spi = spi
        self.cs = cs
        self.cs(1)

    def read_into(self, raw):
        """Read the 4-byte word into raw. A failed transfer reads as an open thermocouple."""
        self.cs(0)
        try:
            self.spi.readinto(raw)
        except OSError:
            raw[0] = raw[1] = raw[2] = 0
            raw[3] = FAULT_OC
        finally:
            self.cs(1)
