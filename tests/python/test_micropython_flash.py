"""Flashing the MicroPython firmware (thermrig.flash.pico). mpremote runs for real against MicroPython's
unix port: its REPL on a pty (through socat) stands in for the Pico's USB serial and its working folder
for the Pico's filesystem. Only the reset of a physical board has no stand-in: for the whole flow a
recording fake mpremote ($THERMRIG_MPREMOTE) plays it, and the port answering HELLO afterwards is the simulated rig
running the same MicroPython firmware."""

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

from thermrig.flash import pico
from thermrig.plant.firmware.micropython import micropython_binary
from thermrig.plant.simulated_rig import SimConfig, SimulatedRig


@pytest.fixture
def unix_board(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(port, filesystem): the unix port's REPL on a pty, running in an empty folder."""
    if shutil.which("socat") is None:
        pytest.skip("socat is not installed (scripts/setup_system.sh installs it)")
    fs = tmp_path / "board"
    fs.mkdir()
    port = tmp_path / "ttyACM0"
    repl = f"EXEC:{micropython_binary()},pty,raw,echo=0,stderr"
    with subprocess.Popen(
        ["socat", f"PTY,link={port},raw,echo=0", repl],
        cwd=fs,
        env={**os.environ, "MICROPYPATH": ".frozen"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as proc:
        deadline = time.monotonic() + 10
        while not port.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert port.exists(), "socat did not create the pty"
        yield str(port), fs
        proc.terminate()


def test_mpremote_copies_the_board_files_and_they_run_there(tmp_path: Path, unix_board: tuple[str, Path]) -> None:
    port, fs = unix_board
    flasher = pico.PicoFlasher(port, pico.firmware_dir(), pico.mpremote_binary())
    staged = flasher.stage(tmp_path / "staged")
    subprocess.run(flasher.copy_command(), cwd=staged, check=True, capture_output=True, timeout=120)
    assert sorted(p.name for p in fs.iterdir()) == sorted(pico.BOARD_FILES)
    assert not (fs / "thermrig_fw" / "hal_sim.py").exists()  # the simulation's HAL stays behind
    cmp = filecmp.dircmp(staged, fs)
    assert not cmp.diff_files and not cmp.subdirs["thermrig_fw"].diff_files
    # The copied firmware imports on the "board" (its boot check passes), seen through mpremote.
    check = [pico.mpremote_binary(), "connect", port, "resume", "exec", "import bootcheck; print(bootcheck.check())"]
    out = subprocess.run(check, capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip().splitlines()[-1] == "None"


def fake_mpremote(bin_dir: Path, log: Path, fail: str = "") -> None:
    """An mpremote that records its arguments; `fail` makes the command containing it fail."""
    bin_dir.mkdir()
    script = bin_dir / "mpremote"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$PWD|$*" >> {log}\n'
        f'case "$*" in *"{fail or "<never>"}"*) echo "mpremote: failed to access port" >&2; exit 1;; esac\n'
    )
    script.chmod(0o755)


def test_flash_copies_resets_and_checks_hello(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "calls.log"
    fake_mpremote(tmp_path / "bin", log)
    monkeypatch.setenv("THERMRIG_MPREMOTE", str(tmp_path / "bin" / "mpremote"))
    with SimulatedRig(SimConfig(firmware="micropython")) as sim:
        lines: list[str] = []
        version = pico.flash_pico(sim.port, echo=lines.append)
    assert version == pico.firmware_version()
    calls = [line.split("|") for line in log.read_text().splitlines()]
    assert [args.split(" resume ")[1] for _, args in calls] == ["fs cp -r thermrig_fw main.py bootcheck.py :.", "reset"]
    assert calls[0][1].startswith(f"connect {sim.port} ")
    assert lines[-1] == f"{sim.port}: thermrig-micropython {version}"


def test_dry_run_runs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "calls.log"
    fake_mpremote(tmp_path / "bin", log)
    monkeypatch.setenv("THERMRIG_MPREMOTE", str(tmp_path / "bin" / "mpremote"))
    lines: list[str] = []
    pico.flash_pico("/dev/ttyACM7", dry_run=True, echo=lines.append)
    assert not log.exists()
    assert "connect /dev/ttyACM7 resume fs cp -r" in lines[0] and lines[1].endswith("connect /dev/ttyACM7 resume reset")


def test_mpremote_failure_and_silent_board_are_one_line_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "calls.log"
    fake_mpremote(tmp_path / "bin", log, fail="fs cp")
    monkeypatch.setenv("THERMRIG_MPREMOTE", str(tmp_path / "bin" / "mpremote"))
    with pytest.raises(pico.FlashError, match=r"mpremote failed \(.*fs cp.*\): mpremote: failed to access port"):
        pico.flash_pico("/dev/ttyACM7", echo=lambda _: None)
    fake_mpremote(tmp_path / "bin2", tmp_path / "calls2.log")
    monkeypatch.setenv("THERMRIG_MPREMOTE", str(tmp_path / "bin2" / "mpremote"))
    with pytest.raises(pico.FlashError, match=r"did not answer HELLO on .* within 1 s"):
        pico.flash_pico(str(tmp_path / "no-such-port"), echo=lambda _: None, port_timeout=1.0)
