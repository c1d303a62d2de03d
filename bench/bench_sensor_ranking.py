"""Sensor ranking on the virtual 950 Pro: examples/virtual-sensor-ranking.toml recorded N times (default 2,
`python bench/bench_sensor_ranking.py 3`), each into its own influxd; per recording the controller
thermocouple's and the composite's spread at the onset, read at the onset moment (what the analysis does)
and at the end of the onset's second (what it did before), and the ranks."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from common import figure

from thermrig.analysis.influx_source import load_campaign
from thermrig.analysis.run_analysis import analyse_run
from thermrig.analysis.sensor_ranking import rank_sensors
from thermrig.db.local_server import LocalInflux

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ROOT / "examples" / "virtual-sensor-ranking.toml"
NAME = "virtual-sensor-ranking"
CTRL, COMPOSITE = "rig_telemetry.drive_ctrl_c", "drive_smart.composite_c"


def record(folder: Path, server: LocalInflux) -> None:
    s = server.settings()
    env = {
        **os.environ,
        **{f"XDG_{k}_HOME": str(folder / k.lower()) for k in ("DATA", "CONFIG")},
        "XDG_RUNTIME_DIR": str(folder / "run"),
        "THERMRIG_INFLUX_URL": s.url,
        "THERMRIG_INFLUX_BUCKET": s.bucket,
    }
    cmd = [sys.executable, "-m", "thermrig.cli", "run", str(CAMPAIGN), "--no-prompt", "--out", str(folder / "runs")]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"recording failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


def spread(values: list[float]) -> str:
    v = np.array(values)
    return f"range {np.ptp(v):.2f}, MAD {np.median(np.abs(v - np.median(v))):.2f} °C"


def report(n: int, server: LocalInflux) -> None:
    runs = [(d, analyse_run(d)) for d in load_campaign(server.settings(), NAME)]
    ranks, _ = rank_sensors(runs)
    place = {r.sensor: (i + 1, r) for i, r in enumerate(ranks)}
    th = [(d, s.throttle) for d, s in runs]
    at_end = [d.temps[CTRL].at(t.start_ms + t.onset_s * 1000) for d, t in th if t.onset_s and t.start_ms]
    for sensor in (CTRL, COMPOSITE):
        i, r = place[sensor]
        figure(f"#{n} {r.label}: rank, at the onset moment", f"{i}, {r.median_c:.2f} °C, spread {r.spread_c:.2f}")
    ctrl = place[CTRL][1]
    figure(f"#{n} drive_ctrl at the onset moment", f"range {ctrl.range_c:.2f}, MAD {ctrl.mad_c:.2f} °C")
    figure(f"#{n} drive_ctrl at the end of the onset's second", spread([t for t in at_end if t is not None]))


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    for n in range(1, count + 1):
        with tempfile.TemporaryDirectory(prefix="thermrig-bench-rank-", dir="/var/tmp") as tmp:
            server = LocalInflux(Path(tmp) / "influxdb")
            server.up()
            try:
                print(f"  recording {n} of {count} (about 6 minutes)", flush=True)
                record(Path(tmp), server)
                report(n, server)
            finally:
                server.down()


if __name__ == "__main__":
    main()
