"""The virtual wires: each control tick the firmware sends its actuator outputs and receives the raw
sensor values for the next instant (message formats in docs/plant.md)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from thermrig.protocol import limits
from thermrig.protocol.messages import Fault
from thermrig.sim.plant import Plant
from thermrig.sim.sensors import Tach, Thermocouple, max31855_word, sht3x_raw

TICK_S = limits.TICK_S

# Where a thermocouple of each name sits in the plant: the firmware's channel table names its
# thermocouples ("C" message), the plant places one on the matching node.
TC_PLACES: dict[str, Callable[[Plant], float]] = {
    "drive_ctrl": lambda p: p.state.ctrl,
    "drive_nand": lambda p: p.state.board,
    "heatsink": lambda p: p.state.sink,
    "chassis_air": lambda p: p.state.air,
    "slot_air": lambda p: p.slot_air_c,
    "inlet_air": lambda p: p.room_c,
}
# Protocol v1's thermocouples, for a firmware that does not send its channel table on the wires.
DEFAULT_TCS = ("drive_ctrl", "drive_nand", "heatsink", "chassis_air")
FINGER_C = 34.0  # a bead held between two fingers (a bring-up touch) reads skin temperature


class WiringError(ValueError):
    """The firmware declared a channel the plant has no place for."""


@dataclass
class SensorBank:
    """Every sensor the firmware reads, driven by one seeded random source."""

    plant: Plant
    seed: int = 0
    swapped: tuple[int, int] | None = None  # a miswired rig: two thermocouples' chip selects exchanged
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        c = self.plant.chassis
        self.rng = random.Random(self.seed)
        self.tachs = [Tach(c.pulses_per_rev) for _ in self.plant.fans]
        # "ok", "missing" (no ACK on I2C), "crc" (the humidity word's CRC byte corrupted) or "crc-temp" (a
        # bit of the temperature word flipped: read without its CRC check, the room 5.5 C off)
        self.ambient = "ok"
        self.tach_missing = [False] * len(self.tachs)  # the fan turns but its tach wire is cut
        self.wire_thermocouples(DEFAULT_TCS)

    def wire_thermocouples(self, names: tuple[str, ...] | list[str]) -> None:
        """One thermocouple per name, in the firmware's order, each on the plant node its name says."""
        unknown = [n for n in names if n not in TC_PLACES]
        if unknown:
            raise WiringError(f"the plant has no place for thermocouple(s) {', '.join(unknown)}")
        c = self.plant.chassis
        self.tc_names = tuple(names)
        # Where each channel's bead really is: its name's place, unless the rig is miswired.
        places = list(names)
        if self.swapped is not None:
            a, b = self.swapped
            if not (0 <= a < len(places) and 0 <= b < len(places)) or a == b:
                raise WiringError(f"cannot swap thermocouples {a} and {b} of {len(places)}")
            places[a], places[b] = places[b], places[a]
        self.tc_places = tuple(places)
        self.touched: set[str] = set()  # places whose bead an operator holds (bring-up)
        self.tcs = [Thermocouple(c.tc_lag_s, c.tc_noise_c, self.rng) for _ in names]
        # Fault injection (thermrig.sim.fault_injection): what each sensor reports instead of the truth.
        self.tc_faults = [0] * len(names)  # MAX31855 fault bits forced onto each channel
        self.tc_stuck: list[float | None] = [None] * len(names)  # a reading frozen at this value
        self.tc_extra_noise = [0.0] * len(names)  # extra noise, C (1 sigma): a loose or crushed junction
        # What the SPI bus reads instead of the chip's word: all ones (MISO undriven: the chip dead), all
        # zeros (MISO held low).
        self.tc_bus_word: list[int | None] = [None] * len(names)
        # A chip select held low (cs-stuck): that chip never starts a conversion again (a MAX31855
        # converts while its chip select is high) and drives MISO whichever chip the firmware selects, so
        # every read of another chip is the AND of the two words; its own channel reads its last word.
        self.cs_stuck: int | None = None
        self.cs_stuck_word = 0

    def wire_channel_map(self, channel_map: str) -> None:
        """The firmware's "C key:name,..." table: its thermocouples (keys tc<n>) are wired in order."""
        pairs = [pair.split(":", 1) for pair in channel_map.split(",")]
        if any(len(pair) != 2 for pair in pairs):
            raise WiringError(f"bad channel table from the firmware: {channel_map!r}")
        self.wire_thermocouples([name for key, name in pairs if key.startswith("tc")])

    def true_channels(self) -> list[float]:
        return [
            max(TC_PLACES[place](self.plant), FINGER_C) if place in self.touched else TC_PLACES[place](self.plant)
            for place in self.tc_places
        ]

    def touch(self, place: str, held: bool = True) -> None:
        """An operator holds (or lets go of) the bead at a place: it warms to skin temperature."""
        if place not in self.tc_places:
            raise WiringError(f"no thermocouple at {place!r} (beads at {', '.join(self.tc_places)})")
        (self.touched.add if held else self.touched.discard)(place)

    def hold_chip_select(self, channel: int) -> None:
        """Channel's chip select held low from now on: its chip keeps the word of its last conversion."""
        self.cs_stuck = channel
        bead = self.tcs[channel].value
        reading = self.tc_stuck[channel] or (bead if bead is not None else self.true_channels()[channel])
        self.cs_stuck_word = max31855_word(reading, self.plant.room_c, self.tc_faults[channel])

    def sample_line(self, dt: float) -> str:
        """The plant's "S" message: MCU-visible raw values at the plant's current time."""
        p = self.plant
        c = p.chassis
        words = []
        for i, (tc, true) in enumerate(zip(self.tcs, self.true_channels(), strict=True)):
            reading = tc.sample(true, dt)
            if self.tc_extra_noise[i]:
                reading += self.rng.gauss(0.0, self.tc_extra_noise[i])
            stuck = self.tc_stuck[i]
            word = max31855_word(reading if stuck is None else stuck, p.room_c, self.tc_faults[i])
            words.append(word if self.tc_bus_word[i] is None else self.tc_bus_word[i])
        if self.cs_stuck is not None:
            stuck = self.cs_stuck_word
            words = [stuck if i == self.cs_stuck else w & stuck for i, w in enumerate(words)]
        amb = sht3x_raw(p.room_c + self.rng.gauss(0, c.amb_noise_c), c.room_rh + self.rng.gauss(0, c.rh_noise_pct))
        if self.ambient == "crc":
            amb = amb[:5] + bytes([amb[5] ^ 0x5A])
        elif self.ambient == "crc-temp":
            amb = bytes([amb[0] ^ 0x08]) + amb[1:]
        amb_hex = "-" if self.ambient == "missing" else amb.hex().upper()
        pulses = [
            0 if missing else tach.count(fan.rpm, dt)
            for tach, fan, missing in zip(self.tachs, p.fans, self.tach_missing, strict=True)
        ]
        t_us = round(p.t * 1e6)
        tcs = " ".join(f"{w:08X}" for w in words)
        return f"S {t_us} {tcs} {amb_hex} {' '.join(str(n) for n in pulses)}\n"


