"""The thermrig command line, run as a user runs it (subprocesses against the simulated rig)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from sim_helpers import served_port
from typer.core import TyperGroup
from typer.testing import CliRunner

from thermrig.cli.main import app
from thermrig.dut.pacing import Pacing
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

THERMRIG = [sys.executable, "-m", "thermrig.cli"]


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*THERMRIG, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**(env or os.environ), "COLUMNS": "120"},
    )


def test_help_explains_every_command() -> None:
    out = cli("--help").stdout
    for cmd in ("rig", "sim", "demo"):
        assert cmd in out
    rig_help = cli("rig", "--help").stdout
    for cmd in ("info", "set", "clear", "safe", "watch"):
        assert cmd in rig_help
    assert "pyserial URL" in cli("rig", "info", "--help").stdout


def leaf_commands(group: TyperGroup, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for name, cmd in group.commands.items():
        if isinstance(cmd, TyperGroup):
            yield from leaf_commands(cmd, (*path, name))
        else:
            yield (*path, name), cmd


def flat(text: str) -> str:
    """Help text without box drawing and line wrapping (a line may end after a word's own hyphen)."""
    return " ".join(re.sub(r"-\n\s*", "-", re.sub(r"[│╭╮╰╯─]", " ", text)).split())


def test_each_commands_help_prints_its_own_description_and_options() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    commands = dict(leaf_commands(root))
    described = {path: flat((cmd.help or "").split("\n\n")[0]) for path, cmd in commands.items()}
    assert len(commands) >= 15 and all(described.values())
    assert len(set(described.values())) == len(described)  # each description is a command's own
    runner = CliRunner()
    for path, cmd in commands.items():
        result = runner.invoke(app, [*path, "--help"], terminal_width=250)
        out = flat(result.output)
        assert result.exit_code == 0 and described[path] in out, (path, out)
        others = [d for p, d in described.items() if p != path and d not in described[path]]
        assert not [d for d in others if d in out], path  # this command's help, not a listing
        for param in cmd.params:
            assert all(opt in out for opt in param.opts if opt.startswith("--")), (path, param.opts)


def test_rig_info_shows_firmware_and_channels(sim: SimulatedRig) -> None:
    r = cli("rig", "info", "--port", sim.port)
    assert r.returncode == 0, r.stderr
    assert "thermrig-core 0.1.0" in r.stdout and "tc3=chassis_air" in r.stdout


def test_rig_heap_on_a_c_firmware_says_it_has_none(sim: SimulatedRig) -> None:
    r = cli("rig", "heap", "--port", sim.port)
    assert r.returncode == 1
    assert "thermrig-core does not report a heap (MEM)" in r.stderr and "Traceback" not in r.stderr


def test_rig_heap_shows_the_micropython_firmwares_heap_and_collections() -> None:
    with SimulatedRig(SimConfig(pacing=Pacing.stepped(), seed=1, firmware="micropython")) as mp:
        mp.advance(11.0)  # past the firmware's first collection, at its 100th tick
        r = cli("rig", "heap", "--port", mp.port)
    assert r.returncode == 0, r.stderr
    heap = re.search(r"heap: ([\d,]+) B free of ([\d,]+) B now, ([\d,]+) B after the last collection", r.stdout)
    assert heap, r.stdout
    free, total, after_gc = (int(g.replace(",", "")) for g in heap.groups())
    assert 0 < free <= total and 0 < after_gc < total
    assert re.search(r"garbage collections: 1, the last \d+\.\d ms", r.stdout), r.stdout


def test_rig_set_converts_units_and_reports_refusals(sim: SimulatedRig) -> None:
    r = cli("rig", "set", "--port", sim.port, "--fan0", "55", "--air", "41.5")
    assert r.returncode == 0, r.stderr
    assert "fan0=550" in r.stdout and "air=4150" in r.stdout
    sim.advance(0.2)
    assert sim.plant.fan_duty[0] == pytest.approx(0.55)
    r = cli("rig", "set", "--port", sim.port, "--air", "80")
    assert r.returncode == 1
    assert "rig refused SET air=8000: RANGE (air)" in r.stderr and "Traceback" not in r.stderr
    r = cli("rig", "set", "--port", sim.port)
    assert r.returncode == 2 and "nothing to set" in r.stderr


def test_without_a_port_the_error_says_where_one_comes_from(isolated_env: dict[str, str]) -> None:
    r = cli("rig", "info", env=isolated_env)
    assert r.returncode == 1
    assert "no rig port: pass --port" in r.stderr and "THERMRIG_PORT" in r.stderr


def test_port_from_config_file(isolated_env: dict[str, str], sim: SimulatedRig, tmp_path: Path) -> None:
    cfg = Path(isolated_env["XDG_CONFIG_HOME"]) / "thermrig" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(f'[rig]\nport = "{sim.port}"\n')
    r = cli("rig", "info", env=isolated_env)
    assert r.returncode == 0, r.stderr
    cfg.write_text("[rig]\nport = 3\n")
    r = cli("rig", "info", env=isolated_env)
    assert r.returncode == 1 and "[rig] port: 3 is a int; expected a string" in r.stderr


def test_sim_serves_a_port_that_other_commands_find(isolated_env: dict[str, str]) -> None:
    proc = subprocess.Popen(
        [*THERMRIG, "sim", "--speed", "5", "--slot", "underside"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**isolated_env, "COLUMNS": "200"},
    )
    try:
        served_port(proc)
        r = cli("rig", "watch", "--seconds", "1.5", env=isolated_env)  # port found through the running sim
        assert r.returncode == 0, r.stderr
        assert "chassis_air" in r.stdout and "faults" in r.stdout
        r = cli("rig", "safe", env=isolated_env)
        assert r.returncode == 0 and "heater off, fans full" in r.stdout
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    assert proc.returncode == 0
    assert not (Path(isolated_env["XDG_RUNTIME_DIR"]) / "thermrig" / "sim.json").exists()


def test_plan_folds_instead_of_cutting_names_at_80_columns() -> None:
    repo = Path(__file__).resolve().parents[2]
    r = subprocess.run(
        [*THERMRIG, "plan", str(repo / "examples" / "puget-slots-gpu-heat.toml"), "--no-model"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout and all(len(line) <= 80 for line in r.stdout.splitlines())
    flat = " ".join(r.stdout.split())  # a record may wrap between a name and its value
    assert "1 of 64: puget-slots-gpu-heat-" in flat and "64 of 64:" in flat and "profile single_gpu_load" in flat
    assert "heatsink none" in flat and "slot underside" in flat and "estimated" in flat
    wide = subprocess.run(
        [*THERMRIG, "plan", str(repo / "examples" / "puget-slots-gpu-heat.toml"), "--no-model"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "130"},
    )
    assert wide.returncode == 0 and "┃ profile" in wide.stdout and "…" not in wide.stdout


def test_sim_rejects_an_unknown_slot() -> None:
    r = cli("sim", "--slot", "attic")
    assert r.returncode == 1 and "unknown slot 'attic'" in r.stderr


def test_the_air_step_settles_records_and_leaves_the_rig_safe(isolated_env: dict[str, str]) -> None:
    try:
        r = cli("sim", "step", "--speed", "40", "--hold", "60", env=isolated_env, timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "settle time" in r.stdout and "rig left safe: heater 0 %, fans 100 %, 100 %, faults none" in r.stdout
        assert "read back from InfluxDB" in r.stdout and "all points stored" in r.stdout
        q = cli("query", "SELECT count(chassis_air_c) FROM rig_telemetry", "--format", "csv", env=isolated_env)
        assert q.returncode == 0, q.stderr
        stored = int(q.stdout.splitlines()[1].split(",")[-1])
        assert stored > 1000  # 10 Hz of rig time from room temperature to the end of the hold
    finally:
        cli("db", "down", env=isolated_env)  # the step leaves its InfluxDB up for the user; a test must not
