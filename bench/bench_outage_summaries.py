"""The issue-20 outage, measured: a four-run virtual-drive campaign (simulated rig, virtual 950 Pro, real
fio, a private influxd) with InfluxDB stopped during run 2's baseline, started again during run 3's
equilibrium, stopped during run 4's cool-down until the campaign has ended. Prints what a user reads:
the closing lines, each run's run_summary (fields set, complete) and the campaign's results, before and
after `thermrig db drain`. Runs against whichever thermrig is on PYTHONPATH (to compare branches).

    PYTHONPATH=host THERMRIG_INFLUXD=... .venv/bin/python bench/bench_outage_summaries.py
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from thermrig.db.local_server import LocalInflux
from thermrig.db.query import influxql
from thermrig.db.settings import InfluxSettings

NAME = "outage4"
CAMPAIGN = f"""\
[campaign]
name = "{NAME}"
seed = 7
baseline_s = 3

[rig]
port = "sim"
speed = 8

[drive]
target = "virtual"
profile = "950pro_512"
scale = 0.1

[equilibrium]
rate_c_per_min = 3.0
window_s = 15
timeout_s = 900
channels = ["chassis_air", "drive_ctrl"]

[cooldown]
margin_c = 3.0
timeout_s = 900

[factors]
slot = ["top", "underside"]
profile = ["single_gpu_load", "dual_gpu_load"]

[[workload]]
name = "seqwrite"
kind = "seq_write"
runtime_s = 36
"""


def summaries(settings: InfluxSettings) -> str:
    rows = []
    for s in influxql(settings, f"SELECT * FROM run_summary WHERE campaign = '{NAME}' GROUP BY run"):
        row = {k: v for k, v in zip(s.columns, s.values[-1], strict=True) if v is not None and k != "time"}
        rows.append(f"{s.tags['run'][-3:]}: {len(row)} fields, complete={row.get('complete')}")
    results = []
    for measurement, field in (("campaign_summary", "n"), ("campaign_effect", "difference"), ("sensor_rank", "rank")):
        found = influxql(settings, f"SELECT count({field}) FROM {measurement} WHERE campaign = '{NAME}'")
        results.append(f"{measurement} {found[0].values[0][1] if found else 0}")
    return "; ".join(rows) + " | " + ", ".join(results)


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="outage-bench-"))
    server = LocalInflux(root / "influxdb")
    server.up()
    settings = server.settings()
    env = {
        **os.environ,
        **{k: str(root / k.lower()) for k in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR")},
        "THERMRIG_INFLUX_URL": settings.url,
        "THERMRIG_INFLUX_BUCKET": settings.bucket,
        "COLUMNS": "200",
    }
    (root / "c.toml").write_text(CAMPAIGN)
    cli = [sys.executable, "-m", "thermrig.cli"]
    proc = subprocess.Popen(
        [*cli, "run", str(root / "c.toml"), "--no-prompt", "--out", str(root / "runs")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()  # "" once the campaign's output has ended
    assert proc.stdout is not None
    stream = proc.stdout
    threading.Thread(target=lambda: [*map(lines.put, stream), lines.put("")], daemon=True).start()
    out: list[str] = []

    def wait_for(*parts: str) -> None:
        while True:
            line = lines.get(timeout=1200)
            if not line:
                raise SystemExit("the campaign ended early:\n" + "".join(out[-10:]))
            out.append(line)
            if all(p in line for p in parts):
                return

    try:
        wait_for("run 2/4", ": baseline")
        server.down()
        wait_for("run 3/4", ": equilibrium")
        server.up()
        wait_for("run 4/4", ": cooldown")
        server.down()
        proc.wait(timeout=1200)
        while not lines.empty():
            out.append(lines.get())
        print("thermrig run, its last lines:")
        print("".join("  " + ln for ln in out[-4:]), end="")
        server.up()
        print("after the campaign:  " + summaries(settings))
        drain = subprocess.run([*cli, "db", "drain"], env=env, capture_output=True, text=True)
        print("thermrig db drain:\n" + "".join("  " + ln + "\n" for ln in drain.stdout.splitlines()), end="")
        print("after db drain:      " + summaries(settings))
        started = time.monotonic()
        subprocess.run([*cli, "analyze", NAME], env=env, capture_output=True, text=True)
        print(f"after analyze ({time.monotonic() - started:.0f} s): " + summaries(settings))
    finally:
        if proc.poll() is None:
            proc.kill()
        server.down()


if __name__ == "__main__":
    main()
