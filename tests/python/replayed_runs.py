"""Campaigns recorded once on the simulated rig with the virtual drive and real fio, kept as the analysis
reads them from InfluxDB (analysis.influx_source.load_campaign: fio's per-second logs, the rig's and the
drive's 1 s means, the phases), so the same analysis replays them in a world that does not move: no
host's scheduling can slip a second of them between the recording and the verdict.

Recorded with `python tests/python/replayed_runs.py NAME` (NAME: a key of CAMPAIGNS) into replays/NAME.json.gz;
the recording runs the campaign as its real-time test does, in temp folders and a private influxd."""

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

from thermrig.analysis.influx_source import load_campaign
from thermrig.analysis.run_data import Gap, RunData
from thermrig.analysis.throttle_summary import JobLog
from thermrig.analysis.trace import Trace
from thermrig.db.local_server import LocalInflux

HERE = Path(__file__).resolve().parent
REPLAYS = HERE / "replays"
CARDEA = "cardea_iops_1tb"


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


def replay(name: str) -> list[RunData]:
    """The recorded campaign's runs, as load_campaign gave them when it was recorded."""
    with gzip.open(REPLAYS / f"{name}.json.gz", "rt") as f:
        return [decode(d) for d in json.load(f)]


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


def record_replay(name: str) -> Path:
    """Run the campaign (its world at the niceness a timed_world test's gets) and keep what InfluxDB holds."""
    with tempfile.TemporaryDirectory(prefix="replay-") as tmp:
        root = Path(tmp)
        server = LocalInflux(root / "influxdb")
        server.up()
        try:
            os.environ["THERMRIG_WORLD_NICE"] = "-15"
            campaign = CAMPAIGNS[name](root, server)
            runs = load_campaign(server.settings(), campaign)
        finally:
            server.down()
    REPLAYS.mkdir(exist_ok=True)
    out = REPLAYS / f"{name}.json.gz"
    with gzip.open(out, "wt") as f:
        json.dump([encode(r) for r in runs], f)
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    if not sys.argv[1:] or not set(sys.argv[1:]) <= set(CAMPAIGNS):
        sys.exit(f"usage: {sys.argv[0]} {' | '.join(CAMPAIGNS)} ...")
    for arg in sys.argv[1:]:
        print(record_replay(arg))
