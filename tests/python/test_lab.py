"""Rigs as labgrid places, end to end on loopback: a real labgrid coordinator and exporters serving
simulated rigs' ptys, ser2net re-exporting them over RFC 2217 while a place is acquired, and the
`thermrig lab` commands locking, releasing, reporting and refusing."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from waiting import wait_for

from thermrig.children import with_default_sigint
from thermrig.db.local_server import free_port
from thermrig.firmware_identity import checkout_version
from thermrig.lab.client import LabClient
from thermrig.lab.rig_place import tag_value
from thermrig.lab_world.world import BIN, Lab, Proc, coordinator, simulated_lab, ssh_server

pytestmark = pytest.mark.timeout(300)

TAGS = {"board": "sim", "firmware": "0.3.1+g1a2b", "drive": "Virtual-990", "slot": "top", "heatsink": "none"}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Our CLI's environment: its own XDG folders (the lock records), no rig port of the user's."""
    base = tmp_path_factory.mktemp("xdg")
    env = {k: v for k, v in os.environ.items() if k not in ("THERMRIG_PORT", "THERMRIG_CONFIG", "LG_COORDINATOR")}
    for var in ("XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env[var] = str(base / var.lower())
    env.pop("LG_USERNAME", None)
    env.pop("LG_HOSTNAME", None)
    return env


def thermrig(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "thermrig.cli", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def labgrid_client(lab: Lab, *args: str, user: str = "alice", host: str = "bench") -> None:
    env = {**os.environ, "LG_USERNAME": user, "LG_HOSTNAME": host}
    cmd = [str(BIN / "labgrid-client"), "-x", lab.address, *args]
    subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, timeout=60)


@contextmanager
def foreign_device() -> Iterator[str]:
    """A pty whose device speaks another protocol (a modem's "ERROR" to every line); its path."""
    master, slave = os.openpty()
    stop = threading.Event()

    def answer() -> None:
        while not stop.is_set():
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    os.read(master, 4096)
                    os.write(master, b"\r\nERROR\r\n")
                except OSError:
                    return

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield os.ttyname(slave)
    finally:
        stop.set()
        thread.join()
        os.close(master)
        os.close(slave)


def export(
    env: dict[str, str], lab: Lab, name: str, port: str, fio_port: int, ssh_port: int, tags: dict[str, str]
) -> None:
    out = lab.folder / f"{name}.yaml"
    tag_args = [a for k, v in tags.items() for a in (f"--{k}", v)]
    result = thermrig(
        env, "lab", "export", "--name", name, "--port", port, "--test-pc", "127.0.0.1", "--test-pc-user", "tester",
        "--fio-port", str(fio_port), "--ssh-port", str(ssh_port), *tag_args,
        "-o", str(out), "--coordinator", lab.address, "--exporter-name", f"exp-{name}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lab.start_exporter(f"exp-{name}", out, name)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Iterator[Lab]:
    """rig-a and rig-b (simulated rigs; rig-a's test PC runs a real fio server and sshd) and rig-x (a device of
    another protocol), each registered by `thermrig lab export --coordinator` and exported (not isolated:
    these test PCs take no key of ours, so their fio server is checked with --insecure)."""
    with (
        simulated_lab(tmp_path_factory.mktemp("lab"), ["rig-a", "rig-b"], sealed=False) as lab,
        foreign_device() as foreign,
        ExitStack() as stack,
    ):
        ports = {name: (free_port(), free_port()) for name in ("rig-a", "rig-b", "rig-x")}
        lab.ports = ports
        fio = Proc.start(["fio", f"--server=ip:127.0.0.1,{ports['rig-a'][0]}"], lab.folder)
        try:
            stack.callback(ssh_server(lab.folder, ports["rig-a"][1]).stop)
            for name, rig in lab.rigs.items():
                export(env, lab, name, str(rig.port), *ports[name], TAGS)
            export(env, lab, "rig-x", foreign, *ports["rig-x"], {"board": "other"})
            yield lab
        finally:
            fio.stop()


def holder(lab: Lab, place: str) -> str | None:
    with LabClient(lab.address) as client:
        return client.place(place).acquired


def identity(env: dict[str, str], lab: Lab) -> str:
    with LabClient(lab.address) as client:
        return client.identity()


def test_exporter_file_serves_the_rigs_pty_and_its_test_pc(lab: Lab, env: dict[str, str]) -> None:
    text = (lab.folder / "rig-a.yaml").read_text()
    pty = os.path.realpath(lab.rigs["rig-a"].port)
    assert pty.startswith("/dev/pts/")
    assert f"port: {pty}" in text and "cls: RawSerialPort" in text
    fio_port, ssh_port = lab.ports["rig-a"]
    assert text.count("cls: NetworkService") == 2 and f"port: {fio_port}" in text and f"port: {ssh_port}" in text


def test_coordinator_sees_each_place_with_its_tags_and_resources(lab: Lab) -> None:
    with LabClient(lab.address) as client:
        places = {p.name: p for p in client.places()}
        assert set(places) == {"rig-a", "rig-b", "rig-x"}
        assert places["rig-a"].tags == {
            "board": "sim", "firmware": "0_3_1_g1a2b", "drive": "virtual_990", "slot": "top", "heatsink": "none",
        }  # fmt: skip
        exported = client.session.resources["exp-rig-a"]["rig-a"]
        assert {name: entry.cls for name, entry in exported.items()} == {
            "serial": "NetworkSerialPort", "fio": "NetworkService", "ssh": "NetworkService",
        }  # fmt: skip
        assert exported["fio"].params["port"] == lab.ports["rig-a"][0]
        assert client.session.places["rig-a"].hasmatch(("exp-rig-a", "rig-a", "NetworkSerialPort", "serial"))


def test_status_lists_places_holders_and_tags(lab: Lab, env: dict[str, str]) -> None:
    current = tag_value(checkout_version())
    with LabClient(lab.address) as client:  # rig-b's rig was flashed with this checkout's firmware
        client.ensure_place(
            "rig-b", "exp-rig-b/rig-b/*", {**{k: tag_value(v) for k, v in TAGS.items()}, "firmware": current}
        )
    labgrid_client(lab, "-p", "rig-b", "acquire")
    try:
        result = thermrig(env, "lab", "status", "--coordinator", lab.address)
        assert result.returncode == 0, result.stderr
        rows = {line.split()[1]: line for line in result.stdout.splitlines() if "rig-" in line}
        assert "free" in rows["rig-a"] and "board=sim" in rows["rig-a"]
        assert " differs " in rows["rig-a"]  # tagged 0.3.1+g1a2b: not this checkout's firmware
        assert " - " in rows["rig-x"]  # no firmware tag
        assert "bench/alice" in rows["rig-b"] and f"firmware={current}" in rows["rig-b"]
        assert " current " in rows["rig-b"]
    finally:
        labgrid_client(lab, "-p", "rig-b", "release")


def test_rig_info_through_the_places_rfc2217_port_then_released(lab: Lab, env: dict[str, str]) -> None:
    result = thermrig(env, "lab", "info", "--coordinator", lab.address, "--place", "rig-a")
    assert result.returncode == 0, result.stderr
    assert "rig on rig-a (rfc2217://127.0.0.1:" in result.stdout and "thermrig-core" in result.stdout
    assert holder(lab, "rig-a") is None


def test_place_taken_by_someone_else_is_one_line_naming_place_and_holder(lab: Lab, env: dict[str, str]) -> None:
    labgrid_client(lab, "-p", "rig-a", "acquire")
    try:
        result = thermrig(env, "lab", "info", "--coordinator", lab.address, "--place", "rig-a")
        assert result.returncode == 1
        assert result.stderr.strip().splitlines() == [f"error: place rig-a at {lab.address} is held by bench/alice"]
        assert holder(lab, "rig-a") == "bench/alice"
    finally:
        labgrid_client(lab, "-p", "rig-a", "release")


def test_no_such_place_is_one_line(lab: Lab, env: dict[str, str]) -> None:
    result = thermrig(env, "lab", "info", "--coordinator", lab.address, "--place", "rig-z")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: no place 'rig-z' at coordinator {lab.address} (places: rig-a, rig-b, rig-x)"
    ]


def _hold(lab: Lab, env: dict[str, str], *args: str, expect: int = 1) -> Proc:
    cmd = [sys.executable, "-m", "thermrig.cli", "lab", "hold", "--coordinator", lab.address, *args]
    proc = Proc.start(cmd, lab.folder, env)
    if expect:
        held = wait_for(lambda: sum(line.startswith("holding place ") for line in proc.lines) == expect, 60)
        assert held, proc.output()
    return proc


def _held_by(proc: Proc) -> list[str]:
    return sorted(line.split()[2].rstrip(":") for line in proc.lines if line.startswith("holding place "))


def test_hold_locks_the_place_and_ctrl_c_releases_it(lab: Lab, env: dict[str, str]) -> None:
    proc = _hold(lab, env, "--place", "rig-b")
    try:
        assert holder(lab, "rig-b") == identity(env, lab)
        with LabClient(lab.address) as client:
            assert client.place("rig-b").comment == f"thermrig hold (pid {proc.popen.pid})"
        assert f"  test PC fio server 127.0.0.1,{lab.ports['rig-b'][0]}" in proc.lines
        proc.popen.send_signal(signal.SIGINT)
        assert proc.popen.wait(60) == 0, proc.output()
        assert "released rig-b" in proc.output()
        assert holder(lab, "rig-b") is None
    finally:
        proc.stop()


def test_sigterm_releases_a_hold_too(lab: Lab, env: dict[str, str]) -> None:
    proc = _hold(lab, env, "--place", "rig-b")
    try:
        proc.popen.send_signal(signal.SIGTERM)
        assert proc.popen.wait(60) == 0, proc.output()
        assert holder(lab, "rig-b") is None
    finally:
        proc.stop()


def test_a_stale_lock_of_ours_is_released_at_next_start_and_named(lab: Lab, env: dict[str, str]) -> None:
    proc = _hold(lab, env, "--place", "rig-a")
    pid = proc.popen.pid
    os.killpg(pid, signal.SIGKILL)  # a crash: no release
    proc.popen.wait()
    assert holder(lab, "rig-a") == identity(env, lab)
    result = thermrig(env, "lab", "info", "--coordinator", lab.address, "--place", "rig-a")
    assert result.returncode == 0, result.stderr
    assert f"released stale lock on place rig-a (left by pid {pid}, hold)" in result.stderr
    assert holder(lab, "rig-a") is None
    again = thermrig(env, "lab", "status", "--coordinator", lab.address)
    assert "stale" not in again.stderr


def test_someone_elses_lock_is_never_taken_for_a_stale_one_of_ours(lab: Lab, env: dict[str, str]) -> None:
    proc = _hold(lab, env, "--place", "rig-b")
    os.killpg(proc.popen.pid, signal.SIGKILL)
    proc.popen.wait()
    with LabClient(lab.address) as client:
        client.release("rig-b")  # our dead process's place freed by hand...
    labgrid_client(lab, "-p", "rig-b", "acquire")  # ...and taken by alice
    try:
        result = thermrig(env, "lab", "info", "--coordinator", lab.address, "--place", "rig-a")
        assert result.returncode == 0, result.stderr
        assert "stale" not in result.stderr
        assert holder(lab, "rig-b") == "bench/alice"
    finally:
        labgrid_client(lab, "-p", "rig-b", "release")


def test_a_hold_by_tag_waits_its_turn_for_places_others_hold(lab: Lab, env: dict[str, str]) -> None:
    first = _hold(lab, env, "--tag", "board=sim", "--count", "2", expect=2)
    second = _hold(lab, env, "--tag", "board=sim", "--tag", "slot=top", expect=0)
    gives_up = _hold(lab, env, "--tag", "board=sim", expect=0)
    try:
        assert _held_by(first) == ["rig-a", "rig-b"]
        for proc in (second, gives_up):
            waiting = wait_for(lambda p=proc: "waiting for 1 of 1 places matching the tags" in p.lines, 60)
            assert waiting, proc.output()
        assert _held_by(second) == []
        gives_up.popen.send_signal(signal.SIGINT)  # Ctrl-C while waiting: its reservation is cancelled
        assert gives_up.popen.wait(60) == 130
        assert "interrupted: nothing held, reservations cancelled" in gives_up.lines
        with LabClient(lab.address) as client:
            assert len(client.reservations()) == 3  # first's two, second's one
        first.popen.send_signal(signal.SIGINT)
        assert first.popen.wait(60) == 0, first.output()
        assert wait_for(lambda: len(_held_by(second)) == 1, 60), second.output()
        taken = _held_by(second)[0]
        assert holder(lab, taken) == identity(env, lab)
        second.popen.send_signal(signal.SIGINT)
        assert second.popen.wait(60) == 0, second.output()
        assert holder(lab, "rig-a") is None and holder(lab, "rig-b") is None
        with LabClient(lab.address) as client:  # the reservations went with the holds
            assert all(p.reservation is None for p in client.places()) and client.reservations() == []
    finally:
        first.stop()
        second.stop()
        gives_up.stop()


def test_no_place_matching_the_tags_is_one_line(lab: Lab, env: dict[str, str]) -> None:
    result = thermrig(env, "lab", "hold", "--coordinator", lab.address, "--tag", "board=pico")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: no place at {lab.address} matches board=pico (places: rig-a, rig-b, rig-x)"
    ]


