"""`thermrig flash --board pico` (thermrig.flash.pico). mpremote runs for real against MicroPython's unix
port: its REPL on a pty (through socat) stands in for the Pico's USB serial and its working folder for
the Pico's filesystem. Only the board's USB side has no stand-in for a whole flash (a reset that boots
main.py, a Ctrl-C that reaches it): there a recording fake mpremote ($THERMRIG_MPREMOTE) copies the
staged files into a folder and, on `reset`, boots them for real, main.py on the unix port on the
simulated Pico (firmware/micropython/sim_machine) wired to a plant, so the HELLO the flash checks comes
from the flashed files."""

from __future__ import annotations

import filecmp
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from firmware_release import write_release
from interruptible import with_default_sigint
from typer.testing import CliRunner

from thermrig.cli.main import app
from thermrig.dut.pacing import Pacing
from thermrig.firmware_identity import checkout_version
from thermrig.flash import FlashError, flasher, image_flasher
from thermrig.flash.pico import BOARD_FILES, PicoFlasher, mpremote_binary
from thermrig.flash.procedure import flash
from thermrig.flash.release import image_to_flash
from thermrig.sim.firmware.micropython import firmware_dir, micropython_binary
from thermrig.sim.server import PlantServer
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

SIM_MACHINE = firmware_dir() / "sim_machine"


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60  # a loaded machine (make test under xdist) may start the board slowly
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), f"{path} did not appear"


