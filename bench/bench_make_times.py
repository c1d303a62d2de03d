"""The times the README promises: in a fresh clone of this revision (its committed tree), `make setup`
(the Debian packages and influxd already on the machine: the venv with pip's cache as this machine has
it, and the host build), then `make demo`, then `make test` after that first install, each suite's
time as `make test` prints it: on a quiet machine and beside two CPU-bound processes (a lab's test PC is
rarely idle), each in a fresh clone of its own. BENCH_MAKE_BURNERS says how many CPU-bound processes each
measurement has beside it (default "0 2": quiet, then beside two). Long: about an hour on a 2-core machine.
`BENCH_MAKE_STEPS="setup demo"` runs only those steps (setup always runs first in the clone)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import burners, figure

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("setup", "demo", "test")


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {round(seconds % 60):02d} s"


def make(target: str, clone: Path, env: dict[str, str], log: Path) -> tuple[float, str]:
    """Run `make TARGET` in the clone, its output into log; its wall seconds and output."""
    print(f"  make {target} (its output: {log})", flush=True)
    start = time.monotonic()
    with log.open("w") as out:
        code = subprocess.run(
            ["make", "--no-print-directory", target],
            cwd=clone,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        ).returncode
    wall = time.monotonic() - start
    text = log.read_text(errors="replace")
    if code != 0:
        tail = "\n".join(text.splitlines()[-20:])
        raise SystemExit(
            f"make {target} failed (exit {code}) after {wall:.0f} s; the clone and its logs are kept in "
            f"{clone.parent}; the log's last lines:\n{tail}"
        )
    return wall, text


def main() -> int:
    steps = os.environ.get("BENCH_MAKE_STEPS", "").split() or list(STEPS)
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        print(f"BENCH_MAKE_STEPS: {', '.join(unknown)} unknown; choose from {', '.join(STEPS)}", file=sys.stderr)
        return 2
    counts = os.environ.get("BENCH_MAKE_BURNERS", "0 2").split()
    if not counts or not all(n.isdigit() for n in counts):
        print(f"BENCH_MAKE_BURNERS: {counts!r} is not a list of numbers of processes (0 for none)", file=sys.stderr)
        return 2
    for n in counts:
        with burners(int(n)):
            if (code := measure(steps, int(n))) != 0:
                return code
    return 0


def beside(n_burners: int) -> str:
    """How the figure was measured: "quiet" or "beside N CPU-bound processes"."""
    return "quiet" if n_burners == 0 else f"beside {n_burners} CPU-bound processes"


def measure(steps: list[str], n_burners: int) -> int:
    revision = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    # the clone finds its own tools: nothing of this checkout's venv, build or make is passed on
    dropped = ("VIRTUAL_ENV", "THERMRIG_", "PYTHONPATH", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    # the pinned firmware archives, for a machine without internet access: where this checkout finds them
    toolchains = os.environ.get("THERMRIG_TOOLCHAINS") or str(ROOT.parent / "shared" / "toolchains")
    if Path(toolchains).is_dir():
        env["THERMRIG_TOOLCHAINS"] = toolchains
    tmp = tempfile.mkdtemp(prefix="thermrig-bench-make-", dir="/var/tmp")  # removed when every step passed
    clone = Path(tmp) / "thermrig"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    print(f"  fresh clone of {revision} in {clone}, {n_burners} CPU-bound processes beside it", flush=True)
    setup_s, _ = make("setup", clone, env, Path(tmp) / "setup.log")
    how = beside(n_burners)
    figure(f"make setup, fresh clone (system packages already there), {how}", minutes(setup_s))
    if "demo" in steps:
        demo_s, _ = make("demo", clone, env, Path(tmp) / "demo.log")
        figure(f"make demo, after the setup, {how}", minutes(demo_s))
    if "test" in steps:
        test_s, out = make("test", clone, env, Path(tmp) / "test.log")
        for suite, seconds in re.findall(r"^make test: (\S+) took (\d+) s$", out, flags=re.M):
            figure(f"make test: {suite}, {how}", minutes(float(seconds)))
        after = re.search(r"^make test: everything after the setup took (\d+) s$", out, flags=re.M)
        if after:
            figure(f"make test: everything after the setup, {how}", minutes(float(after.group(1))))
        figure(f"make test, after the first install (wall), {how}", minutes(test_s))
    shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
