"""A bridged firmware (QEMU running the Zephyr image, the board build on native_sim) never outlives its
simulation, however the simulation's process dies: QEMU does not exit when its serial socket closes, so
the kernel's parent-death signal stops it (`die_with_parent` in thermrig.sim.firmware.bridged); the board
build also stops when its sockets close."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from waiting import wait_for

SIMULATION = """
import sys
import time
from thermrig.dut.pacing import Pacing
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
sim = SimulatedRig(SimConfig(pacing=Pacing.stepped(), firmware=sys.argv[1])).start()
print(sim.firmware.proc.pid, flush=True)
time.sleep(600)
"""


def running(pid: int) -> bool:
    """Whether the process runs (a zombie, killed and waiting for its reaper, does not)."""
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("firmware", ["zephyr", "zephyr-board"])
def test_the_firmware_dies_with_a_simulation_killed_with_sigkill(firmware: str) -> None:
    cmd = [sys.executable, "-c", SIMULATION, firmware]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as simulation:
        assert simulation.stdout is not None
        pid = int(simulation.stdout.readline())
        assert running(pid)
        simulation.kill()  # no cleanup of its own runs
    assert wait_for(lambda: not running(pid), timeout=30), f"{firmware} (pid {pid}) outlived its simulation"
