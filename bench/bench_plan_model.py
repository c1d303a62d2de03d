"""The planner's estimate without history (the calibrated rig model walked through the plan,
campaign.model_estimate) against the Puget samples as recorded on the simulated rig (docs/design/rig-time.md,
"With the air target lowered in the active cool-down": the same campaign text, seeds and so orders as
`bench_rig_time.py --only puget --variants after-least-change --repeats 1 --profiles "$P"`), per phase
in rig s a run; then the whole Puget matrix with no history, and the estimate's wall time.

Each sample is recorded here (`thermrig run` into a private influxd, [rig] speed --speed) and measured
from its runs' manifests (`rig_time_s`), or read from the campaign folders an earlier run kept:

    python bench/bench_plan_model.py [--keep DIR [--reuse]] [--speed 4]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench_rig_time import PHASES, VARIANTS, manifests, puget_text, run_campaign, with_options
from common import figure

from thermrig.campaign.model_estimate import model_history
from thermrig.campaign.plan import make_plan
from thermrig.campaign.spec import load_campaign
from thermrig.db.local_server import LocalInflux
from thermrig.testbed.simulated_rig_model import rig_model

REPO = Path(__file__).resolve().parents[1]
P = '"single_gpu_idle", "single_gpu_load", "dual_gpu_idle", "dual_gpu_load"'
# (seed, slots, workloads): 8 runs each
SAMPLES = {
    "sample 1 (seed 2016, top, both workloads)": (2016, '"top"', ("seqread", "seqwrite")),
    "sample 2 (seed 2022, top and bottom, writes)": (2022, '"top", "bottom"', ("seqwrite",)),
}


def measured(folder: Path) -> tuple[float, float, float, float]:
    """A recorded campaign's rig s a run, mean per phase (equilibrium, baseline, workload, cool-down), from
    its runs' manifests."""
    ok = [m for m in manifests(folder) if m.get("status") == "ok" and "rig_time_s" in m]
    if not ok:
        raise SystemExit(f"{folder}: no run recorded its rig time (see {folder}.log)")
    means = [statistics.mean(m["rig_time_s"].get(p, 0.0) for m in ok) for p in PHASES]
    return means[0], means[1], means[2], means[3]


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
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", type=Path, help="keep the samples' campaign folders here")
    ap.add_argument("--reuse", action="store_true", help="measure the campaign folders already in --keep, run none")
    ap.add_argument("--speed", type=int, default=4, help="the samples' [rig] speed")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="thermrig-bench-", dir="/var/tmp") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        server = None if args.reuse else LocalInflux(folder / "influxdb")
        env = dict(os.environ, XDG_CONFIG_HOME=str(folder / "config"), XDG_DATA_HOME=str(folder / "data"))
        if server is not None:
            server.up()
            settings = server.settings()
            env.update(THERMRIG_INFLUX_URL=settings.url, THERMRIG_INFLUX_BUCKET=settings.bucket)
        try:
            for label, (seed, slots, workloads) in SAMPLES.items():
                text = with_options(
                    puget_text(300, 1, args.speed, seed, P, slots, workloads), VARIANTS["after-least-change"]
                )
                recorded = folder / f"sample-{seed}"
                if not args.reuse:
                    (folder / f"sample-{seed}-recorded.toml").write_text(text)
                    run_campaign(folder / f"sample-{seed}-recorded.toml", recorded, env)
                m = measured(recorded)
                est, wall = per_run(text, folder, f"sample-{seed}")
                for name, e, v in zip(("equilibrium", "cool-down"), (est[0], est[3]), (m[0], m[3]), strict=True):
                    figure(
                        f"plan model, {label}: {name}",
                        f"{e:.1f} rig s a run (recorded {v:.1f}, {100 * (e - v) / v:+.0f} %)",
                    )
                whole, whole_m = sum(est), sum(m)
                figure(
                    f"plan model, {label}: whole",
                    f"{whole:.1f} rig s a run (recorded {whole_m:.1f}, {100 * (whole - whole_m) / whole_m:+.1f} %)",
                    "within 15 %" if abs(whole - whole_m) <= 0.15 * whole_m else "NOT within 15 %",
                )
                figure(f"plan model, {label}: wall", f"{wall:.0f} s for 8 runs")
        finally:
            if server is not None:
                server.down()
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
