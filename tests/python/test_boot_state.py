"""Every reset of the simulated rig, a plain one as well as a watchdog's, starts in the safe state:
heater off, fans full, until the host sets them (docs/safety.md, boot state)."""

from __future__ import annotations

from thermrig.link.rig_link import RigLink
from thermrig.protocol.messages import Telemetry
from thermrig.sim.fault_injection import FaultKind
from thermrig.sim.simulated_rig import SimulatedRig


def frames_after(link: RigLink, sim: SimulatedRig, seconds: float) -> list[Telemetry]:
    link.drain_telemetry()
    sim.advance(seconds)
    return link.collect_telemetry(round(seconds * 10), timeout=5)


def test_power_on_and_plain_reset_start_with_fans_full(link: RigLink, sim: SimulatedRig) -> None:
    boot = frames_after(link, sim, 1.0)
    assert boot and all(f.heater_pct == 0 and f.fan_pct == {"fan0": 100.0, "fan1": 100.0} for f in boot)
    assert sim.plant.fan_duty == [1.0, 1.0] and sim.plant.heater_duty == 0
    assert boot[-1].faults == 0  # safe outputs, not a fault: nothing to clear

    link.set(fan0=300, fan1=200, air=3000, heat=1)
    running = frames_after(link, sim, 1.0)
    assert running[-1].fan_pct == {"fan0": 30.0, "fan1": 20.0} and running[-1].heat_enabled

    sim.faults.inject(FaultKind.MCU_RESET)  # a plain reset, e.g. the reset button or a brown-out
    after = frames_after(link, sim, 1.0)
    rebooted = [f for f in after if f.uptime_ms < 1000]
    assert rebooted and all(f.heater_pct == 0 and f.fan_pct == {"fan0": 100.0, "fan1": 100.0} for f in rebooted)
    assert not rebooted[-1].heat_enabled and rebooted[-1].faults == 0
    assert sim.plant.fan_duty == [1.0, 1.0] and sim.plant.heater_duty == 0
