"""A lab campaign's wall time: the same 12 short runs (`thermrig run --lab`) on one simulated place and on
three at once (the sealed simulated lab of thermrig.lab_world: a labgrid coordinator, the lab's InfluxDB with
authentication on, an exporter per simulated rig at real time, a fio server per test PC holding the rig's
virtual drive, reached through SSH forwards), and the ratio."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import figure

from thermrig.lab_world.world import CAMPAIGN_RIG, PLACES, TAGS, campaign, simulated_lab

RUNS = 12


def wall_time(folder: Path, address: str, places: int, env: dict[str, str], ssh_key: str) -> float:
    path = campaign(folder, f"bench{places}", address, runs=RUNS, ssh_key=ssh_key)
    path.write_text(path.read_text().replace("[lab]\n", f"[lab]\nplaces = {places}\n"))
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "thermrig.cli", "run", str(path), "--out", str(folder / f"runs{places}")],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    seconds = time.monotonic() - start
    if done.returncode != 0 or f"{RUNS} of {RUNS} runs ok" not in done.stdout:
        raise SystemExit(f"the campaign on {places} places failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="thermrig-bench-", dir="/var/tmp") as tmp:
        folder = Path(tmp)
        with simulated_lab(folder / "lab", list(PLACES), CAMPAIGN_RIG) as lab:
            assert lab.influx is not None
            env = {**os.environ, **lab.influx.env()}
            for var in ("XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_STATE_HOME"):
                env[var] = str(folder / var.lower())
            for name in PLACES:
                lab.add_place(name, TAGS)
            one = wall_time(folder, lab.address, 1, env, lab.ssh_key)
            three = wall_time(folder, lab.address, 3, env, lab.ssh_key)
    figure(f"{RUNS}-run campaign on 1 simulated place", f"{one:.1f} s")
    figure(f"{RUNS}-run campaign on 3 simulated places", f"{three:.1f} s")
    figure("3 places / 1 place", f"{three / one:.2f}", "goal < 0.5")


if __name__ == "__main__":
    main()
