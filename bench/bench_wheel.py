"""The wheel a lab installs: its size, the time to build it (scikit-build-core compiling rigsim, rigsim6
and the nbdkit plugin), and the time from a fresh venv to the first `thermrig sim --drive 950pro_512`
answering fio: venv created, wheel and dependencies installed (from pip's cache when warm), the
simulated rig and the virtual drive served, one fio job of 200 random I/Os done on the drive."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import figure

REPO = Path(__file__).resolve().parents[1]
JOB = "[global]\nioengine=nbd\nuri=${uri}\nrw=randrw\nnumber_ios=200\niodepth=8\n[a]\n"


def lab_env(home: Path) -> dict[str, str]:
    path = [p for p in os.environ["PATH"].split(os.pathsep) if p and not Path(p).resolve().is_relative_to(REPO)]
    xdg = {v: str(home / v.lower()) for v in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR")}
    return {"PATH": os.pathsep.join(path), "HOME": str(home), **xdg}


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-wheel-") as tmp:
        home = Path(tmp)
        started = time.monotonic()
        build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", "dist"]
        subprocess.run([*build, str(REPO / "host")], check=True, cwd=home)
        built = time.monotonic() - started
        (wheel,) = (home / "dist").glob("thermrig-*.whl")
        figure("wheel size", f"{wheel.stat().st_size / 1024:.0f} KiB")
        figure("wheel build (make dist's pip wheel)", f"{built:.1f} s")

        started = time.monotonic()
        venv = home / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, str(wheel)], check=True, cwd=home)
        installed = time.monotonic() - started
        env = lab_env(home)
        proc = subprocess.Popen(
            [str(venv / "bin" / "thermrig"), "sim", "--drive", "950pro_512", "--scale", "0.05"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=home,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            uri = next(line.strip() for line in proc.stdout if line.startswith("nbd+unix:///?socket="))
            served = time.monotonic() - started
            (home / "job.fio").write_text(JOB)
            out = subprocess.run(
                ["fio", "--output-format=json", "job.fio"], capture_output=True, text=True, check=True,
                cwd=home, env={**env, "uri": uri},
            )  # fmt: skip
            answered = time.monotonic() - started
            job = json.loads(out.stdout[out.stdout.index("{") :])["jobs"][0]
            assert job["error"] == 0
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        figure("fresh venv: wheel and dependencies installed", f"{installed:.1f} s")
        figure("fresh venv: thermrig sim --drive serving", f"{served:.1f} s")
        figure("fresh venv: first fio job answered (200 I/Os)", f"{answered:.1f} s")


if __name__ == "__main__":
    main()
