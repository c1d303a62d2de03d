"""The virtual wires: each control tick the firmware sends its actuator outputs and receives the raw
sensor values for the next instant (message formats in docs/plant.md)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from thermrig.plant.model import Plant
from thermrig.plant.sensors import Tach, Thermocouple, max31855_word, sht3x_raw

TICK_S = 0.1


@dataclass
class SensorBank:
    """Every sensor the firmware reads, driven by one seeded random source."""

    plant: Plant
    seed: int = 0
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        c = self.plant.chassis
        self.rng = random.Random(self.seed)
        self.tcs = [Thermocouple(c.tc_lag_s, c.tc_noise_c, self.rng) for _ in range(4)]
        self.tachs = [Tach(c.pulses_per_rev) for _ in range(2)]
        self.tc_faults = [0, 0, 0, 0]  # MAX31855 fault bits forced onto each channel (fault injection)

    def true_channels(self) -> list[float]:
        s = self.plant.state
        return [s.ctrl, s.board, s.sink, s.air]

    def sample_line(self, dt: float) -> str:
        """The plant's "S" message: MCU-visible raw values at the plant's current time."""
        p = self.plant
        c = p.chassis
        words = [
            max31855_word(tc.sample(true, dt), p.room_c, fault)
            for tc, true, fault in zip(self.tcs, self.true_channels(), self.tc_faults, strict=True)
        ]
        amb = sht3x_raw(p.room_c + self.rng.gauss(0, c.amb_noise_c), c.room_rh + self.rng.gauss(0, c.rh_noise_pct))
        pulses = [tach.count(fan.rpm, dt) for tach, fan in zip(self.tachs, p.fans, strict=True)]
        t_us = round(p.t * 1e6)
        return f"S {t_us} {words[0]:08X} {words[1]:08X} {words[2]:08X} {words[3]:08X} {amb.hex().upper()} " + (
            f"{pulses[0]} {pulses[1]}\n"
        )


def parse_outputs(line: str) -> tuple[float, float, float]:
    """The firmware's "A heater fan0 fan1" message (permille) as fractions."""
    parts = line.split()
    if len(parts) != 4 or parts[0] != "A":
        raise ValueError(f"bad actuator message from the firmware: {line!r}")
    heater, fan0, fan1 = (int(x) / 1000.0 for x in parts[1:])
    return heater, fan0, fan1
