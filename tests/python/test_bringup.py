"""`thermrig rig bringup` on the simulated rig: the plant plays the operator's touches; a rig wired as the
table says passes every phase, one with two thermocouples' chip selects swapped fails the touches and
names the pair."""

from __future__ import annotations

import subprocess
import sys

from waiting import advance_and_read

from thermrig.bringup.phases import Frames, Step, bringup, fans, passed
from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.sim.bringup_operator import SimulatedOperator
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig


def run_bringup(swapped: tuple[int, int] | None = None) -> tuple[list[Step], SimulatedOperator]:
    with (
        SimulatedRig(SimConfig(pacing=Pacing.stepped(), seed=2, swapped_tcs=swapped)) as sim,
        RigLink(sim.port) as link,
    ):
        link.hello()
        operator = SimulatedOperator(sim.sensors)
        steps = sim.run_alongside(link, lambda: bringup(link, operator))
        last = advance_and_read(sim, link)
        assert not last.heat_enabled  # heater off at the end
        assert last.fan_pct == {"fan0": 100.0, "fan1": 100.0}
    return steps, operator


def test_a_rig_wired_as_the_table_says_passes_every_phase() -> None:
    steps, operator = run_bringup()
    by_name = {s.name: s for s in steps}
    assert passed(steps), [(s.name, s.measured, s.fix) for s in steps if not s.passed]
    assert list(by_name) == [
        "heater off",
        "room temperature",
        "ambient sensor",
        "touch drive_ctrl",
        "touch drive_nand",
        "touch heatsink",
        "touch chassis_air",
        "fan0",
        "fan1",
        "heater pulse",
    ]
    assert by_name["heater off"].measured.startswith("heater at 0 %: chassis air")
    assert "drive_ctrl (tc0) rose +" in by_name["touch drive_ctrl"].measured
    assert by_name["heater pulse"].measured.startswith("first to rise: chassis_air")
    assert "touch chassis_air (tc3)" in operator.asked


def test_a_host_that_reads_its_frames_late_measures_each_fan_after_its_new_duty() -> None:
    """A busy machine's bring-up reads frames the rig sent seconds ago: the fan steps still measure from
    the frame that shows the duty they set, not from the backlog (which would show the old duty's speed
    in both halves of the step and fail a fan that is wired right)."""
    with SimulatedRig(SimConfig(pacing=Pacing.stepped(), seed=2)) as sim, RigLink(sim.port) as link:
        link.hello()
        link.set(fan0=1000, fan1=1000)
        frames = sim.run_alongside(link, lambda: Frames(link))
        for _ in range(8):  # eight seconds of frames queued, none read by the procedure yet
            link.ping()
            advance_and_read(sim, link)
        assert frames.q.qsize() >= 70
        steps = sim.run_alongside(link, lambda: fans(frames, link))
        frames.close()
    assert [s.passed for s in steps] == [True, True], [(s.name, s.measured) for s in steps]


def test_swapped_chip_selects_fail_the_touches_and_name_the_pair() -> None:
    steps, _ = run_bringup(swapped=(0, 1))
    by_name = {s.name: s for s in steps}
    for touched, shown in (("drive_ctrl", "drive_nand (tc1)"), ("drive_nand", "drive_ctrl (tc0)")):
        step = by_name[f"touch {touched}"]
        assert step.passed is False
        assert step.measured == f"the {touched} bead raised {shown}"
        assert "chip selects of" in step.fix and "tc0" in step.fix and "tc1" in step.fix
    assert by_name["touch heatsink"].passed and by_name["touch chassis_air"].passed
    assert not passed(steps)


def test_the_command_prints_a_line_per_step_and_exits_1_on_a_miswired_rig(isolated_env: dict[str, str]) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "thermrig.cli", "rig", "bringup", "--sim", "--swap", "2,3"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**isolated_env, "COLUMNS": "200"},
    )
    assert res.returncode == 1, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert any(line.startswith("FAIL  touch heatsink") and "chassis_air (tc3)" in line for line in lines), res.stdout
    assert any("chip selects of tc2 and tc3 are swapped" in line for line in lines)
    assert lines[-1] == "7 of 10 steps passed; failed: touch heatsink, touch chassis_air, heater pulse"
    assert any(line.startswith("FAIL  heater pulse") and "first to rise: heatsink" in line for line in lines)
    bad = subprocess.run(
        [sys.executable, "-m", "thermrig.cli", "rig", "bringup", "--swap", "0,1"],
        capture_output=True,
        text=True,
        timeout=60,
        env=isolated_env,
    )
    assert bad.returncode == 2 and "goes with --sim" in bad.stderr