def parse_outputs(line: str) -> tuple[float, float, float]:
    """The firmware's "A heater fan0 fan1" message (permille) as fractions."""
    parts = line.split()
    if len(parts) != 4 or parts[0] != "A":
        raise ValueError(f"bad actuator message from the firmware: {line!r}")
    heater, fan0, fan1 = (int(x) / limits.FULL_SCALE_PM for x in parts[1:])
    return heater, fan0, fan1


# What the plant sends a firmware besides samples: an MCU reset and the serial-line faults, as typed
# values; `line()` is their virtual-wires message (docs/plant.md), which rigsim parses.

POWER_ON = Fault(0)  # the reset cause of a power-on, a reset pin or a reboot


@dataclass(frozen=True)
class Reset:
    """The MCU restarts; `cause` is what its EVT BOOT reports: Fault(0) power-on, Fault.WATCHDOG."""

    cause: Fault = POWER_ON

    def line(self) -> str:
        return f"R {int(self.cause)}\n"


@dataclass(frozen=True)
class Garbage:
    """Bytes on the serial line: into the rig's receiver, or toward the host."""

    data: bytes
    toward_host: bool = False

    def line(self) -> str:
        return f"G {'H' if self.toward_host else 'R'} {self.data.hex().upper()}\n"


@dataclass(frozen=True)
class Silence:
    """The serial line dead both ways for `seconds` of plant time."""

    seconds: float

    def line(self) -> str:
        return f"Q {round(self.seconds * 1000)}\n"


@dataclass(frozen=True)
class Unplug:
    """The serial port gone (a USB unplug), back as a new device after `seconds` of plant time."""

    seconds: float

    def line(self) -> str:
        return f"U {round(self.seconds * 1000)}\n"


SerialFault = Garbage | Silence | Unplug


@dataclass(frozen=True)
class ClockFault:
    """The MCU's clock goes wrong: its uptime jumps forward by `jump_s`, or from now on it runs `ppm`
    fast beyond its crystal (0: as its crystal again)."""

    jump_s: float = 0.0
    ppm: int = 0

    def line(self) -> str:
        return f"J {round(self.jump_s * 1e6)}\n" if self.jump_s else f"K {self.ppm}\n"


@dataclass(frozen=True)
class TickStall:
    """The MCU's control loop stalls for `seconds`: the ticks due in that time are missed (no step, no
    telemetry)."""

    seconds: float

    def line(self) -> str:
        return f"T {round(self.seconds * 1000)}\n"
