"""Rig time per run, by phase, before and after the shorter waits (docs/campaigns.md, "Less waiting"):
the demo campaign (examples/demo-virtual-950pro.toml) and a Puget-like sample (examples/
puget-slots-gpu-heat.toml's rules, profiles and workloads on the simulated rig with the virtual 950 Pro:
one slot, the coldest and the hottest profile, both workloads, `--repeats` (2: 8 of its 64 runs);
`--slots`, `--profiles` and `--workloads` choose others), each run by `thermrig run` into a private
influxd. "before" is the original rules (`rule = "trend"`, `baseline = "after"`, passive cool-down and
transitions, random order); "after" the defaults (the fit,
the active cool-down, driven transitions) and `order = "blocks"`; "after-fit-active" the Puget example as
it was before driven transitions; "after-driven" the Puget example before the least-change order (driven,
no cool-down before a change of profile); "after-least-change" the Puget example now. `--seed` and `--profiles` draw
another sample (more changes of profile).
Rig time is the rig's telemetry uptime (the simulation runs at [rig] speed between workloads, fio at real
time), read from each run's manifest (`rig_time_s`). Then the planner's estimate of the sample from the
"after" demo's and sample's history against what was measured, and the demo's onset/depth table.

    python bench/bench_rig_time.py [--only demo|puget] [--variants before,after] [--runtime 300]
        [--seed N] [--profiles '"single_gpu_idle", "dual_gpu_idle"'] [--slots '"top", "bottom"']
        [--workloads seqread,seqwrite] [--also-history DIR ...] [--keep DIR [--reuse]]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import figure

from thermrig.campaign.history import History, RunRecord
from thermrig.campaign.plan import make_plan
from thermrig.campaign.spec import load_campaign
from thermrig.db.local_server import LocalInflux

REPO = Path(__file__).resolve().parents[1]
PHASES = ("equilibrium", "baseline", "workload", "cooldown")
BEFORE = {"campaign": {"baseline": "after", "order": "random"}, "equilibrium": {"rule": "trend", "carry": "false"}}
BEFORE["equilibrium"]["transition"] = "passive"
BEFORE["cooldown"] = {"mode": "passive"}
AFTER: dict[str, dict[str, str]] = {"campaign": {"order": "blocks"}}  # the defaults otherwise
VARIANTS = {"before": BEFORE, "after": AFTER}
VARIANTS["after-fit-active"] = {  # the Puget example before driven transitions (main c6e3de7)
    "campaign": {"order": "blocks"},
    "equilibrium": {"rule": "fit", "transition": "passive"},
    "cooldown": {"mode": "active"},
}
VARIANTS["after-driven"] = {  # the changes of condition driven, no cool-down before one
    "campaign": {"order": "blocks"},
    "equilibrium": {"rule": "fit", "transition": "driven"},
    "cooldown": {"mode": "active", "before_change": "skip"},
}
VARIANTS["after-least-change"] = {  # after-driven, the blocks from the coolest condition to the hottest and back
    "campaign": {"order": "least-change"},
    "equilibrium": {"rule": "fit", "transition": "driven"},
    "cooldown": {"mode": "active", "before_change": "skip"},
}
VARIANTS["after-driven-wait"] = {  # driven, every cool-down kept
    "campaign": {"order": "blocks"},
    "equilibrium": {"rule": "fit", "transition": "driven"},
    "cooldown": {"mode": "active"},
}
VARIANTS["after-active"] = {
    "campaign": {"order": "blocks"},
    "equilibrium": {"rule": "trend", "transition": "passive"},
    "cooldown": {"mode": "active"},
}
VARIANTS["after-fit"] = {
    "campaign": {"order": "blocks"},
    "equilibrium": {"rule": "fit", "transition": "passive"},
    "cooldown": {"mode": "passive"},
}
VARIANTS["after-trend"] = {
    "campaign": {"order": "blocks"},
    "equilibrium": {"rule": "trend", "transition": "passive"},
    "cooldown": {"mode": "passive"},
}


def demo_text(speed: int) -> str:
    """The demo campaign as `make demo` runs it, at `speed` between workloads (rig time is the same)."""
    return (REPO / "examples" / "demo-virtual-950pro.toml").read_text().replace("speed = 20 ", f"speed = {speed} ")


WORKLOADS = {"seqread": "seq_read", "seqwrite": "seq_write"}


def puget_text(
    runtime_s: int,
    repeats: int,
    speed: int,
    seed: int = 2016,
    profiles: str = "",
    slots: str = '"top"',
    workloads: tuple[str, ...] = tuple(WORKLOADS),
) -> str:
    """The Puget campaign's rules and factors (by default one slot, two profiles and both workloads) on the
    simulated rig."""
    jobs = "".join(
        f'\n[[workload]]\nname = "{w}"\nkind = "{WORKLOADS[w]}"\nruntime_s = {runtime_s}\n' for w in workloads
    )
    return f"""
