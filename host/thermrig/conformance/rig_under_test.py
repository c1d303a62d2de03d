"""What the checks run against: a live rig in real time, or the stepped simulation, where time is
virtual and faults can be injected. Both give the rig's telemetry for a stretch of rig time, and are
put safe the host's one way, through their testbed."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

from thermrig.dut.simulation import FaultControl, SimulationControl
from thermrig.link.rig_link import RigLink, RigTimeout
from thermrig.protocol.messages import Telemetry
from thermrig.testbed import Testbed

HEARTBEAT_S = 0.5  # how often the host speaks while heating: well inside the 3 s deadline


@dataclass
class RigUnderTest:
    bed: Testbed  # the session with the rig: its link, and how the host puts it safe
    sim: SimulationControl | None = None
    destructive: bool = False  # allowed to heat; always true for a simulation
    log: list[str] = field(default_factory=list)
    # A finding of an earlier check that a heating check cannot be judged past (the heater heats at 0 %,
    # a fault latched by a thermocouple that does not read): those checks are then not applicable.
    blocked: str | None = None

    @property
    def link(self) -> RigLink:
        return self.bed.link

    def safe(self) -> None:
        """Heater off, fans full, through the testbed (Testbed.safe); a rig that does not ack it raises."""
        self.bed.safe(checked=True)

    @property
    def faults(self) -> FaultControl | None:
        return self.sim.faults if self.sim is not None else None

    @property
    def real_time(self) -> bool:
        """Whether the rig's clock runs with the host's (time-sync quality means something)."""
        return self.sim is None or self.sim.pacing.is_realtime

    @property
    def may_heat(self) -> bool:
        return self.sim is not None or self.destructive

    def run_for(self, seconds: float, heartbeat: bool = True, line_dead: bool = False) -> list[Telemetry]:
        """Let `seconds` of rig time pass, pinging every HEARTBEAT_S if heartbeat; return the telemetry.
        line_dead: nothing crosses the line (an injected silence), so no frame is waited for."""
        self.link.drain_telemetry()
        frames: list[Telemetry] = []
        steps = max(1, round(seconds / HEARTBEAT_S))
        for _ in range(steps):
            if heartbeat:
                with contextlib.suppress(RigTimeout):  # a dead line is what some checks are about
                    self.link.ping()
            if self.sim is not None:
                self.sim.advance(seconds / steps)
            else:
                time.sleep(seconds / steps)
            frames += self.link.drain_telemetry()
        if line_dead:
            return frames
        # The last frames of a stepped advance are on the pty already; give the reader a moment.
        want = round(seconds * 1000 / self.link.telemetry_period_ms)
        return frames + self.link.collect_telemetry(want - len(frames), timeout=0.5)

    def room_c(self) -> float:
        frames = self.run_for(0.5)
        return frames[-1].named("ambient_t").value if frames and frames[-1].named("ambient_t").ok else 22.0
