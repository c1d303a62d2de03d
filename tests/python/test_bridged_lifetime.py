"""A bridged firmware (QEMU running the Zephyr image) never outlives its simulation, however the
simulation's process dies: QEMU does not exit when its serial socket closes, so the kernel's
parent-death signal stops it (`die_with_parent` in thermrig.sim.firmware.bridged)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from waiting import wait_for

SIMULATION = """
import time
from thermrig.dut.pacing import Pacing
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
sim = SimulatedRig(SimConfig(pacing=Pacing.stepped(), firmware="zephyr")).start()
print(sim.firmware.proc.pid, flush=True)
time.sleep(600)
"""


def running(pid: int) -> bool:
    """Whether the process runs (a zombie, killed and waiting for its reaper, does not)."""
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


def test_qemu_dies_with_a_simulation_killed_with_sigkill() -> None:
    with subprocess.Popen([sys.executable, "-c", SIMULATION], stdout=subprocess.PIPE, text=True) as simulation:
        assert simulation.stdout is not None
        qemu = int(simulation.stdout.readline())
        assert running(qemu)
        simulation.kill()  # no cleanup of its own runs
    assert wait_for(lambda: not running(qemu), timeout=30), f"QEMU (pid {qemu}) outlived its simulation"
