"""`thermrig flash` end to end: on the emulated board (build, restart the running `thermrig sim
--firmware zephyr` on the image, version check; a different image refused), and on a Nucleo through
PlatformIO, where a recording fake `pio` on PATH stands in for the upload because no board exists here
(the rig's serial side is then a simulated rig)."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from interruptible import with_default_sigint

from thermrig.firmware_identity import checkout_version
from thermrig.link.rig_link import RigLink
from thermrig.paths import REPO_ROOT
from thermrig.protocol.messages import Telemetry
from thermrig.sim.firmware.zephyr import zephyr_image
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

THERMRIG = [sys.executable, "-m", "thermrig.cli"]
STAMP = REPO_ROOT / "build" / "zephyr" / "qemu_cortex_m3" / "rig_version.h"
OLD = "0.0.9+gdeadbee"  # an image built from another checkout


def cli(*args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*THERMRIG, *args], capture_output=True, text=True, timeout=timeout, env={**env, "COLUMNS": "200"}
    )


def one_line_error(r: subprocess.CompletedProcess[str], *words: str) -> None:
    assert r.returncode == 1, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    for word in words:
        assert word in r.stderr, r.stderr


@pytest.fixture
def emulated_sim(isolated_env: dict[str, str]) -> Iterator[str]:
    """`thermrig sim --firmware zephyr` as a user runs it; yields its port."""
    proc = subprocess.Popen(
        with_default_sigint([*THERMRIG, "sim", "--firmware", "zephyr"]),
        env=isolated_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    port = ""
    for line in proc.stdout:
        if line.startswith("/"):
            port = line.strip()
            break
    assert port, proc.stderr.read() if proc.stderr else ""
    try:
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def latest_frame(link: RigLink, timeout: float = 10.0) -> Telemetry:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        link.ping()
        time.sleep(0.2)
        if frames := link.drain_telemetry():
            return frames[-1]
    raise AssertionError(f"no telemetry from {link.port} in {timeout} s")


def different_image(tmp_path: Path) -> tuple[Path, str]:
    """A copy of the built image whose version stamp names another revision."""
    built = STAMP.read_text().split('"')[1]
    other = re.sub(r"\+g[0-9a-f]{7}", "+g0000000", built)
    other = other if other != built else built[:-1] + ("1" if built[-1] != "1" else "2")
    data = zephyr_image().read_bytes()
    assert built.encode() in data
    path = tmp_path / "other.elf"
    path.write_bytes(data.replace(built.encode(), other.encode()))
    return path, other


def test_flash_the_emulated_board(emulated_sim: str, isolated_env: dict[str, str], tmp_path: Path) -> None:
    r = cli("flash", "--board", "qemu", "--dry-run", env=isolated_env)
    assert r.returncode == 0 and "firmware-qemu" in r.stdout and emulated_sim in r.stdout

    r = cli("flash", "--board", "qemu", env=isolated_env)
    assert r.returncode == 0, r.stderr
    built = STAMP.read_text().split('"')[1]
    assert f"flashed: thermrig-zephyr {built} on qemu_cortex_m3" in r.stdout

    corrupt = tmp_path / "corrupt.elf"
    corrupt.write_bytes(b"not an image")
    r = cli("flash", "--board", "qemu", env={**isolated_env, "THERMRIG_ZEPHYR_ELF": str(corrupt)})
    one_line_error(r, "upload failed", "not an ARM ELF image")
    with RigLink(emulated_sim) as link:  # nothing half-done: the previous image runs again
        assert link.hello().version == built

    image, other = different_image(tmp_path)
    r = cli("flash", "--board", "qemu", env={**isolated_env, "THERMRIG_ZEPHYR_ELF": str(image)})
    one_line_error(r, "version differs", other, built)
    with RigLink(emulated_sim) as link:  # the rig runs the other image, safe
        assert link.hello().version == other
        assert not latest_frame(link).heat_enabled

    one_line_error(cli("flash", "--board", "qemu", "--port", "/dev/null", env=isolated_env), "is not the running")


def test_flash_the_emulated_board_needs_it_running(isolated_env: dict[str, str]) -> None:
    one_line_error(cli("flash", "--board", "qemu", env=isolated_env), "no emulated rig is running")
    missing = {**isolated_env, "THERMRIG_ZEPHYR_ELF": "/nonexistent/zephyr.elf"}
    one_line_error(cli("sim", "--firmware", "zephyr", env=missing), "is missing", "make firmware-qemu")
    one_line_error(cli("flash", "--board", "esp32", env=isolated_env), "unknown board 'esp32'")


FAKE_PIO = """#!/bin/sh
# Stands in for PlatformIO: records its arguments; a build leaves an image in $PLATFORMIO_BUILD_DIR that
# carries $FAKE_PIO_VERSION as the core's HELLO literal does; the upload fails when FAKE_PIO_UPLOAD_FAILS is set.
echo "$*" >> "$FAKE_PIO_LOG"
case "$*" in
  *upload*) if [ -n "$FAKE_PIO_UPLOAD_FAILS" ]; then echo "Error: No ST-LINK detected"; exit 1; fi ;;
  "run -e "*) mkdir -p "$PLATFORMIO_BUILD_DIR/$3"; image="$PLATFORMIO_BUILD_DIR/$3/firmware.elf"
              printf '\\177ELF... fw=thermrig-zephyr ver=%s\\0...' "$FAKE_PIO_VERSION" > "$image" ;;
