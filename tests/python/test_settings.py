"""thermrig.settings: each outside read in one place: a tool's variable first, the running simulation's
state only while its process lives, the config file's tables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from thermrig.settings import TOOLS, RunningSim, config_table, find_tool, running_sim


def test_the_tools_are_found_in_one_table_and_their_variable_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert {"influxd", "qemu-system-arm", "micropython", "mpremote", "rigsim"} <= set(TOOLS)
    fake = tmp_path / "my-rigsim"
    monkeypatch.setenv("THERMRIG_RIGSIM", str(fake))
    assert find_tool("rigsim") == fake
    monkeypatch.delenv("THERMRIG_RIGSIM")
    assert find_tool("rigsim").name == "rigsim"  # the repository's build
    assert find_tool("fio").exists()  # on PATH (make setup)


def test_a_running_sim_is_one_whose_process_lives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert running_sim() is None  # no state file
    RunningSim("/dev/pts/99", os.getpid(), tmp_path / "c.sock", "zephyr").write()
    assert running_sim() == RunningSim("/dev/pts/99", os.getpid(), tmp_path / "c.sock", "zephyr")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    RunningSim("/dev/pts/99", int(gone.stdout), tmp_path / "c.sock", "rigsim").write()
    assert running_sim() is None  # its process has exited
    RunningSim.remove()
    assert not RunningSim.state_file().exists()


def test_the_config_file_is_read_by_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "config.toml"
    monkeypatch.setenv("THERMRIG_CONFIG", str(path))
    assert config_table("rig", "a [rig] table") == ({}, None)
    path.write_text('[rig]\nport = "/dev/ttyACM0"\n[influx]\nurl = "http://db:8086"\n')
    assert config_table("rig", "a [rig] table")[0] == {"port": "/dev/ttyACM0"}
    assert config_table("influx", "an [influx] table")[0] == {"url": "http://db:8086"}
