"""Time-sync error against the simulator's true clock, real time, MCU crystal at +-100 ppm."""

from __future__ import annotations

import time

import numpy as np
from common import figure

from thermrig.link.rig_link import RigLink
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

WARMUP_S = 10.0
MEASURE_S = 15.0
PING_PERIOD_S = 0.1


def run(ppm: float, offset_us: int) -> np.ndarray:
    errors = []
    with SimulatedRig(SimConfig(ppm=ppm, offset_us=offset_us)) as sim, RigLink(sim.port) as link:
        link.hello()
        start = time.monotonic()
        while time.monotonic() - start < WARMUP_S + MEASURE_S:
            fit = link.sync.fit
            sample = link.ping()
            if time.monotonic() - start > WARMUP_S and fit is not None:
                # Judge the fit made from earlier pings only, on a stamp it has not seen.
                errors.append(fit.to_utc(sample.mcu_us) - sim.truth.utc_of_mcu(sample.mcu_us))
            time.sleep(PING_PERIOD_S)
        drift = link.sync.fit.drift_ppm if link.sync.fit else float("nan")
    figure(f"  crystal {ppm:+.0f} ppm: fitted host-per-MCU drift", f"{drift:+.1f} ppm", f"true {-ppm:+.1f} ppm")
    return np.abs(np.array(errors)) * 1e3


def main() -> None:
    errs = np.concatenate([run(+100.0, 987_654_321), run(-100.0, 42)])
    figure(f"time-sync error after {WARMUP_S:.0f} s, p50 ({len(errs)} pings)", f"{np.percentile(errs, 50):.3f} ms")
    figure("time-sync error after 10 s, p99", f"{np.percentile(errs, 99):.3f} ms", "target < 2 ms")
    figure("time-sync error after 10 s, max", f"{errs.max():.3f} ms")


if __name__ == "__main__":
    main()
