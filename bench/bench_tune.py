"""`thermrig rig tune` (the relay, the FOPDT fit, SIMC): on simulated chassis whose heater power, air heat
capacity or fan conductance is 2x off the default either way (and the corner where all three make the
loop faster), a chassis-air step with the firmware's default gains and with the tuned ones, on rigsim
(stepped): settle time (±0.5 °C), overshoot, or the fault that stopped it. The steps are those of
tests/python/test_tune.py (+8 °C where half the heater or twice the air mass trips the firmware's runaway
check on larger ones), then +20 °C on those two to show it. Usage: bench_tune.py [CHASSIS ...]."""

from __future__ import annotations

import os
import re
import sys
import tempfile

from common import figure

from thermrig.link.rig_link import RigLink
from thermrig.link.stored_gains import Gains
from thermrig.testbed import SimulatedRigSpec
from thermrig.tune.air_step import air_step
from thermrig.tune.auto import auto_tune
from thermrig.tune.relay import RelayPlan, TuneError

CASES = {
    "default": ({}, 20.0),
    "heater x2": ({"heater": 2.0}, 20.0),
    "heater x0.5": ({"heater": 0.5}, 8.0),
    "air x2": ({"air": 2.0}, 8.0),
    "air x0.5": ({"air": 0.5}, 20.0),
    "fan x2": ({"fan": 2.0}, 20.0),
    "fan x0.5": ({"fan": 0.5}, 20.0),
    "hot (all 3)": ({"heater": 2.0, "air": 0.5, "fan": 0.5}, 20.0),
    "heater x0.5 (+20)": ({"heater": 0.5}, 20.0),
    "air x2 (+20)": ({"air": 2.0}, 20.0),
}
STEP_S = 500.0


def step(scales: dict[str, float], rise: float, gains: Gains | None) -> str:
    with SimulatedRigSpec(seed=4, chassis_scales=scales).rig() as sim, RigLink(sim.port) as link:
        link.hello()
        if gains is not None:
            link.set(**gains.set_args())
        try:
            r = sim.run_alongside(link, lambda: air_step(link, rise, STEP_S))
        except TuneError as exc:
            m = re.search(r"Fault\.(\w+)", str(exc))
            return f"fault {m.group(1)}" if m else str(exc)
    settle = "never" if r.settle_s is None else f"{r.settle_s:.0f} s"
    return f"{settle}, {r.overshoot_c:.2f} °C"


def main() -> int:
    os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="thermrig-bench-tune-")  # no stored gains
    names = sys.argv[1:] or list(CASES)
    for name in names:
        scales, rise = CASES[name]
        with SimulatedRigSpec(seed=4, chassis_scales=scales).rig() as sim, RigLink(sim.port) as link:
            link.hello()
            result = sim.run_alongside(link, lambda: auto_tune(link, RelayPlan()))
        print(f"{name}: {result.model.describe()}; tuned {result.gains.describe()}")
        figure(f"{name}: +{rise:g} °C, default gains: settle, overshoot", step(scales, rise, None))
        figure(f"{name}: +{rise:g} °C, tuned gains: settle, overshoot", step(scales, rise, result.gains),
               "(< 180 s, < 1 °C)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
