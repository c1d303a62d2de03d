"""thermrig.testbed: one session with a rig, left safe on every way out. A child process opens a testbed
on a simulated rig the test runs, sets it heating, and then ends normally, raises, or is sent SIGINT or
SIGTERM (with that signal's default disposition set explicitly); the rig must then be in its safe state
with no fault latched: SAFE was sent, not the firmware's host-lost fallback. And the health check: a
rig with latched faults is refused when asked."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
from interruptible import with_default_sigint
from waiting import wait_for

from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.protocol.messages import Fault
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.testbed import LocalRig, SimulatedRigSpec, TestbedError, open_testbed

CHILD = """
import sys, time
from thermrig.testbed import LocalRig, open_testbed

port, ending = sys.argv[1], sys.argv[2]
with open_testbed(LocalRig(port)) as bed:
    bed.link.set(air=6000, hlim=1000, heat=1, fan0=300, fan1=300)
    while bed.link.next_telemetry(5.0).heater_pct <= 0:
        pass
    print("heating", flush=True)
    if ending == "raise":
        raise RuntimeError("a procedure failed")
    if ending == "wait":
        sys.stdin.read()  # until signalled
"""


@pytest.fixture
def rig() -> Iterator[SimulatedRig]:
    with SimulatedRig(SimConfig(pacing=Pacing.realtime())) as sim:
        yield sim


def child(port: str, ending: str) -> subprocess.Popen[str]:
    cmd = ["env", "--default-signal=TERM", *with_default_sigint([sys.executable, "-c", CHILD, port, ending])]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("ending", ["exit", "raise", "SIGINT", "SIGTERM"])
def test_the_rig_is_left_safe_on_every_way_out(rig: SimulatedRig, ending: str) -> None:
    proc = child(rig.port, "wait" if ending.startswith("SIG") else ending)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "heating\n", line + (proc.stderr.read() if proc.stderr else "")
        if ending.startswith("SIG"):
            proc.send_signal(getattr(signal, ending))
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read() if proc.stderr else ""
    assert (proc.returncode == 0) == (ending == "exit"), stderr
    if ending == "raise":
        assert "a procedure failed" in stderr
    with RigLink(rig.port) as link:
        link.hello()
        tel = link.next_telemetry(5.0)
    assert tel.heater_pct == 0 and all(v == 100 for v in tel.fan_pct.values()), tel
    assert not tel.faults, tel.faults  # SAFE, not the firmware's host-lost fallback
    heater, fans = rig.actuators()
    assert heater == 0 and all(f == 1.0 for f in fans)


def test_a_rig_with_latched_faults_is_refused_when_its_health_is_asked(rig: SimulatedRig) -> None:
    with RigLink(rig.port) as link:  # left heating by a host that goes away: it latches HOST_LOST
        link.hello()
        link.set(air=6000, hlim=500, heat=1)
        assert wait_for(lambda: rig.actuators()[0] > 0.0, 30)
    assert wait_for(lambda: rig.actuators()[0] == 0.0, 60)  # the rig went safe by itself
    refused = pytest.raises(TestbedError, match=r"has latched faults .*HOST_LOST.*`thermrig rig clear --port ")
    with refused, open_testbed(LocalRig(rig.port), require_clear=True):
        pass
    with open_testbed(LocalRig(rig.port)) as bed:  # not asked: opened
        assert bed.link.next_telemetry(5.0).faults & Fault.HOST_LOST


def test_a_stepped_simulated_testbed_runs_work_alongside_virtual_time() -> None:
    with open_testbed(SimulatedRigSpec(Pacing.stepped(), chassis_scales={"heater": 0.5})) as bed:
        assert bed.stepped and bed.sim is not None and bed.drive is None
        assert bed.sim.plant.chassis.heater_max_w > 0
        bed.run(lambda: bed.link.set(air=6000, hlim=1000, heat=1, fan0=300, fan1=300))
        before = bed.sim.virtual_time
        assert bed.run(lambda: wait_for(lambda: bed.sim.virtual_time > before + 3, 30))  # time went on
        assert bed.sim.actuators()[0] > 0
    heater, _ = bed.sim.actuators()
    assert heater == 0  # SAFE, sent alongside virtual time


def test_a_testbed_names_its_simulator_once_and_typed() -> None:
    """One field for the simulated rig, typed as what procedures may do to it: no untyped way past it."""
    import dataclasses

    from thermrig.dut.simulation import SimulationControl
    from thermrig.testbed.kinds import RigEnd
    from thermrig.testbed.session import Testbed

    for cls in (Testbed, RigEnd):
        fields = {f.name: f.type for f in dataclasses.fields(cls)}
        assert "simulated" not in fields
        assert fields["sim"] == "SimulationControl | None"
        assert "Any" not in " ".join(str(t) for t in fields.values())
    assert SimulationControl.run_alongside and SimulationControl.chassis_air_c
