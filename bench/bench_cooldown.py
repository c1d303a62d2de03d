"""The active cool-down before a run in the same condition, on the stepped rig: the air target lowered
while the drive is well above its margin (what `thermrig run` does) against held at the profile's. Per
profile at the top slot: the profile settled, a workload's heat (3 W for 300 s, the drive near its
throttle), `Phases._cooldown` as a campaign runs it, the fit rule (the Puget example's equilibrium), then
600 s more: rig seconds from the workload's end to the equilibrium, the recovery figure (to the margin),
and where the rule stopped against where the drive settled (docs/campaigns.md, "Active cool-down")."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
from common import figure

from thermrig.campaign import run_phases as phases_module
from thermrig.campaign.equilibrium import FitWatch
from thermrig.campaign.progress import Progress, ProgressDisplay
from thermrig.campaign.run_phases import Phases
from thermrig.campaign.spec import load_campaign
from thermrig.dut.pacing import Pacing
from thermrig.hardware.chassis_profiles import load_profile
from thermrig.link.rig_link import RigLink
from thermrig.protocol.messages import Telemetry
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

CAMPAIGN = Path(__file__).resolve().parents[1] / "examples" / "puget-slots-gpu-heat.toml"
PROFILES = ("single_gpu_idle", "dual_gpu_idle", "dual_gpu_load")
WORKLOAD_W, WORKLOAD_S, AFTER_S = 3.0, 300, 600


def second(sim: SimulatedRig, link: RigLink, frames: list[Telemetry]) -> list[Telemetry]:
    link.ping()
    sim.advance(1.0)
    new = link.collect_telemetry(10, timeout=5)
    frames.extend(new)
    return new


def settle(sim: SimulatedRig, link: RigLink, frames: list[Telemetry], watch: FitWatch, args: dict[str, int]) -> float:
    link.set(**args)
    while not watch.reached():
        for tel in second(sim, link, frames):
            watch.add(tel)
    level = watch.tail_mean("drive_ctrl", 30)
    assert level is not None
    return level


def one(profile: str, lowered: bool) -> tuple[float, float, float]:
    """Rig s from the workload's end to the equilibrium, the recovery figure, the level judged - settled."""
    campaign = load_campaign(CAMPAIGN)
    args = load_profile(profile).set_args()
    with SimulatedRig(SimConfig(slot="top", pacing=Pacing.stepped())) as sim, RigLink(sim.port) as link:
        link.hello()
        frames: list[Telemetry] = []
        baseline = settle(sim, link, frames, FitWatch(campaign.equilibrium), args)
        idle_w = sim.plant.drive_power_w
        sim.plant.drive_power_w = WORKLOAD_W
        for _ in range(WORKLOAD_S):
            second(sim, link, frames)
        sim.plant.drive_power_w = idle_w
        ended = frames[-1].uptime_ms
        phases = Phases(campaign, link, None, ProgressDisplay(Progress(), None), threading.Event())  # type: ignore[arg-type]
        held = phases_module.AIR_OVERSHOOT_C
        phases_module.AIR_OVERSHOOT_C = held if lowered else 0.0
        try:
            out, cooled = sim.run_alongside(link, lambda: phases._cooldown(baseline, args))
        finally:
            phases_module.AIR_OVERSHOOT_C = held
        frames += cooled
        judged = settle(sim, link, frames, FitWatch(campaign.equilibrium), args)
        seconds = (frames[-1].uptime_ms - ended) / 1000
        for _ in range(AFTER_S):
            second(sim, link, frames)
        final = float(np.mean([f.named("drive_ctrl").value for f in frames[-3000:]]))
        assert not any(f.faults for f in frames)
        return seconds, out["after_s"], judged - final


def main() -> None:
    for profile in PROFILES:
        held_s, held_recovery, held_off = one(profile, lowered=False)
        low_s, low_recovery, low_off = one(profile, lowered=True)
        figure(f"{profile}: workload's end to equilibrium, held / lowered", f"{held_s:.0f} / {low_s:.0f} rig s")
        figure(f"{profile}: to the margin, held / lowered", f"{held_recovery:.0f} / {low_recovery:.0f} rig s")
        off = f"{held_off:+.2f} / {low_off:+.2f} C"
        figure(f"{profile}: level judged - settled, held / lowered", off, "within 0.45 C")


if __name__ == "__main__":
    main()
