"""Whether a rig gets the air-loop gains `thermrig rig tune` stored for it is decided by whoever opens it
(open_testbed's stored_gains), not by the link: every command a user runs on a rig asks for them, the
tests and the conformance suite do not, and RigLink opens no user file."""

from __future__ import annotations

import ast
from pathlib import Path

from typer.testing import CliRunner

from thermrig.cli.main import app
from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.link.stored_gains import Gains, rig_key, save_gains
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

HOST = Path(__file__).resolve().parents[2] / "host" / "thermrig"
# What opens a rig: the testbed itself, and the procedures and requests that open one for the caller.
OPENERS = {"open_testbed", "run_campaign", "LabRequest"}


def calls(path: Path, names: set[str]) -> list[ast.Call]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name in names:
                found.append(node)
    return found


def asks_for_stored_gains(call: ast.Call) -> bool:
    return any(
        k.arg == "stored_gains" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords
    )


def test_every_command_that_opens_a_rig_for_a_user_sends_its_stored_gains() -> None:
    opened = {
        f"{path.name}:{call.lineno}": asks_for_stored_gains(call)
        for path in sorted((HOST / "cli").glob("*.py"))
        for call in calls(path, OPENERS)
    }
    # run, lab run, rig bringup (x2), identify, record, rig info/set/clear/... and safe, selftest, step, tune (x2)
    assert len(opened) >= 12, opened
    assert [where for where, asks in opened.items() if not asks] == []


def test_only_the_testbed_reads_stored_gains_and_the_link_opens_no_user_file() -> None:
    readers = sorted(
        str(path.relative_to(HOST)) for path in HOST.rglob("*.py") if calls(path, {"load_gains", "gains_path"})
    )
    assert readers == ["link/stored_gains.py", "testbed/session.py"]
    link = ast.parse((HOST / "link" / "rig_link.py").read_text())
    names = {n.id for n in ast.walk(link) if isinstance(n, ast.Name)} | {
        a.name for n in ast.walk(link) if isinstance(n, ast.ImportFrom) for a in n.names
    }
    assert not names & {"load_gains", "gains_path", "data_dir", "config_dir", "open", "Path"}, names


def test_a_user_command_sends_the_stored_gains_and_a_test_link_does_not() -> None:
    """`thermrig rig info` and `rig set` on a rig with gains stored for it send them (and say so); a link a
    test opens itself, on the same rig with the same gains stored, sends none."""
    with SimulatedRig(SimConfig(pacing=Pacing.accelerated(20))) as sim:
        with RigLink(sim.port) as link:
            info = link.hello()
            path = save_gains(rig_key(info, link.usb_serial), Gains(321.0, 4.5, 67.0), "planted")
            assert link.gains is None and "gains" not in [e.kind for e in link.events]
        for command in (["rig", "info"], ["rig", "set", "--fan0", "50"]):
            out = CliRunner().invoke(app, [*command, "--port", sim.port])
            assert out.exit_code == 0, out.output
            said = " ".join(out.output.split())
            assert f"sent the stored air-loop gains kp 321.0, ki 4.50, kd 67.0 ({path})" in said, said
