"""How a simulated rig's time runs, as one value: real time (the firmware's own timer paces the plant),
accelerated (the plant paces itself at N x real time; N = 0: as fast as it can) or stepped (virtual
time advances only when a test says)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Mode = Literal["realtime", "accelerated", "stepped"]


@dataclass(frozen=True)
class Pacing:
    mode: Mode = "realtime"
    factor: float = 1.0  # accelerated: x real time (0: as fast as possible)

    def __post_init__(self) -> None:
        if self.factor < 0:
            raise ValueError(f"a simulation speed is 0 (as fast as possible) or more, not {self.factor:g}")

    @classmethod
    def realtime(cls) -> Pacing:
        return cls("realtime")

    @classmethod
    def accelerated(cls, factor: float) -> Pacing:
        return cls("accelerated", factor)

    @classmethod
    def stepped(cls) -> Pacing:
        return cls("stepped", 0.0)

    @classmethod
    def of_speed(cls, speed: float) -> Pacing:
        """What a user's `speed` means: 1 is real time (the firmware paces), anything else accelerated."""
        return cls.realtime() if speed == 1 else cls.accelerated(speed)

    @property
    def is_realtime(self) -> bool:
        return self.mode == "realtime"

    @property
    def is_stepped(self) -> bool:
        return self.mode == "stepped"

    @property
    def plant_speed(self) -> float | None:
        """The plant's own pace: None when the firmware paces in real time, else x real time (0: free)."""
        return None if self.is_realtime else self.factor

    def describe(self) -> str:
        if self.mode == "accelerated":
            return "as fast as possible" if self.factor == 0 else f"{self.factor:g}x real time"
        return "real time" if self.is_realtime else "stepped"
