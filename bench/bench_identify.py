"""Chassis identification (`thermrig rig identify`): simulated chassis with known, non-default parameters
(air capacity, still-air and fan conductance off the defaults by up to 2x either way) run through the
default step sequence on rigsim (stepped), fitted from the default chassis; each parameter identified
against its truth, and the fit's residual; out of sample, the last step (the final cool-down) predicted by
a fit on the seconds before it, beside the default chassis's error on the same step."""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from common import figure

from thermrig.calibration.chassis_steps import StepPlan, record_steps
from thermrig.dut.pacing import Pacing
from thermrig.hardware.profiles import chassis_toml, load_chassis
from thermrig.link.rig_link import RigLink
from thermrig.sim.chassis_fit import FITTED, fit_chassis, fit_held_out, last_step, per_second, simulate
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

CASES = {
    "slow and leaky": {"air_capacity": 2.0, "g_still": 1.5, "g_fan": 0.5},
    "fast, strong fans": {"air_capacity": 0.5, "g_still": 0.7, "g_fan": 2.0},
}


def main() -> int:
    os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="thermrig-bench-identify-")
    base = load_chassis()
    worst = 0.0
    for case, factors in CASES.items():
        truth = dataclasses.replace(base, **{k: getattr(base, k) * f for k, f in factors.items()})
        path = Path(os.environ["XDG_DATA_HOME"]) / "thermrig" / "chassis" / "truth.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(chassis_toml(truth, case))
        with (
            SimulatedRig(SimConfig(chassis="truth", pacing=Pacing.stepped(), seed=5)) as sim,
            RigLink(sim.port) as link,
        ):
            link.hello()
            samples = sim.run_alongside(link, lambda: record_steps(link, StepPlan()))
        fit = fit_chassis(samples, base, truth.heater_max_w)
        for name, _, _ in FITTED:
            got, want = getattr(fit.chassis, name), getattr(truth, name)
            err = got / want - 1
            worst = max(worst, abs(err))
            figure(f"{case}: {name} identified / true", f"{got:.4g} / {want:.4g} ({err:+.1%})")
        figure(f"{case}: residual rms / max", f"{fit.rms_c:.3f} / {fit.max_c:.3f} °C", f"over {fit.seconds} s")
        held = fit_held_out(samples, base, truth.heater_max_w)
        seconds = per_second(samples)
        k = last_step(seconds)
        unfitted = simulate(dataclasses.replace(base, heater_max_w=truth.heater_max_w), seconds)[k:]
        off = unfitted - np.array([s.air_c for s in seconds[k:]])
        figure(
            f"{case}: held-out last step rms / max",
            f"{held.rms_c:.3f} / {held.max_c:.3f} °C",
            f"over {held.seconds} s, fitted without it; the default chassis {np.sqrt(np.mean(off**2)):.2f} °C rms",
        )
    figure("worst parameter error", f"{worst:.1%}", "(the test's tolerance: 5 %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
