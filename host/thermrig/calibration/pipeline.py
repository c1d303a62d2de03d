"""`make calibrate`: the calibration cells through the whole pipeline. Campaigns on the simulated rig with
the virtual drive, the real fio, a private InfluxDB; the tables read back from InfluxDB and set beside
the published numbers. Campaigns run in parallel processes (each its own rig and drive), each through the
campaign procedure (calibration.campaign_process)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from pathlib import Path

from thermrig.analysis.published import (
    CONSISTENCY_CONDITION,
    CONSISTENCY_RUNTIME_S,
    CONSISTENCY_WINDOW_S,
    HEATSINK_CONDITION,
    HEATSINK_RUNTIME_S,
    MIXED_CONDITION,
    MIXED_STEP_S,
    PUGET_RUNTIME_S,
    SM951_CONDITION,
    SM951_RANDOM_RUNTIME_S,
    SM951_RANDOM_WINDOW_S,
    SM951_SEQ_RUNTIME_S,
)
from thermrig.analysis.throttle_table import ThrottleRow, throttle_table
from thermrig.calibration import campaign_process
from thermrig.calibration.check import CalibrationCheck
from thermrig.calibration.mixed import HEATSINKS
from thermrig.calibration.seed_runs import (
    CONSISTENCY,
    DRIVE,
    HOUR_CAMPAIGN,
    MIXED_CAMPAIGN,
    MIXED_RANDOM,
    MIXED_SEQ,
    seed_checks,
)
from thermrig.db import schema
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.local_server import LocalInflux
from thermrig.db.query import influxql
from thermrig.hardware.drive_profiles import load_drive_profile

RESUMES = 2  # times a campaign that stopped (a rig fault, a lost host) is resumed before it counts as failed
RERUNS = 1  # times a campaign whose onset the host disturbed is run again before its runs are read as they are
DISTURBS_S = 0.5  # writing time host stalls before the onset must have lost to move it (onsets are whole seconds)
PUGET_SLOTS = (("top", "bottom"), ("upright", "underside"))
PUGET_PROFILES = ("single_gpu_idle", "dual_gpu_idle", "single_gpu_load", "dual_gpu_load")
QUICK_CELLS = (("top", "dual_gpu_load"), ("upright", "single_gpu_idle"))

TEMPLATE = """# written by thermrig calibrate
[campaign]
name = "{name}"
seed = 1
randomize = false
baseline_s = 10

[rig]
port = "sim"
speed = {speed}

[drive]
target = "virtual"
profile = "{drive}"
scale = {scale}

[equilibrium]
rate_c_per_min = 0.3
window_s = 60
timeout_s = 2400
channels = ["chassis_air", "drive_ctrl", "drive_nand", "heatsink"]

[cooldown]
margin_c = 1.0
timeout_s = 2400

