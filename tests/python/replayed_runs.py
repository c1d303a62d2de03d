"""Campaigns recorded once on the simulated rig with the virtual drive and real fio, kept as the analysis
reads them from InfluxDB (analysis.influx_source.load_campaign: fio's per-second logs, the rig's and the
drive's 1 s means, the phases), so the same analysis replays them in a world that does not move: no
host's scheduling can slip a second of them between the recording and the verdict.

Recorded with `python tests/python/replayed_runs.py NAME` (NAME: a key of CAMPAIGNS) into replays/NAME.json.gz;
the recording runs the campaign as its real-time test does, in temp folders and a private influxd.

A replay is a world that kept up: in every run, from its first phase to its end, the plant served each
tick and the virtual drive each reply within the analysis's lag bound (analysis.lag.BOUND_MS, 500 ms),
and no window of fio's log ran that much past its second. The recorder keeps only such a recording, in
which the host stalled fio in no run either (it records again, up to ATTEMPTS times, on a machine too
busy for it), and loading one that is not kept up fails (LaggingReplay): an exact verdict is never read
off a world that fell behind. On a shared machine, run the recorder in a session of its own raised
ahead of the others (`setsid`, `echo -15 > /proc/self/autogroup`): Linux weighs sessions against each
other before niceness counts, so a world at niceness -15 in a busy session still waits."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from thermrig.analysis.attribution import LATENESS
from thermrig.analysis.influx_source import load_campaign
from thermrig.analysis.lag import BOUND_MS, fio_lag_ms
from thermrig.analysis.run_analysis import analyse_run
from thermrig.analysis.run_data import Gap, RunData
from thermrig.analysis.throttle_summary import JobLog
from thermrig.analysis.trace import Trace
from thermrig.db.local_server import LocalInflux

HERE = Path(__file__).resolve().parent
REPLAYS = HERE / "replays"
CARDEA = "cardea_iops_1tb"
ATTEMPTS = 4  # recordings made before the recorder gives up on a machine too busy to keep up


class LaggingReplay(ValueError):
    """A recording in which the simulated world fell behind past the lag bound."""


def _trace(t: Trace) -> dict[str, list[float]]:
    return {"t_ms": t.t_ms.tolist(), "values": t.values.tolist()}


def _from_trace(d: dict[str, list[float]]) -> Trace:
    return Trace(np.array(d["t_ms"], dtype=float), np.array(d["values"], dtype=float))


def encode(run: RunData) -> dict[str, Any]:
    return {
        "run": run.run,
        "tags": run.tags,
        "jobs": [dataclasses.asdict(j) for j in run.jobs],
        "scale": run.scale,
        "temps": {k: _trace(t) for k, t in run.temps.items()},
        "counters": {k: _trace(t) for k, t in run.counters.items()},
        "phases": run.phases,
        "status": run.status,
        "end_ms": run.end_ms,
        "summary_ns": run.summary_ns,
        "stored": run.stored,
        "gaps": [dataclasses.asdict(g) for g in run.gaps],
        "uptime": None if run.uptime is None else _trace(run.uptime),
    }


def decode(d: dict[str, Any]) -> RunData:
    jobs = [JobLog(**{k: tuple(v) if isinstance(v, list) else v for k, v in j.items()}) for j in d["jobs"]]
    return RunData(
        run=d["run"],
        tags=d["tags"],
        jobs=jobs,
        scale=d["scale"],
        temps={k: _from_trace(t) for k, t in d["temps"].items()},
        counters={k: _from_trace(t) for k, t in d["counters"].items()},
        phases=d["phases"],
        status=d["status"],
        end_ms=d["end_ms"],
        summary_ns=d["summary_ns"],
        stored=d["stored"],
        gaps=[Gap(**g) for g in d["gaps"]],
        uptime=None if d["uptime"] is None else _from_trace(d["uptime"]),
    )


def worst_lag(run: RunData) -> tuple[float, str]:
    """The run's worst lag, ms, over the whole run (every phase), and whose: the plant's ticks, the
    drive's replies (drive_smart's sim_plant_late_ms, sim_drive_late_ms) or fio's log windows."""
    worst = [(fio_lag_ms(run.jobs), "fio")]
    for name in LATENESS:
        trace = run.counters.get(name)
        if trace is not None and len(trace.values):
            worst.append((float(trace.values.max()), name.removeprefix("sim_").removesuffix("_late_ms")))
    return max(worst)


