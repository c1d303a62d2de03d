"""The simulated world at its priority (thermrig.priority): where the host allows a raise (root, as CI
runs), nbdkit and fio on the virtual drive run at WORLD_NICE, and the plant's thread with what it paces
(the firmware, a serial bridge's relay) while it keeps real time; where the host allows none, everything
runs as it was started. Read from the kernel's own account (/proc/PID/task/TID/stat), not from what
thermrig meant."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from thermrig.children import wait_for
from thermrig.drive.under_test import NbdExport
from thermrig.dut.pacing import Pacing
from thermrig.fio.runner import run_fio
from thermrig.fio.workloads import Workload, job_file
from thermrig.link.rig_link import RigLink
from thermrig.priority import WORLD_NICE, PriorityError, describe, in_world, thread_nice, world_nice
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig


def _nice(pid: int, tid: int | None = None) -> int:
    """A task's niceness: field 19 of its stat, counted after the command's closing parenthesis."""
    stat = Path(f"/proc/{pid}/task/{tid or pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[16])


def _tasks_nice(pid: int) -> set[int]:
    return {_nice(pid, int(tid)) for tid in os.listdir(f"/proc/{pid}/task")}


def _thread(name: str) -> int:
    ids = [t.native_id for t in threading.enumerate() if t.name == name and t.native_id is not None]
    assert len(ids) == 1, f"threads named {name}: {ids}"
    return ids[0]


def _children(comm: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            if name == comm and int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
                found.append(int(entry))
    return found


allowed = pytest.mark.skipif(
    world_nice() != WORLD_NICE or thread_nice() != 0,
    reason="this host allows no raise to WORLD_NICE from nice 0 (run as root, as CI does)",
)


@allowed
def test_the_world_runs_raised_and_the_plant_only_while_it_keeps_real_time(tmp_path: Path) -> None:
    config = SimConfig(pacing=Pacing.accelerated(1.0), drive="950pro_512", drive_scale=0.02)
    with SimulatedRig(config) as sim, RigLink(sim.port) as link:
        link.hello()
        assert sim.drive is not None and sim.drive.proc is not None and sim.server is not None
        assert sim.firmware is not None
        assert _tasks_nice(sim.drive.proc.pid) == {WORLD_NICE}  # nbdkit and every thread it started
        plant, rigsim = _thread("plant"), sim.firmware.proc.pid
        assert _nice(os.getpid(), plant) == WORLD_NICE
        assert _tasks_nice(rigsim) == {WORLD_NICE}
        assert thread_nice() == 0  # the host's side (this test, the link) as it was
        assert f"niceness {WORLD_NICE}" in describe()
        # fio on the virtual drive: read while it runs, from its first per-second report
        seen: list[set[int]] = []

        def on_live(_sample: object) -> None:
            if not seen:
                seen.extend(_tasks_nice(pid) for pid in _children("fio"))

        reads = Workload("r", "rand_read", runtime_s=2, iodepth=4, span="64m").resolved()
        job = job_file(reads, NbdExport(sim.drive.uri), str(tmp_path / "fio"))
        run_fio(job, tmp_path, on_live=on_live)
        assert seen and all(nices == {WORLD_NICE} for nices in seen), seen
        # faster than real time the plant keeps no one's clock: it and the firmware it paces go back to the
        # host's priority (a firmware flat out at -10 starved the host's side), and are raised again at 1x;
        # nbdkit stays raised
        sim.server.set_speed(10)
        assert wait_for(lambda: _nice(os.getpid(), plant) == 0 and _tasks_nice(rigsim) == {0}, 10)
        sim.server.set_speed(1)
        assert wait_for(lambda: _nice(os.getpid(), plant) == WORLD_NICE and _tasks_nice(rigsim) == {WORLD_NICE}, 10)
        assert _tasks_nice(sim.drive.proc.pid) == {WORLD_NICE}


@allowed
def test_a_bridged_firmware_and_its_serial_bridge_follow_the_plant() -> None:
    config = SimConfig(pacing=Pacing.accelerated(1.0), firmware="micropython")
    with SimulatedRig(config) as sim, RigLink(sim.port) as link:
        link.hello()
        assert sim.firmware is not None and sim.server is not None
        firmware, relay = sim.firmware.proc.pid, _thread("serial-bridge")
        assert _tasks_nice(firmware) == {WORLD_NICE} and _nice(os.getpid(), relay) == WORLD_NICE
        sim.server.set_speed(0)  # as fast as possible: the host's priority
        assert wait_for(lambda: _tasks_nice(firmware) == {0} and _nice(os.getpid(), relay) == 0, 10)


@allowed
def test_a_stepped_world_runs_at_the_hosts_priority() -> None:
    with SimulatedRig(SimConfig(pacing=Pacing.stepped())) as sim:
        sim.advance(1.0)
        assert sim.firmware is not None
        assert _nice(os.getpid(), _thread("plant")) == 0 and _tasks_nice(sim.firmware.proc.pid) == {0}


CHILD = textwrap.dedent(
    """
    import os, sys
    from thermrig.priority import describe, in_world, world_nice
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -1)
        raised = True
    except PermissionError:
        raised = False
    print(raised, world_nice(), " ".join(in_world(["true"])))
    print(describe())
    """
)


def _unprivileged() -> list[str]:
    """A Python started without CAP_SYS_NICE (dropped by setpriv where this test runs as root)."""
    drop = ["setpriv", "--inh-caps=-sys_nice", "--bounding-set=-sys_nice"] if os.geteuid() == 0 else []
    return [*drop, sys.executable, "-c", CHILD]


def test_where_the_host_allows_no_raise_the_world_runs_as_started() -> None:
    # An RLIMIT_NICE of 0 and no CAP_SYS_NICE: no raise at all. (A raising RLIMIT_NICE, as pam_limits
    # gives, is read by the same code; this machine's hard limit is 0 and a test may not lift it.)
    out = subprocess.run(["prlimit", "--nice=0", *_unprivileged()], capture_output=True, text=True, check=True)
    first, said = out.stdout.splitlines()
    assert first.split() == ["False", "0", "true"]  # the kernel refused a raise; nothing asked of nice
    assert "the host allows no raise" in said


def test_the_world_nice_can_be_set_or_left(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THERMRIG_WORLD_NICE", "19")  # no lower than this thread's own: left as started
    assert world_nice() == thread_nice()
    assert in_world(["fio"]) == ["fio"]
    assert "as THERMRIG_WORLD_NICE asks" in describe()
    for bad in ("fast", "-21", "20"):
        monkeypatch.setenv("THERMRIG_WORLD_NICE", bad)
        with pytest.raises(PriorityError, match="THERMRIG_WORLD_NICE"):
            world_nice()


def test_thermrig_sim_refuses_a_world_nice_that_is_not_one(isolated_env: dict[str, str]) -> None:
    env = {**isolated_env, "THERMRIG_WORLD_NICE": "fast"}
    r = subprocess.run(
        [sys.executable, "-m", "thermrig.cli", "sim"], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        "error: THERMRIG_WORLD_NICE='fast' is not a niceness (an integer, -20 to 19)"
    ]