[factors]
slot = {slots}
heatsink = {heatsinks}
profile = {profiles}
{workloads}
"""


@dataclass(frozen=True)
class Group:
    name: str
    drive: str
    slots: tuple[str, ...]
    heatsinks: tuple[str, ...]
    profiles: tuple[str, ...]
    workloads: tuple[str, ...]  # [[workload]] tables

    def runs(self) -> int:
        return len(self.slots) * len(self.heatsinks) * len(self.profiles) * len(self.workloads)

    def toml(self, speed: float, scale: float) -> str:
        def arr(xs: tuple[str, ...]) -> str:
            return "[" + ", ".join(f'"{x}"' for x in xs) + "]"

        return TEMPLATE.format(
            name=self.name,
            speed=speed,
            drive=self.drive,
            scale=scale,
            slots=arr(self.slots),
            heatsinks=arr(self.heatsinks),
            profiles=arr(self.profiles),
            workloads="\n".join(self.workloads),
        )


def _seq_write(runtime_s: int) -> str:
    return f'\n[[workload]]\nname = "seqwrite"\nkind = "seq_write"\nruntime_s = {runtime_s}\n'


def seed_groups() -> list[Group]:
    """Seeds 000 and 004, one campaign per heatsink so the two run side by side: the mixed sweeps over a
    pre-filled drive (fast fill), and the hour of random writes after a fill."""
    mixed = (
        '\n[[workload]]\nname = "prefill"\nkind = "snia_precondition"\n',
        f'\n[[workload]]\nname = "{MIXED_RANDOM}"\nkind = "mixed_random_sweep"\nruntime_s = {MIXED_STEP_S}\n',
        f'\n[[workload]]\nname = "{MIXED_SEQ}"\nkind = "mixed_seq_sweep"\nruntime_s = {MIXED_STEP_S}\n',
    )
    hour = (
        f'\n[[workload]]\nname = "{CONSISTENCY}"\nkind = "consistency"\nruntime_s = {CONSISTENCY_RUNTIME_S}\n'
        f"score_window_s = {CONSISTENCY_WINDOW_S}\n",
    )
    out = []
    for campaign, (slot, profile), workloads in (
        (MIXED_CAMPAIGN, MIXED_CONDITION, mixed),
        (HOUR_CAMPAIGN, CONSISTENCY_CONDITION, hour),
    ):
        out += [Group(campaign.format(h), DRIVE, (slot,), (h,), (profile,), workloads) for h in HEATSINKS]
    return out


def groups(quick: bool = False, seeds: bool = True, only_seeds: bool = False) -> list[Group]:
    """The Puget, heatsink and SM951 campaigns (about 40 min with 3 at once), and with `seeds` those of
    seeds 000 and 004 (an hour and a quarter more, run first as they are the longest)."""
    if only_seeds:
        return seed_groups()
    if quick:  # two Puget cells, the fastest onset and a mild one, as two campaigns running side by side
        return [
            Group(f"calibrate-quick-{i}", "950pro_512", (slot,), ("none",), (profile,), (_seq_write(PUGET_RUNTIME_S),))
            for i, (slot, profile) in enumerate(QUICK_CELLS, start=1)
        ]
    random = (
        f'\n[[workload]]\nname = "randwrite"\nkind = "consistency"\nruntime_s = {SM951_RANDOM_RUNTIME_S}\n'
        f"score_window_s = {SM951_RANDOM_WINDOW_S}\n"
    )
    return [
        *(seed_groups() if seeds else []),
        *(
            Group(
                f"calibrate-puget-{i + 1}",
                "950pro_512",
                slots,
                ("none",),
                PUGET_PROFILES,
                (_seq_write(PUGET_RUNTIME_S),),
            )
            for i, slots in enumerate(PUGET_SLOTS)
        ),
        Group(
            "calibrate-heatsink",
            "950pro_512",
            (HEATSINK_CONDITION[0],),
            ("none", "passive"),
            (HEATSINK_CONDITION[1],),
            (_seq_write(HEATSINK_RUNTIME_S),),
        ),
        Group(
            "calibrate-sm951-seq",
            "sm951_512",
            (SM951_CONDITION[0],),
            ("none",),
            (SM951_CONDITION[1],),
            (_seq_write(SM951_SEQ_RUNTIME_S),),
        ),
        Group(
            "calibrate-sm951-random",
            "sm951_512",
            (SM951_CONDITION[0],),
            ("none", "passive"),
            (SM951_CONDITION[1],),
            (random,),
        ),
    ]


@dataclass
class Outcome:
    rows: dict[str, list[ThrottleRow]] = field(default_factory=dict)  # campaign -> rows
    iops: dict[str, float] = field(default_factory=dict)  # sm951 random: heatsink -> IOPS at drive scale
    failed: list[str] = field(default_factory=list)  # campaigns whose `thermrig run` failed, resumes spent
    resumed: dict[str, int] = field(default_factory=dict)  # campaign -> times it was resumed after failing
    set_aside: dict[str, list[str]] = field(default_factory=dict)  # campaign -> runs the host disturbed, run again
    rerun: dict[str, int] = field(default_factory=dict)  # campaign -> times it was run again for them
    drive_smart: dict[str, dict[str, float]] = field(default_factory=dict)  # campaign -> points, max TMT1 count
    seeds: list[CalibrationCheck] = field(default_factory=list)  # seeds 000 and 004, when their campaigns were chosen
    wall_s: float = 0.0


def host_disturbed(row: ThrottleRow) -> bool:
    """A run whose throughput the host stalled before its onset (or at all, where it has none) for
    DISTURBS_S of writing or more: the drive heated less than the workload makes it, and the onset moved
    with the host (docs/analysis.md). A drive that lost L s of heating at full power reaches its onset at
    most about L s later: a busy machine's stalls of a few tenths of a second move no onset."""
    if row.host_lost_s < DISTURBS_S:
        return False
    if row.onset_s is None:
        return bool(row.host_stalls)
    return any(s <= row.onset_s for s in row.host_stalls)


def _done(folder: Path) -> int:
    """Runs ended ok (a manifest says `running` until its run ends, `failed` or `aborted` for an attempt)."""
    return sum(1 for p in folder.glob("*/manifest.json") if '"status": "ok"' in p.read_text())