def test_check_says_what_answers(lab: Lab, env: dict[str, str]) -> None:
    result = thermrig(env, "lab", "check", "--coordinator", lab.address, "--place", "rig-a", "--insecure")
    fio_port, ssh_port = lab.ports["rig-a"]
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[0].startswith("rig: thermrig-core ") and "on rfc2217://127.0.0.1:" in out[0]
    assert out[1] == f"fio server: 127.0.0.1,{fio_port} answers"
    assert out[2].startswith(f"ssh: tester@127.0.0.1:{ssh_port} answers (SSH-2.0-OpenSSH")
    assert holder(lab, "rig-a") is None


def test_check_names_each_test_pc_service_that_does_not_answer(lab: Lab, env: dict[str, str]) -> None:
    result = thermrig(env, "lab", "check", "--coordinator", lab.address, "--place", "rig-b", "--insecure")
    fio_port, ssh_port = lab.ports["rig-b"]
    assert result.returncode == 1
    assert result.stdout.startswith("rig: thermrig-core ")
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 2
    assert errors[0].startswith(f"error: place rig-b: its test PC's fio server at 127.0.0.1,{fio_port} does not answer")
    assert errors[1].startswith(f"error: place rig-b: its test PC's SSH at 127.0.0.1:{ssh_port} does not answer")
    assert holder(lab, "rig-b") is None