[campaign]
name = "puget-sample"
repeats = {repeats}
seed = {seed}
baseline_s = 30

[rig]
port = "sim"
speed = {speed}

[drive]
target = "virtual"
profile = "950pro_512"
scale = 0.05

[equilibrium]
rate_c_per_min = 0.2
window_s = 60
timeout_s = 1800
channels = ["chassis_air", "drive_ctrl", "drive_nand"]

[cooldown]
margin_c = 1.0
timeout_s = 1800

[factors]
slot = [{slots}]
heatsink = ["none"]
profile = [{profiles or '"single_gpu_idle", "dual_gpu_load"'}]
{jobs}"""


def with_options(text: str, options: dict[str, dict[str, str]]) -> str:
    """The campaign text with keys added at the top of their tables (the tables exist in both files)."""
    for table, keys in options.items():
        lines = "".join(f"{k} = {v}\n" if v in ("true", "false") else f'{k} = "{v}"\n' for k, v in keys.items())
        text = text.replace(f"[{table}]\n", f"[{table}]\n{lines}", 1)
    return text


def run_campaign(path: Path, out: Path, env: dict[str, str]) -> float:
    start = time.monotonic()
    cmd = [sys.executable, "-m", "thermrig.cli", "run", str(path), "--no-prompt", "--out", str(out)]
    with (out.parent / f"{out.name}.log").open("w") as log:
        subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    return time.monotonic() - start


def manifests(folder: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*/manifest.json"))]


def report(label: str, ms: list[dict], wall_s: float) -> dict[str, float]:  # type: ignore[type-arg]
    ok = [m for m in ms if m.get("status") == "ok" and "rig_time_s" in m]
    print(f"{label}: {len(ok)} of {len(ms)} runs ok, wall {wall_s / 60:.1f} min")
    if not ok:
        return {}
    per = {p: statistics.mean(m["rig_time_s"].get(p, 0.0) for m in ok) for p in PHASES}
    total = sum(sum(m["rig_time_s"].get(p, 0.0) for p in PHASES) for m in ok)
    for p in PHASES:
        figure(f"  {p} per run (rig s, mean)", f"{per[p]:.1f}")
    figure("  per run (rig s, mean)", f"{total / len(ok):.1f}")
    figure("  campaign (rig s)", f"{total:.0f}")
    for m in sorted(ok, key=lambda m: m["index"]):  # each run: the condition, and what each phase took
        rt, driven = m["rig_time_s"], m["equilibrium"].get("driven")
        how = f" (driven {driven['after_s']:.0f}{', stalled' if driven.get('stalled') else ''})" if driven else ""
        skipped = " (skipped)" if m["cooldown"].get("skipped") else ""
        if "fans_full_s" in m["cooldown"]:  # the slot fan on past the margin, before a run in the same condition
            skipped = f" (to the margin {m['cooldown']['after_s']:.0f})"
        print(
            f"    run {m['index']} {m['factors'].get('slot', '-')} {m['factors']['profile']} {m['workload']['kind']}: "
            f"equilibrium {rt['equilibrium']:.0f}{how}, cooldown {rt['cooldown']:.0f}{skipped}, "
            f"baseline drive_ctrl {m['baseline_drive_ctrl_c']:.2f} °C"
        )
    return {**per, "total": total, "runs": len(ok)}


def also(c_rig: str, folders: list[Path]) -> tuple[RunRecord, ...]:
    """The recorded runs of --also-history's folders (other samples of the same rig and rules)."""
    return tuple(r for f in folders for r in History.read(f, c_rig).runs)


def planner_check(path: Path, out: Path, measured_s: float, extra: list[Path]) -> None:
    """The planner against the measurement: without history (the fixed guesses), and each run estimated
    from the campaign's other runs (leave one out: the history a next campaign on this rig would have),
    with the runs of `extra` folders."""
    c = load_campaign(path)
    runs = records = History.read(out, c.rig_name).runs
    more = also(c.rig_name, extra)
    seed = json.loads((out / "state.json").read_text())["seed"]
    blind = make_plan(c, seed)
    figure("  planner without history (rig s)", f"{blind.total_s():.0f}")
    ok = {m["index"] for m in manifests(out) if m.get("status") == "ok"}
    estimate = 0.0
    for i, run in enumerate(blind.runs):
        if run.index not in ok:
            continue
        others = History(c.rig_name, tuple(r for j, r in enumerate(records) if j != i) + more, str(out))
        estimate += make_plan(c, seed, history=others).estimate_s(run)
    assert len(runs) == len(ok)
    figure(
        "  planner from the other runs' history (rig s)",
        f"{estimate:.0f} ({100 * (estimate / measured_s - 1):+.1f} %)",
    )