def run_groups(
    chosen: list[Group],
    out: Path,
    jobs: int,
    speed: float,
    scale: float,
    on_progress: Callable[[dict[str, tuple[int, int]]], None] | None = None,
) -> Outcome:
    """Run the groups (at most `jobs` at once) against a private influxd, then read the results back."""
    out.mkdir(parents=True, exist_ok=True)
    outcome = Outcome()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="thermrig-calibrate-") as tmp:
        server = LocalInflux(Path(tmp) / "influxdb")
        url = server.up()
        try:
            settings = server.settings()
            env = {**os.environ, "THERMRIG_INFLUX_URL": url, "XDG_DATA_HOME": str(Path(tmp) / "data")}
            pending = list(chosen)
            by_name = {g.name: g for g in chosen}
            running: dict[str, BaseProcess] = {}
            try:
                while pending or running:
                    while pending and len(running) < jobs:
                        g = pending.pop(0)
                        running[g.name] = _launch(g, out, speed, scale, env)
                    for name, proc in list(running.items()):
                        if proc.is_alive():
                            continue
                        proc.join()
                        del running[name]
                        if proc.exitcode != 0 and outcome.resumed.get(name, 0) < RESUMES:
                            # a starved simulation (HOST_LOST on a loaded machine) measures the machine,
                            # not the model: go on from the run it stopped in, retried under ID.2
                            outcome.resumed[name] = outcome.resumed.get(name, 0) + 1
                            running[name] = _launch(by_name[name], out, speed, scale, env, resume=True)
                        elif proc.exitcode != 0:
                            outcome.failed.append(name)
                        elif outcome.rerun.get(name, 0) < RERUNS:
                            disturbed = [r.run for r in _rows(settings, name, outcome) if host_disturbed(r)]
                            if disturbed:  # not a sample of the model: its campaign once more, afresh
                                outcome.set_aside.setdefault(name, []).extend(disturbed)
                                outcome.rerun[name] = outcome.rerun.get(name, 0) + 1
                                running[name] = _launch(by_name[name], out, speed, scale, env, again=True)
                    if on_progress is not None:
                        on_progress({g.name: (_done(out / g.name), g.runs()) for g in chosen})
                    time.sleep(1.0)
            finally:  # interrupted: each campaign leaves its rig safe and stops its simulation
                for proc in running.values():
                    proc.terminate()
                for proc in running.values():
                    proc.join()
            for g in chosen:  # a failed or cut-short attempt is no measurement; its retry is
                outcome.rows[g.name] = _rows(settings, g.name, outcome)
                outcome.drive_smart[g.name] = _smart(settings, g.name)
                if g.name.endswith("sm951-random"):
                    outcome.iops = _iops(settings, g.name)
            if any(g.name == MIXED_CAMPAIGN.format(HEATSINKS[0]) for g in chosen):
                outcome.seeds = seed_checks(settings, load_drive_profile(DRIVE))
        finally:
            server.down()
    outcome.wall_s = time.monotonic() - start
    return outcome


def _rows(settings: InfluxSettings, campaign: str, outcome: Outcome) -> list[ThrottleRow]:
    """The campaign's runs that ended ok and were not set aside (a failed or cut-short attempt is no
    measurement, nor is a run the host disturbed that was run again)."""
    aside = set(outcome.set_aside.get(campaign, []))
    return [r for r in throttle_table(settings, campaign) if r.status == "ok" and r.run not in aside]


def _launch(
    g: Group, out: Path, speed: float, scale: float, env: dict[str, str], resume: bool = False, again: bool = False
) -> BaseProcess:
    """The group's campaign started afresh, or resumed in its folder; run again (`again`), the attempt
    before it is kept beside it as <name>.set-aside and <name>.set-aside.log."""
    spec = out / f"{g.name}.toml"
    folder = out / g.name
    if again:
        aside = out / f"{g.name}.set-aside"
        shutil.rmtree(aside, ignore_errors=True)
        folder.rename(aside)
        (out / f"{g.name}.log").replace(out / f"{g.name}.set-aside.log")
    if not resume:
        spec.write_text(g.toml(speed, scale))
        shutil.rmtree(folder, ignore_errors=True)  # generated: each check starts its campaigns afresh
    return campaign_process.start(spec, folder, resume, out / f"{g.name}.log", env)


def _smart(settings: InfluxSettings, campaign: str) -> dict[str, float]:
    """How much of the virtual drive's smart-log reached InfluxDB: points, hottest composite, TMT1 count."""
    series = influxql(
        settings,
        f"SELECT count(composite_c), max(composite_c), max(tmt1_count) FROM {schema.DRIVE} "
        f"WHERE \"campaign\" = '{campaign}'",
    )
    if not series or not series[0].values:
        return {"points": 0.0}
    _, points, composite, tmt1 = series[0].values[0]
    return {"points": float(points or 0), "max_composite_c": float(composite or 0), "max_tmt1_count": float(tmt1 or 0)}


def _iops(settings: InfluxSettings, campaign: str) -> dict[str, float]:
    """The consistency score's average IOPS per heatsink (the run summary holds it at the drive's scale)."""
    series = influxql(
        settings,
        f'SELECT last(iops_average) FROM {schema.SUMMARY} WHERE "campaign" = \'{campaign}\' GROUP BY "heatsink"',
    )
    return {
        s.tags.get("heatsink", "-"): float(s.values[0][1]) for s in series if s.values and s.values[0][1] is not None
    }
