"""Sensor front ends as the firmware sees them: MAX31855 words, SHT3x raw bytes, fan tach pulses."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

MAX31855_OC = 0x1
MAX31855_SCG = 0x2
MAX31855_SCV = 0x4
MAX31855_STEP_C = 0.25  # a thermocouple reading's resolution


def max31855_word(tc_c: float, internal_c: float, faults: int = 0) -> int:
    """The 32-bit word for a thermocouple reading (0.25 C steps) and cold junction (0.0625 C steps)."""
    tc = max(-0x2000, min(0x1FFF, round(tc_c / MAX31855_STEP_C))) & 0x3FFF
    internal = max(-0x800, min(0x7FF, round(internal_c / 0.0625))) & 0xFFF
    word = (tc << 18) | (internal << 4) | (faults & 0x7)
    if faults:
        word |= 0x10000
        word &= ~(0x3FFF << 18)  # the chip reports a zero temperature with a fault
    return word


def sht3x_crc8(data: bytes) -> int:
    crc = 0xFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x31) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def sht3x_raw(temp_c: float, rh_pct: float) -> bytes:
    st = max(0, min(0xFFFF, round((temp_c + 45.0) * 65535.0 / 175.0)))
    srh = max(0, min(0xFFFF, round(rh_pct * 65535.0 / 100.0)))
    t = st.to_bytes(2, "big")
    h = srh.to_bytes(2, "big")
    return t + bytes([sht3x_crc8(t)]) + h + bytes([sht3x_crc8(h)])


@dataclass
class Thermocouple:
    """A bead with first-order lag and white noise, read through a MAX31855."""

    lag_s: float
    noise_c: float
    rng: random.Random
    value: float | None = None

    def sample(self, true_c: float, dt: float) -> float:
        if self.value is None:
            self.value = true_c
        self.value += (true_c - self.value) * (1.0 - math.exp(-dt / self.lag_s))
        return self.value + self.rng.gauss(0.0, self.noise_c)


@dataclass
class Tach:
    """Open-collector tach: pulses_per_rev per revolution, counted between control ticks."""

    pulses_per_rev: int
    phase: float = 0.0

    def count(self, rpm: float, dt: float) -> int:
        self.phase += rpm / 60.0 * self.pulses_per_rev * dt
        pulses = int(self.phase)
        self.phase -= pulses
        return pulses
