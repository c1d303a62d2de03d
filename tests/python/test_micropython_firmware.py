"""The MicroPython firmware on the real unix-port binary, beyond what the conformance suite checks:
its telemetry equals the C core's frame for frame on the same plant, a board that cannot run it (wrong
MicroPython, a missing module) answers clearly with the heater off, the control tick allocates nothing,
and it runs in real time under `thermrig sim --firmware micropython`."""

from __future__ import annotations

import dataclasses
import itertools
import shutil
import socket
import subprocess
from pathlib import Path

from thermrig.dut.pacing import Pacing
from thermrig.firmware_identity import checkout_version
from thermrig.link.boot_failure import boot_failure_words
from thermrig.link.rig_link import RigLink
from thermrig.protocol.frame import decode, encode
from thermrig.sim.firmware.micropython import firmware_dir, micropython_binary
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig


def run_micropython(code: str) -> str:
    proc = subprocess.run(
        [str(micropython_binary()), "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"MICROPYPATH": f"{firmware_dir()}:.frozen"},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def heating_run(firmware: str) -> dict[int, dict[str, object]]:
    """20 s of heating, fan0 at a duty, fan1 at a speed (its RPM loop), on a seeded stepped plant: telemetry
    by uptime."""
    with SimulatedRig(SimConfig(pacing=Pacing.stepped(), seed=5, firmware=firmware)) as sim, RigLink(sim.port) as link:
        link.hello()
        link.set(fan0=400, rpm1=900, air=2300, heat=1)
        frames = []
        for _ in range(20):
            link.ping()
            sim.advance(1.0)
            frames += link.drain_telemetry()
    # Everything but the frame's sequence number, which counts the firmware's own replies too.
    return {t.uptime_ms: {k: v for k, v in dataclasses.asdict(t).items() if k != "seq"} for t in frames}


def test_telemetry_equals_the_c_core_frame_for_frame() -> None:
    """Same plant, same seed, same commands: every reading, status, duty (the PID's included), target and
    fault field matches rigsim's, although the PID here runs in fixed point and rigsim's in float."""
    c_core, micropython = heating_run("rigsim"), heating_run("micropython")
    common = sorted(set(c_core) & set(micropython))
    assert len(common) >= 180
    assert len({c_core[up]["heater_pct"] for up in common}) > 20  # the PID was in charge, not saturated
    assert [c_core[up] for up in common] == [micropython[up] for up in common]


def test_boot_check_names_a_micropython_too_old_and_accepts_this_one() -> None:
    out = run_micropython("import bootcheck; print(bootcheck.check((1, 19, 1))); print(bootcheck.check())")
    assert out.splitlines() == ["micropython=1.19.1<1.21.0", "None"]
    words = boot_failure_words(out.splitlines()[0])
    assert words == "its MicroPython is too old (1.19.1<1.21.0): flash a newer MicroPython"


def test_missing_driver_module_answers_nak_boot_with_the_heater_off(tmp_path: Path) -> None:
    board = tmp_path / "board"
    shutil.copytree(firmware_dir(), board)
    (board / "thermrig_fw" / "max31855.py").unlink()
    plant = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    plant.bind(str(tmp_path / "plant.sock"))
    plant.listen(1)
    plant.settimeout(30)
    cmd = [str(micropython_binary()), str(board / "sim_main.py"), "--plant", str(tmp_path / "plant.sock")]
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with subprocess.Popen(cmd, **pipes, env={"MICROPYPATH": f"{board}:.frozen"}) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        conn, _ = plant.accept()
        with conn, conn.makefile("rb") as wires:
            assert wires.readline() == b"A 0 1000 1000\n"  # heater off, fans full
        boot = decode(proc.stdout.readline()[:-1])
        assert (boot.type, boot.args) == ("EVT", ("BOOTFAIL", "why=missing=thermrig_fw.max31855"))
        proc.stdin.write(encode(7, "HELLO", ["proto=1"]))
        proc.stdin.flush()
        nak = decode(proc.stdout.readline()[:-1])
        assert (nak.type, nak.args) == ("NAK", ("7", "BOOT", "missing=thermrig_fw.max31855"))
        words = boot_failure_words(nak.args[2])
        assert words == "the module thermrig_fw.max31855 is missing on the board: copy the whole firmware folder again"
        proc.kill()
    plant.close()


def test_control_tick_allocates_nothing() -> None:
    """Every tick decodes four thermocouples, runs PID, fans and the supervisor and writes a telemetry
    frame: none of it may allocate (a garbage collection on a Pico stalls the loop)."""
    out = run_micropython(
        """
import gc
from thermrig_fw.rig import Rig, Samples
rig = Rig(b"unix-sim")
s = Samples()
for raw in s.tc_raw:
    raw[:] = ((2200 // 25) << 18).to_bytes(4, "big")
s.tach[0] = s.tach[1] = 5
rig.heat_enabled = True
rig.air_target_cc = 2400  # within reach: no fault, no event frames
def tick(k):
    rig.last_host_ms = k * 100
    rig.step(s, k * 100)
def run(first, n):
    for k in range(first, first + n):
        tick(k)
        rig.tx.clear()
def measure():
    gc.collect()
    gc.disable()
    before = gc.mem_alloc()
    seq = rig.tx_seq
    run(20, 1000)
    return gc.mem_alloc() - before, rig.tx_seq - seq
run(0, 20)
print(*measure())
"""
    )
    allocated, frames = (int(x) for x in out.split())
    assert frames == 1000  # one telemetry frame per tick
    assert allocated == 0


def test_telemetry_every_100_ms_of_its_clock_none_skipped() -> None:
    """10 Hz on a stepped plant, where the host's scheduling cannot move the firmware's clock: 20 s of
    telemetry, each frame 100 ms of uptime after the one before."""
    with (
        SimulatedRig(SimConfig(firmware="micropython", pacing=Pacing.stepped(), seed=1)) as sim,
        RigLink(sim.port) as link,
    ):
        link.hello()
        link.drain_telemetry()
        frames = []
        for _ in range(20):
            link.ping()  # a host that keeps writing: the firmware's host-lost timeout stays out of it
            sim.advance(1.0)
            frames += link.drain_telemetry()
    ups = [f.uptime_ms for f in frames]
    assert len(frames) >= 190 and [b - a for a, b in itertools.pairwise(ups)] == [100] * (len(ups) - 1)


def test_real_time_pace_on_the_hosts_clock_averages_10_hz() -> None:
    """The host's effect: on real time, a tick woken late on a loaded machine is followed by a shorter one
    (absolute deadlines), so ten frames are judged on their pace together; every interval is exact on the
    stepped plant (above)."""
    with SimulatedRig(SimConfig(firmware="micropython")) as sim, RigLink(sim.port) as link:
        info = link.hello()
        assert (info.firmware, info.board) == ("thermrig-micropython", "unix-sim")
        assert info.version == checkout_version()  # it runs a copy stamped as a flashed Pico's is
        link.drain_telemetry()
        frames = [link.next_telemetry(timeout=5) for _ in range(10)]
        assert [f.seq - frames[0].seq for f in frames] == list(range(10))
        ups = [f.uptime_ms for f in frames]
        assert all(b > a for a, b in itertools.pairwise(ups))
        assert 50 <= (ups[-1] - ups[0]) / 9 <= 150