esac
exit 0
"""


@pytest.fixture
def fake_pio(tmp_path: Path, isolated_env: dict[str, str]) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pio = bin_dir / "pio"
    pio.write_text(FAKE_PIO)
    pio.chmod(pio.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "pio.log"
    return {
        **isolated_env,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_PIO_LOG": str(log),
        "PLATFORMIO_BUILD_DIR": str(tmp_path / "pio-build"),
        "FAKE_PIO_VERSION": checkout_version(),  # what the stand-in board (rigsim built here) reports
    }


@pytest.fixture
def fresh_rigsim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """rigsim built from this checkout as it is now: the board's serial side after a good upload."""
    build = tmp_path / "rigsim-build"
    subprocess.run(
        ["cmake", "-S", str(REPO_ROOT / "firmware"), "-B", str(build), "-G", "Ninja"], check=True, capture_output=True
    )
    subprocess.run(["cmake", "--build", str(build), "--target", "rigsim"], check=True, capture_output=True)
    monkeypatch.setenv("THERMRIG_RIGSIM", str(build / "rigsim"))
    return build / "rigsim"


def test_flash_a_nucleo_through_platformio(fake_pio: dict[str, str], fresh_rigsim: Path, tmp_path: Path) -> None:
    log = Path(fake_pio["FAKE_PIO_LOG"])
    one_line_error(cli("flash", "--board", "nucleo_f411re", env=fake_pio), "no port for the nucleo_f411re")
    assert not log.exists()  # nothing built or uploaded without a port to check

    with SimulatedRig(SimConfig()) as sim:
        r = cli("flash", "--board", "nucleo_f446re", "--port", sim.port, env=fake_pio)
        assert r.returncode == 0, r.stderr
        assert "flashed: thermrig-core" in r.stdout
        assert log.read_text().splitlines() == ["run -e nucleo_f446re", "run -e nucleo_f446re -t upload"]

        with RigLink(sim.port) as link:
            link.hello()
            link.set(air=4000, hlim=500, heat=1)
        # The version checked is the image's, not the checkout's: an image stamped otherwise is named.
        r = cli("flash", "--board", "nucleo_f446re", "--port", sim.port, env={**fake_pio, "FAKE_PIO_VERSION": OLD})
        one_line_error(r, "version differs", OLD)

        r = cli("flash", "--port", sim.port, env={**fake_pio, "FAKE_PIO_UPLOAD_FAILS": "1"})
        one_line_error(r, "upload failed", "-t upload", "No ST-LINK detected")
        with RigLink(sim.port) as link:
            link.hello()
            assert not latest_frame(link).heat_enabled  # left safe, not heating

    master, slave = os.openpty()  # a port where no rig answers
    try:
        r = cli("flash", "--port", os.ttyname(slave), "--timeout", "2", env=fake_pio)
        one_line_error(r, "silent after flashing")
    finally:
        os.close(master)
        os.close(slave)