def kept_up(runs: list[RunData]) -> list[str]:
    """What fell behind past the lag bound, a line per run (empty: the world kept up throughout)."""
    out = []
    for run in runs:
        ms, source = worst_lag(run)
        if ms > BOUND_MS:
            out.append(f"{run.run}: the {source} {ms:.0f} ms late, past the {BOUND_MS:.0f} ms bound")
    return out


def host_stalled(runs: list[RunData]) -> list[str]:
    """The runs whose workload the analysis finds the host stalled in (fio left the drive with nothing to
    do: analysis.attribution), a line each: a recording keeps none, as its exact verdicts are the drive's."""
    out = []
    for run in runs:
        if stalls := analyse_run(run).throttle.host_stalls:
            out.append(f"{run.run}: the host stalled fio at {', '.join(f'{s} s' for s in stalls)}")
    return out


def load(path: Path) -> list[RunData]:
    """The runs a replay file holds; LaggingReplay if its world did not keep up."""
    with gzip.open(path, "rt") as f:
        runs = [decode(d) for d in json.load(f)]
    if late := kept_up(runs):
        raise LaggingReplay(
            f"{path.name} was recorded on a world that fell behind ({'; '.join(late)}): record it again with "
            f"`python tests/python/replayed_runs.py {path.name.removesuffix('.json.gz')}` on a quieter machine"
        )
    return runs


def replay(name: str) -> list[RunData]:
    """The recorded campaign's runs, as load_campaign gave them when it was recorded (checked: load)."""
    return load(REPLAYS / f"{name}.json.gz")


def _record_recorded_950pro(root: Path, server: LocalInflux) -> str:
    from recorded_campaign import NAME, record

    record(root, server)
    return NAME


def _record_cache_drops(root: Path, server: LocalInflux) -> str:
    """test_drop_cause's campaign: two cool conditions, 14 s of sequential write on the cached drive."""
    from campaign_helpers import CampaignFile, run_args, thermrig
    from recorded_campaign import env_for

    drive = {"target": "virtual", "profile": CARDEA, "scale": 0.02}
    text = CampaignFile("cache", drive, runtime_s=14).text()
    path = root / "c.toml"
    path.write_text(text.replace('profile = ["single_gpu_load"]', 'profile = ["idle", "single_gpu_idle"]'))
    r = thermrig(*run_args(path, root / "runs"), env=env_for(root, server.settings()), timeout=580)
    if r.returncode != 0:
        raise RuntimeError(r.stdout[-2000:] + r.stderr[-2000:])
    return "cache"


CAMPAIGNS: dict[str, Callable[[Path, LocalInflux], str]] = {
    "recorded-950pro": _record_recorded_950pro,  # recorded_campaign.py's: 2 slots x 2 loaded profiles
    "cache-drops": _record_cache_drops,
}


def record_replay(name: str, attempts: int = ATTEMPTS) -> Path:
    """Run the campaign (its world at the niceness a timed_world test's gets) and keep what InfluxDB holds,
    once a recording kept up throughout (kept_up): up to `attempts` recordings, each one's lag printed."""
    os.environ["THERMRIG_WORLD_NICE"] = "-15"
    for attempt in range(1, attempts + 1):
        with tempfile.TemporaryDirectory(prefix="replay-") as tmp:
            root = Path(tmp)
            server = LocalInflux(root / "influxdb")
            server.up()
            try:
                campaign = CAMPAIGNS[name](root, server)
                runs = load_campaign(server.settings(), campaign)
            finally:
                server.down()
        late = kept_up(runs) + host_stalled(runs)
        lags = ", ".join(f"{source} {ms:.0f} ms" for ms, source in map(worst_lag, runs))
        print(f"{name}: recording {attempt} of {attempts}, worst lag per run: {lags}", file=sys.stderr)
        if not late:
            break
        print(f"{name}: recording {attempt} not kept: {'; '.join(late)}", file=sys.stderr)
    else:
        raise LaggingReplay(f"{name}: no recording of {attempts} kept up ({'; '.join(late)}); nothing written")
    REPLAYS.mkdir(exist_ok=True)
    out = REPLAYS / f"{name}.json.gz"
    with gzip.open(out, "wt") as f:
        json.dump([encode(r) for r in runs], f)
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    args = sys.argv[1:]
    tries = ATTEMPTS
    if args[:1] == ["--attempts"] and len(args) >= 2 and args[1].isdigit() and int(args[1]) > 0:
        tries, args = int(args[1]), args[2:]
    if not args or not set(args) <= set(CAMPAIGNS):
        sys.exit(f"usage: {sys.argv[0]} [--attempts N] {' | '.join(CAMPAIGNS)} ...")
    for arg in args:
        print(record_replay(arg, tries))