def test_a_device_of_another_protocol_is_one_line_and_its_place_released(lab: Lab, env: dict[str, str]) -> None:
    result = thermrig(env, "lab", "info", "--coordinator", lab.address, "--place", "rig-x")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: place rig-x: no HELLO reply from rfc2217://127.0.0.1:")
    assert holder(lab, "rig-x") is None


def test_no_coordinator_at_the_address_is_one_line(env: dict[str, str]) -> None:
    address = f"127.0.0.1:{free_port()}"
    result = thermrig(env, "lab", "status", "--coordinator", address)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: no labgrid coordinator at {address}"), result.stderr


def test_export_of_a_real_rig_matches_its_usb_serial_port_by_udev(env: dict[str, str], tmp_path: Path) -> None:
    result = thermrig(
        env, "lab", "export", "--name", "bench-1", "--udev", "ID_SERIAL_SHORT=0671FF383", "--board", "nucleo_f411re",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "cls: USBSerialPort" in result.stdout and "ID_SERIAL_SHORT: 0671FF383" in result.stdout
    assert "RawSerialPort" not in result.stdout


def test_a_session_the_coordinator_dropped_is_started_again(tmp_path: Path) -> None:
    """A coordinator restarted under a long-lived client (its places come back from places.yaml): the
    client's next call opens a new session instead of failing."""
    with coordinator(tmp_path) as (address, first):
        client = LabClient(address).__enter__()
        try:
            client.ensure_place("bench-9", "exp/bench-9/*", {"board": "sim"})
            assert wait_for(lambda: (tmp_path / "places.yaml").exists(), 30)  # saved before the restart
            first.stop()
            again = Proc.start([str(BIN / "labgrid-coordinator"), "--listen", address], tmp_path)
            try:
                assert wait_for(lambda: f"listening on {address}" in again.lines, 60), again.output()
                assert [p.name for p in client.places()] == ["bench-9"]
                assert client.place("bench-9").tags == {"board": "sim"}
            finally:
                again.stop()
        finally:
            client.__exit__(None, None, None)


# A child that opens a session, is sent SIGINT from inside a coordinator call (the signal arrives while
# gRPC's loop runs), and reports where the KeyboardInterrupt landed and whether the session closed.
_INTERRUPTED_CALL = """
import os, signal, sys
from thermrig.lab.client import LabClient
done = []
async def call(session):
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the call is on the wire
    await session.sync_with_coordinator()
    done.append("call finished")
client = LabClient(sys.argv[1]).__enter__()
try:
    client._run(call(client.session))
except KeyboardInterrupt:
    print("interrupted after:", done, flush=True)
client.__exit__(None, None, None)
print("closed", client._session is None and client._loop is None, flush=True)
"""


def test_ctrl_c_during_a_coordinator_call_is_raised_after_it_and_the_session_closes(lab: Lab) -> None:
    res = subprocess.run(
        with_default_sigint([sys.executable, "-c", _INTERRUPTED_CALL, lab.address]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "interrupted after: ['call finished']" in res.stdout, res.stdout + res.stderr
    assert "closed True" in res.stdout


def test_a_coordinator_that_stops_answering_is_one_error_within_the_timeout(tmp_path: Path) -> None:
    """A coordinator stopped (SIGSTOP: its socket still open, nothing answers) under a client: the next
    call ends in CoordinatorUnreachable after the client's timeout (with Ctrl-C held during calls, the
    bound is how long it can be held; without it the call waits for gRPC's keepalive to drop the stream,
    17.5 s, then starts a session again and waits as long)."""
    from thermrig.lab.errors import CoordinatorUnreachable

    with coordinator(tmp_path) as (address, proc):
        client = LabClient(address, timeout=3.0).__enter__()
        try:
            client.ensure_place("bench-1", "exp/bench-1/*", {"board": "sim"})
            proc.popen.send_signal(signal.SIGSTOP)
            try:
                with pytest.raises(CoordinatorUnreachable, match="did not answer in 3 s"):
                    client.places()
            finally:
                proc.popen.send_signal(signal.SIGCONT)
        finally:
            client.__exit__(None, None, None)