def project_matrix(folder: Path, variant: str, history: Path, extra: list[Path]) -> None:
    """The whole Puget matrix (64 runs) as the planner estimates it from the sample's recorded runs (and
    those of `extra` folders), with the variant's options in place of the example's own."""
    text = (REPO / "examples" / "puget-slots-gpu-heat.toml").read_text()
    text = re.sub(r"^(order|rule|mode|baseline|carry|transition|before_change) = .*\n", "", text, flags=re.MULTILINE)
    path = folder / f"puget-matrix-{variant}.toml"
    path.write_text(with_options(text, VARIANTS[variant]))
    c = load_campaign(path)
    runs = History.read(history, c.rig_name).runs + also(c.rig_name, extra)
    plan = make_plan(c, history=History(c.rig_name, runs, str(history)))
    phases = [plan.phases(r) for r in plan.runs]
    total = sum(e.total_s for e in phases)
    by = ", ".join(f"{p} {sum(getattr(e, p + '_s') for e in phases) / 3600:.2f} h" for p in PHASES)
    figure(f"  the Puget matrix, {len(phases)} runs, estimated from this sample", f"{total / 3600:.2f} h")
    known = sum(e.from_history for e in phases)
    print(f"    ({by}; {known} runs from history, {plan.condition_changes()} chassis changes)")


def throttle_table(env: dict[str, str], campaign: str, folder: Path) -> str:
    cmd = [sys.executable, "-m", "thermrig.cli", "throttle", campaign, "--runs-from", str(folder)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=False).stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=("demo", "puget"))
    ap.add_argument("--variants", default="before,after")
    ap.add_argument("--speed", type=int, default=4, help="[rig] speed (the demo: 20; HOST_LOST when loaded)")
    ap.add_argument("--repeats", type=int, default=2, help="the Puget-like sample's repeats (8 runs with 2)")
    ap.add_argument("--runtime", type=int, default=300, help="the Puget-like sample's workload seconds")
    ap.add_argument("--seed", type=int, default=2016, help="the Puget-like sample's seed (its order)")
    ap.add_argument(
        "--profiles", default="", help='the sample\'s profiles, e.g. \'"single_gpu_idle", "dual_gpu_idle"\''
    )
    ap.add_argument("--slots", default='"top"', help='the sample\'s slots, e.g. \'"top", "bottom"\'')
    ap.add_argument("--workloads", default="seqread,seqwrite", help="the sample's workloads, of seqread and seqwrite")
    ap.add_argument(
        "--also-history",
        type=Path,
        action="append",
        default=[],
        help="another sample's campaign folder whose runs the planner also learns from (repeatable)",
    )
    ap.add_argument("--keep", type=Path, help="keep the campaign folders here")
    ap.add_argument("--reuse", action="store_true", help="report the campaign folders already in --keep, run none")
    args = ap.parse_args()
    workloads = tuple(w for w in args.workloads.split(",") if w)
    if not workloads or not set(workloads) <= set(WORKLOADS):
        ap.error(f"--workloads: one or both of {', '.join(WORKLOADS)}, comma-separated")
    with tempfile.TemporaryDirectory(prefix="thermrig-bench-", dir="/var/tmp") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        server = LocalInflux(folder / "influxdb")
        server.up()
        settings = server.settings()
        env = {**os.environ, "THERMRIG_INFLUX_URL": settings.url, "THERMRIG_INFLUX_BUCKET": settings.bucket}
        env.update(XDG_CONFIG_HOME=str(folder / "config"), XDG_DATA_HOME=str(folder / "data"), COLUMNS="160")
        try:
            suites = [
                ("demo", demo_text(args.speed)),
                (
                    "puget",
                    puget_text(args.runtime, args.repeats, args.speed, args.seed, args.profiles, args.slots, workloads),
                ),
            ]
            for suite, text in suites:
                if args.only and suite != args.only:
                    continue
                (folder / f"{suite}.toml").write_text(text)
                runs = len(make_plan(load_campaign(folder / f"{suite}.toml"), 1).runs)
                size = "4 runs" if suite == "demo" else f"{runs} runs, workloads {args.runtime} s"
                print(f"== {suite} ({size})")
                for variant in args.variants.split(","):
                    path = folder / f"{suite}-{variant}.toml"
                    path.write_text(with_options(text, VARIANTS[variant]))
                    out = folder / f"{suite}-{variant}"
                    wall = 0.0 if args.reuse and out.exists() else run_campaign(path, out, env)
                    ms = manifests(out)
                    measured = report(f"{suite} {variant}", ms, wall)
                    name = load_campaign(path).name
                    if suite == "demo":
                        print(throttle_table(env, name, out))
                    if measured:
                        planner_check(path, out, measured["total"], args.also_history)
                        if suite == "puget":
                            project_matrix(folder, variant, out, args.also_history)
        finally:
            server.down()


if __name__ == "__main__":
    main()