@pytest.fixture
def unix_repl_board(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(port, filesystem): the unix port's REPL on a pty, running in an empty folder."""
    if shutil.which("socat") is None:
        pytest.skip("socat is not installed (scripts/setup_system.sh installs it)")
    fs = tmp_path / "board"
    fs.mkdir()
    port = tmp_path / "ttyACM0"
    repl = f"EXEC:{micropython_binary()},pty,raw,echo=0,stderr"
    cmd = ["socat", f"PTY,link={port},raw,echo=0", repl]
    env = {**os.environ, "MICROPYPATH": ".frozen"}
    with subprocess.Popen(with_default_sigint(cmd), cwd=fs, env=env) as proc:
        wait_for(port)
        yield str(port), fs
        proc.terminate()


def test_mpremote_copies_the_stamped_board_files_and_they_run_there(unix_repl_board: tuple[str, Path]) -> None:
    port, fs = unix_repl_board
    pico = PicoFlasher()
    version = pico.build()
    subprocess.run(pico.copy_command(port), cwd=pico.staged, check=True, capture_output=True, timeout=120)
    assert sorted(p.name for p in fs.iterdir()) == sorted(BOARD_FILES)
    assert not (fs / "thermrig_fw" / "hal_sim.py").exists()  # the simulation's HAL stays behind
    cmp = filecmp.dircmp(pico.staged, fs)
    assert not cmp.diff_files and not cmp.subdirs["thermrig_fw"].diff_files
    # The copied firmware imports on the "board" and carries this checkout's stamp, seen through mpremote.
    code = "import bootcheck; print(bootcheck.check()); from thermrig_fw import config; print(config.FW_VERSION)"
    check = [mpremote_binary(), "connect", port, "resume", "exec", code]
    out = subprocess.run(check, capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert out[-2:] == ["None", repr(version.encode())]


def fake_mpremote(tmp_path: Path, fail: str = "<never>") -> tuple[Path, Path]:
    """(log of calls, board folder): `fs cp` copies into the board folder, `reset` boots main.py there
    on the simulated Pico (its plant at tmp_path/plant.sock), its USB serial a pty at the port path;
    `fail` makes the command containing it fail as mpremote does."""
    board, log, script = tmp_path / "board-fs", tmp_path / "mpremote.log", tmp_path / "mpremote"
    board.mkdir()
    pico = f"{SIM_MACHINE / 'pico_sim.py'} --plant {tmp_path / 'plant.sock'} --firmware {board}"
    boot = f"EXEC:{micropython_binary()} {pico},pty,raw,echo=0"
    script.write_text(
        f"""#!/bin/sh
echo "$*" >> {log}
case "$*" in *"{fail}"*) echo "mpremote: failed to access $2 (it may be in use by another program)" >&2; exit 1;; esac
case "$*" in
  *" fs cp -r "*) shift 6; for f in "$@"; do [ "$f" = ":." ] || cp -r "$f" {board}/; done ;;
  *" reset") cd {board} && setsid socat PTY,link=$2,raw,echo=0 "{boot}" \\
      </dev/null >/dev/null 2>{tmp_path}/board.log & echo $! > {tmp_path}/board.pid ;;
esac
"""
    )
    script.chmod(0o755)
    return log, board


@pytest.fixture
def stop_board(tmp_path: Path) -> Iterator[None]:
    """The plant the flashed board boots against (real time: the board's clock paces it); stopped after."""
    sim = SimulatedRig(SimConfig(pacing=Pacing.realtime(), seed=1))  # its plant and sensors only
    server = PlantServer(sim.plant, sim.sensors, str(tmp_path / "plant.sock"), Pacing.realtime()).start()
    yield
    pid = tmp_path / "board.pid"
    if pid.exists():
        os.killpg(int(pid.read_text()), signal.SIGTERM)
    server.close()


def test_flash_copies_resets_and_checks_the_stamped_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop_board: None
) -> None:
    if shutil.which("socat") is None:
        pytest.skip("socat is not installed (scripts/setup_system.sh installs it)")
    log, board = fake_mpremote(tmp_path)
    monkeypatch.setenv("THERMRIG_MPREMOTE", str(tmp_path / "mpremote"))
    port = str(tmp_path / "ttyACM0")
    said: list[str] = []
    info = flash(flasher("pico"), port, said.append, timeout=30)
    assert (info.firmware, info.board, info.version) == ("thermrig-micropython", "rp2040-pico", checkout_version())
    calls = [line.split(" resume ") for line in log.read_text().splitlines()]
    assert calls == [[f"connect {port}", "fs cp -r thermrig_fw main.py bootcheck.py :."], [f"connect {port}", "reset"]]
    assert (board / "thermrig_fw" / "version.py").read_text().count(checkout_version()) == 1


def test_flash_a_release_copies_its_bytecode_as_it_is_and_checks_the_manifests_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop_board: None
) -> None:
    """The release's .mpy files (mpy-cross) boot on the unix port and report the manifest's version."""
    if shutil.which("socat") is None:
        pytest.skip("socat is not installed (scripts/setup_system.sh installs it)")
    release = write_release(tmp_path, "0.1.0+g1234567")
    board, image, version = image_to_flash("pico", None, release)
    assert (board, version, image) == ("pico", checkout_version(), release / "pico")
    log, fs = fake_mpremote(tmp_path)
    monkeypatch.setenv("THERMRIG_MPREMOTE", str(tmp_path / "mpremote"))
    port = str(tmp_path / "ttyACM0")
    info = flash(image_flasher(board, image, version), port, lambda text: None, timeout=30)
    assert (info.firmware, info.version) == ("thermrig-micropython", version)
    calls = [line.split(" resume ") for line in log.read_text().splitlines()]
    assert calls == [[f"connect {port}", "fs cp -r bootcheck.mpy main.py thermrig_fw :."], [f"connect {port}", "reset"]]
    assert sorted(p.relative_to(fs).as_posix() for p in fs.rglob("*.py")) == ["main.py"]  # the rest bytecode


def test_dry_run_says_what_it_would_do_and_runs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log, _ = fake_mpremote(tmp_path)
    monkeypatch.setenv("THERMRIG_MPREMOTE", str(tmp_path / "mpremote"))
    result = CliRunner().invoke(app, ["flash", "--board", "pico", "--port", "/dev/ttyACM7", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "connect /dev/ttyACM7 resume fs cp -r thermrig_fw main.py bootcheck.py :." in result.output
    assert "connect /dev/ttyACM7 resume reset" in result.output
    assert not log.exists()


def test_mpremote_failure_and_a_silent_board_are_one_line_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_mpremote(tmp_path, fail="fs cp")
    monkeypatch.setenv("THERMRIG_MPREMOTE", str(tmp_path / "mpremote"))
    result = CliRunner().invoke(app, ["flash", "--board", "pico", "--port", str(tmp_path / "ttyACM7")])
    assert result.exit_code == 1
    assert "upload failed" in result.output and "failed to access" in result.output
    assert "Traceback" not in result.output
    monkeypatch.setenv("THERMRIG_MPREMOTE", "true")  # uploads "succeed", nothing comes back
    with pytest.raises(FlashError, match="silent after flashing"):
        flash(PicoFlasher(), str(tmp_path / "ttyACM7"), lambda _: None, timeout=1.0)
