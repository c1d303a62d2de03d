"""The bring-up's operator on the simulated rig: the plant plays the touches (the bead at a place warms
to skin temperature while held) and says yes to the heater pulse."""

from __future__ import annotations

from dataclasses import dataclass, field

from thermrig.sim.wires import SensorBank


@dataclass
class SimulatedOperator:
    sensors: SensorBank
    asked: list[str] = field(default_factory=list)  # what the bring-up asked, in order

    def touch(self, place: str, channel: str) -> None:
        self.asked.append(f"touch {place} ({channel})")
        self.sensors.touch(place)

    def let_go(self, place: str) -> None:
        self.asked.append(f"let go {place}")
        self.sensors.touch(place, held=False)

    def go_ahead(self, question: str) -> bool:
        self.asked.append(question)
        return True
