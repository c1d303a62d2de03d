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
        # Fault injection (thermrig.plant.faults): what each sensor reports instead of the truth.
        self.tc_faults = [0, 0, 0, 0]  # MAX31855 fault bits forced onto each channel
        self.tc_stuck: list[float | None] = [None] * 4  # a reading frozen at this value
        self.tc_extra_noise = [0.0] * 4  # extra noise, C (1 sigma): a loose or crushed junction
        self.ambient = "ok"  # "ok", "missing" (no ACK on I2C) or "crc" (corrupted bytes)
        self.tach_missing = [False, False]  # the fan turns but its tach wire is cut

    def true_channels(self) -> list[float]:
        s = self.plant.state
        return [s.ctrl, s.board, s.sink, s.air]

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
            words.append(max31855_word(reading if stuck is None else stuck, p.room_c, self.tc_faults[i]))
        amb = sht3x_raw(p.room_c + self.rng.gauss(0, c.amb_noise_c), c.room_rh + self.rng.gauss(0, c.rh_noise_pct))
        if self.ambient == "crc":
            amb = amb[:5] + bytes([amb[5] ^ 0x5A])
        amb_hex = "-" if self.ambient == "missing" else amb.hex().upper()
        pulses = [
            0 if missing else tach.count(fan.rpm, dt)
            for tach, fan, missing in zip(self.tachs, p.fans, self.tach_missing, strict=True)
        ]
        t_us = round(p.t * 1e6)
        tcs = " ".join(f"{w:08X}" for w in words)
        return f"S {t_us} {tcs} {amb_hex} {pulses[0]} {pulses[1]}\n"


def parse_outputs(line: str) -> tuple[float, float, float]:
    """The firmware's "A heater fan0 fan1" message (permille) as fractions."""
    parts = line.split()
    if len(parts) != 4 or parts[0] != "A":
        raise ValueError(f"bad actuator message from the firmware: {line!r}")
    heater, fan0, fan1 = (int(x) / 1000.0 for x in parts[1:])
    return heater, fan0, fan1
