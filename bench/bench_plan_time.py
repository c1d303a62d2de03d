"""How long a user waits for a plan without history: `thermrig plan examples/puget-slots-gpu-heat.toml`
(64 runs walked through the calibrated rig model) and `thermrig lab plan -n 4` of the same file, each as
a whole command from a fresh history folder (so the model walks), seed 2016; wall and CPU seconds (the
median of --repeats), and the estimate each printed. Read back from the walk kept under --history, the
same plan again, for the part that is not the walk (imports, the table, the 50 drawn orders).

    python bench/bench_plan_time.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import figure

REPO = Path(__file__).resolve().parents[1]
PUGET = REPO / "examples" / "puget-slots-gpu-heat.toml"
COMMANDS = {
    "thermrig plan, the Puget matrix": ["plan", str(PUGET), "--seed", "2016"],
    "thermrig lab plan -n 4, the Puget matrix": ["lab", "plan", str(PUGET), "-n", "4", "--seed", "2016"],
}
SAID = re.compile(r"(estimated \S+|planned \S+ on one place)")


def timed(args: list[str], history: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """One command: wall s, CPU s (user + system of the child), what it estimated."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "thermrig.cli", *args, "--history", str(history)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    said = SAID.search(" ".join(out.stdout.split()))
    return wall, cpu, said[1] if said else "(no estimate line)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="thermrig-bench-plan-") as tmp:
        root = Path(tmp)
        env = dict(
            os.environ,
            XDG_CONFIG_HOME=str(root / "config"),
            XDG_DATA_HOME=str(root / "data"),
            COLUMNS="200",
        )
        for name, command in COMMANDS.items():
            walls, cpus, said = [], [], ""
            for n in range(args.repeats):
                wall, cpu, said = timed(command, root / f"{len(walls)}-{n}-{command[0]}", env)
                walls.append(wall)
                cpus.append(cpu)
            figure(
                f"{name}, no history",
                f"{statistics.median(walls):.1f} s wall",
                f"CPU {statistics.median(cpus):.1f} s; {said}; {args.repeats} runs",
            )
            kept = root / f"kept-{command[0]}"
            timed(command, kept, env)
            wall, cpu, _ = timed(command, kept, env)
            figure(f"{name}, the walk kept", f"{wall:.1f} s wall", f"CPU {cpu:.1f} s")


if __name__ == "__main__":
    main()
