"""The planner's estimate without history (the calibrated rig model walked through the plan,
campaign.model_estimate) against the Puget samples measured on the simulated rig (docs/design/rig-time.md,
"With the air target lowered in the active cool-down": the same campaign text, seeds and so orders as
`bench_rig_time.py --only puget --variants after-least-change --repeats 1 --profiles "$P"`), per phase
in rig s a run; then the whole Puget matrix with no history, and the estimate's wall time."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bench_rig_time import VARIANTS, puget_text, with_options
from common import figure

from thermrig.campaign.model_estimate import model_history
from thermrig.campaign.plan import make_plan
from thermrig.campaign.spec import load_campaign
from thermrig.testbed.rig_model import rig_model

REPO = Path(__file__).resolve().parents[1]
P = '"single_gpu_idle", "single_gpu_load", "dual_gpu_idle", "dual_gpu_load"'
# (seed, slots, workloads): measured rig s a run (equilibrium, baseline, workload, cool-down), 8 runs each
SAMPLES = {
    "sample 1 (seed 2016, top, both workloads)": (2016, '"top"', ("seqread", "seqwrite"), (134.0, 0.0, 300.7, 61.3)),
    "sample 2 (seed 2022, top and bottom, writes)": (2022, '"top", "bottom"', ("seqwrite",), (184.2, 0.0, 300.7, 32.1)),
}


def per_run(plan_text: str, folder: Path, name: str) -> tuple[tuple[float, float, float, float], float]:
    path = folder / f"{name}.toml"
    path.write_text(plan_text)
    plan = make_plan(load_campaign(path))
    start = time.monotonic()
    model = model_history(plan, rig_model)
    wall = time.monotonic() - start
    p = plan.with_model(model)
    phases = [p.phases(r) for r in p.runs]
    n = len(phases)
    return (
        sum(e.equilibrium_s for e in phases) / n,
        sum(e.baseline_s for e in phases) / n,
        sum(e.workload_s for e in phases) / n,
        sum(e.cooldown_s for e in phases) / n,
    ), wall


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="thermrig-bench-") as tmp:
        for label, (seed, slots, workloads, measured) in SAMPLES.items():
            text = with_options(puget_text(300, 1, 4, seed, P, slots, workloads), VARIANTS["after-least-change"])
            est, wall = per_run(text, Path(tmp), f"sample-{seed}")
            for name, e, m in zip(
                ("equilibrium", "cool-down"), (est[0], est[3]), (measured[0], measured[3]), strict=True
            ):
                figure(
                    f"plan model, {label}: {name}",
                    f"{e:.1f} rig s a run (measured {m:.1f}, {100 * (e - m) / m:+.0f} %)",
                )
            whole, whole_m = sum(est), sum(measured)
            figure(
                f"plan model, {label}: whole",
                f"{whole:.1f} rig s a run (measured {whole_m:.1f}, {100 * (whole - whole_m) / whole_m:+.1f} %)",
                "within 15 %",
            )
            figure(f"plan model, {label}: wall", f"{wall:.0f} s for 8 runs")
        plan = make_plan(load_campaign(REPO / "examples" / "puget-slots-gpu-heat.toml"), 2016)
        start = time.monotonic()
        p = plan.with_model(model_history(plan, rig_model))
        wall = time.monotonic() - start
        phases = [p.phases(r) for r in p.runs]
        hours = sum(e.total_s for e in phases) / 3600
        eq = sum(e.equilibrium_s for e in phases) / 3600
        cd = sum(e.cooldown_s for e in phases) / 3600
        figure(
            "plan model, the Puget matrix with no history (seed 2016)",
            f"{hours:.2f} h (equilibrium {eq:.2f} h, cool-down {cd:.2f} h); wall {wall:.0f} s",
        )


if __name__ == "__main__":
    main()
