"""Chassis-air hold in the plant: a +20 C step, settle to +-0.5 C, overshoot, steady-state error."""

from __future__ import annotations

import numpy as np
from common import advance_with_host, figure

from thermrig.analysis.step_response import step_response
from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

STEP_C = 20.0
RUN_S = 400


def main() -> None:
    # The chassis fan sets how fast the chassis loses heat, so it is the condition that changes the loop.
    for fan0 in (40, 100):
        with SimulatedRig(SimConfig(pacing=Pacing.stepped(), seed=3)) as sim, RigLink(sim.port) as link:
            link.hello()
            target = sim.plant.room_c + STEP_C
            link.set(air=round(target * 100), heat=1, fan0=fan0 * 10)
            t, air = [], []

            def sample(second: int, sim: SimulatedRig = sim, t: list = t, air: list = air) -> None:  # type: ignore[type-arg]
                t.append(float(second))
                air.append(sim.plant.state.air)

            advance_with_host(sim, link, RUN_S, sample)
            r = step_response(np.array(t), np.array(air), target, 0.5, 60.0)
            assert link.latest is not None and not link.latest.faults
        settle = "never" if r.settle_s is None else f"{r.settle_s:.0f} s"
        figure(f"chassis fan {fan0} %: +{STEP_C:.0f} C step, settle to +-0.5 C", settle, "target < 180 s")
        figure(f"chassis fan {fan0} %: overshoot", f"{r.overshoot_c:.2f} C", "target < 1 C")
        figure(f"chassis fan {fan0} %: steady-state error (last 60 s)", f"{r.steady_error_c:.3f} C", "target < 0.3 C")


if __name__ == "__main__":
    main()
