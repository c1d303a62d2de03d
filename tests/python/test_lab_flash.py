"""`thermrig flash --lab COORDINATOR --place P` on a simulated lab: a real labgrid coordinator, exporters
serving simulated rigs' ptys over ser2net (RFC 2217), each place's test PC a real sshd on loopback. Only
the upload tool is fake (there is no board): the test PC's bin folder holds an `openocd` and an `mpremote`
that record their arguments and the files they were run beside. A rig built with this checkout's version
stamp answers the HELLO check; one built with an older stamp stands for an upload that did not take."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import pytest
from firmware_release import stand_in_image
from waiting import wait_for

from thermrig.firmware_identity import checkout_version
from thermrig.flash.release import Release, ReleaseFile
from thermrig.lab.client import LabClient
from thermrig.lab.rig_place import tag_value
from thermrig.lab_world.world import BIN, CAMPAIGN_RIG, Lab, Proc, campaign, simulated_lab
from thermrig.link.rig_link import RigLink
from thermrig.paths import REPO_ROOT
from thermrig.protocol.messages import Fault
from thermrig.sim.simulated_rig import SimulatedRig

pytestmark = pytest.mark.timeout(600)

OLD = "0.0.1+g0000000"  # an older firmware's stamp
# place -> (board tag, the firmware stamp its rig reports: None = this checkout's)
PLACES = {"nuc": ("nucleo_f411re", None), "old": ("nucleo_f446re", OLD), "pi": ("pico", None)}

FAKE_TOOL = """#!/bin/sh
# Stands in for {tool} on the test PC: records its arguments and what lies beside it; fails when told.
echo "$*" >> {folder}/{tool}.log
mkdir -p {folder}/received && cp -r . {folder}/received/
if [ -e {folder}/hang ]; then
  touch {folder}/hanging; while [ ! -e {folder}/go ]; do sleep 0.05; done; touch {folder}/resumed
fi
if [ -e {folder}/fail ]; then echo "Error: open failed" >&2; echo "** OpenOCD init failed **" >&2; exit 1; fi
exit 0
"""


def rigsim(build: Path, version: str) -> Path:
    """rigsim built with this version stamp (the firmware a rig then reports in HELLO)."""
    cmake = ["cmake", "-S", str(REPO_ROOT / "firmware"), "-B", str(build), "-G", "Ninja"]
    subprocess.run([*cmake, f"-DTHERMRIG_FW_VERSION={version}"], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build), "--target", "rigsim"], check=True, capture_output=True)
    return build / "rigsim"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    folder = tmp_path_factory.mktemp("lab")
    current = checkout_version()
    binaries = {v: rigsim(folder / f"rigsim-{i}", v) for i, v in enumerate({current, OLD})}
    with simulated_lab(folder, []) as lab, ExitStack() as stack:
        for seed, (name, (_, version)) in enumerate(PLACES.items(), 1):
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("THERMRIG_RIGSIM", str(binaries[version or current]))
                lab.rigs[name] = stack.enter_context(SimulatedRig(replace(CAMPAIGN_RIG, seed=seed)))
        for name, (board, _) in PLACES.items():
            lab.add_place(name, {"board": board})
            testpc = lab.folder / f"testpc-{name}"
            for tool in ("openocd", "mpremote"):
                path = testpc / "bin" / tool
                path.write_text(FAKE_TOOL.format(tool=tool, folder=testpc))
                path.chmod(0o755)
        yield lab


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("xdg")
    env = {k: v for k, v in os.environ.items() if k not in ("THERMRIG_PORT", "THERMRIG_CONFIG", "LG_COORDINATOR")}
    for var in ("XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env[var] = str(base / var.lower())
    return {**env, "COLUMNS": "250"}


@pytest.fixture
def testpc(lab: Lab) -> Iterator[dict[str, Path]]:
    """Each place's test PC folder, its fake tools' records cleared before and after."""
    folders = {name: lab.folder / f"testpc-{name}" for name in PLACES}

    def clear() -> None:
        for folder in folders.values():
            marks = ("received", "fail", "hang", "hanging", "go", "resumed")
            subprocess.run(["rm", "-rf", *(str(folder / n) for n in marks)])
            for log in folder.glob("*.log"):
                log.unlink()

    clear()
    yield folders
    clear()


def flash(lab: Lab, env: dict[str, str], place: str, *more: str) -> list[str]:
    return [sys.executable, "-m", "thermrig.cli", "flash", "--lab", lab.address, "--place", place,
            "--ssh-key", lab.ssh_key, *more]  # fmt: skip


def run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def holders(lab: Lab) -> dict[str, str | None]:
    with LabClient(lab.address) as client:
        return {p.name: p.acquired for p in client.places()}


def firmware_tag(lab: Lab, place: str) -> str:
    with LabClient(lab.address) as client:
        return client.place(place).tags.get("firmware", "")


def nothing_of_ours(lab: Lab, env: dict[str, str]) -> None:
    assert set(holders(lab).values()) == {None}
    assert not list(Path(env["XDG_RUNTIME_DIR"]).rglob("lab/locks/*.json"))


def test_flash_a_nucleo_place_uploads_on_its_test_pc_and_checks_the_version(
    lab: Lab, env: dict[str, str], testpc: dict[str, Path], tmp_path: Path
) -> None:
    image = tmp_path / "firmware.elf"
    image.write_bytes(os.urandom(4096) + b"\x7fELF and the rest")
    done = run(flash(lab, env, "nuc", "--image", str(image)), env)
    assert done.returncode == 0, done.stdout + done.stderr
    version = checkout_version()
    assert f"flashed: thermrig-core {version} on place nuc" in done.stdout and "test PC 127.0.0.1" in done.stdout
    received = testpc["nuc"] / "received" / "firmware.elf"
    assert received.read_bytes() == image.read_bytes()  # byte for byte on the test PC
    assert (testpc["nuc"] / "openocd.log").read_text().splitlines() == [
        "-f interface/stlink.cfg -f target/stm32f4x.cfg -c program firmware.elf verify reset exit"
    ]
    assert not list((testpc["nuc"] / "tmp").glob("thermrig-flash.*"))  # the test PC's folder removed
    assert firmware_tag(lab, "nuc") == tag_value(version)  # what `lab status` compares
    nothing_of_ours(lab, env)


def test_flash_a_place_from_a_release_uploads_the_image_of_its_board(
    lab: Lab, env: dict[str, str], testpc: dict[str, Path], tmp_path: Path
) -> None:
    version = checkout_version()  # what the place's rig reports: a release of it flashes cleanly
    release = tmp_path / "release"
    files = []
    for board in ("nucleo_f411re", "nucleo_f446re"):
        (release / board).mkdir(parents=True)
        elf = release / board / f"thermrig-{board}.elf"
        elf.write_bytes(stand_in_image(version))
        files.append(ReleaseFile.of(release, elf, board, version))
    Release(release, tuple(files)).write()
    done = run(flash(lab, env, "nuc", "--release", str(release)), env)  # nuc's board tag: nucleo_f411re
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"flashed: thermrig-core {version} on place nuc" in done.stdout
    sent = testpc["nuc"] / "received" / "thermrig-nucleo_f411re.elf"
    assert sent.read_bytes() == (release / "nucleo_f411re" / "thermrig-nucleo_f411re.elf").read_bytes()
    assert (testpc["nuc"] / "openocd.log").read_text().splitlines() == [
        "-f interface/stlink.cfg -f target/stm32f4x.cfg -c program thermrig-nucleo_f411re.elf verify reset exit"
    ]
    line = one_error_line(run(flash(lab, env, "pi", "--release", str(release)), env))
    assert "no firmware for pico" in line  # the release holds no Pico firmware: nothing uploaded
    assert not (testpc["pi"] / "mpremote.log").exists()
    nothing_of_ours(lab, env)


def test_flash_a_pico_place_stages_this_checkouts_files_and_runs_mpremote_there(
    lab: Lab, env: dict[str, str], testpc: dict[str, Path]
) -> None:
    done = run(flash(lab, env, "pi"), env)
    assert done.returncode == 0, done.stdout + done.stderr
    version = checkout_version()
    assert f"flashed: thermrig-core {version} on place pi" in done.stdout
    assert (testpc["pi"] / "mpremote.log").read_text().splitlines() == [
        "connect auto resume fs cp -r thermrig_fw main.py bootcheck.py :.",
        "connect auto resume reset",
    ]
    received = testpc["pi"] / "received"
    assert (received / "main.py").read_bytes() == (REPO_ROOT / "firmware" / "micropython" / "main.py").read_bytes()
    assert f'FW_VERSION = b"{version}"' in (received / "thermrig_fw" / "version.py").read_text()
    assert not (received / "sim_main.py").exists()
    nothing_of_ours(lab, env)


def test_a_failing_upload_tool_is_one_line_and_the_place_is_released(
    lab: Lab, env: dict[str, str], testpc: dict[str, Path], tmp_path: Path
) -> None:
    image = tmp_path / "firmware.elf"
    image.write_bytes(b"image")
    (testpc["nuc"] / "fail").touch()
    line = one_error_line(run(flash(lab, env, "nuc", "--image", str(image)), env))
    assert line == (
        "error: upload tool failed on test PC 127.0.0.1 (place nuc): `openocd -f interface/stlink.cfg -f "
        "target/stm32f4x.cfg -c 'program firmware.elf verify reset exit'` exited with status 1: "
        "** OpenOCD init failed **"
    )
    nothing_of_ours(lab, env)


def test_a_rig_still_reporting_an_older_version_after_the_upload_is_named(
    lab: Lab, env: dict[str, str], testpc: dict[str, Path], tmp_path: Path
) -> None:
    image = tmp_path / "firmware.elf"
    image.write_bytes(b"image")
    line = one_error_line(run(flash(lab, env, "old", "--image", str(image)), env))
    assert line == (
        f"error: place old: version after upload is {OLD}, not {checkout_version()} (this checkout's); "
        "the rig is left in its safe state"
    )
    assert (testpc["old"] / "received" / "firmware.elf").read_bytes() == b"image"  # the upload itself ran
    assert firmware_tag(lab, "old") == tag_value(OLD)  # what the rig runs, for `lab status`
    nothing_of_ours(lab, env)


def test_a_place_held_by_someone_else_or_missing_is_refused(
    lab: Lab, env: dict[str, str], testpc: dict[str, Path]
) -> None:
    alice = {**os.environ, "LG_USERNAME": "alice", "LG_HOSTNAME": "bench"}
    client = [str(BIN / "labgrid-client"), "-x", lab.address, "-p", "nuc"]
    subprocess.run([*client, "acquire"], env=alice, check=True, capture_output=True, timeout=60)
    try:
        line = one_error_line(run(flash(lab, env, "nuc"), env))
        assert line == f"error: place nuc at {lab.address} is held by bench/alice"
        assert holders(lab)["nuc"] == "bench/alice"
    finally:
        subprocess.run([*client, "release"], env=alice, check=True, capture_output=True, timeout=60)
    assert not (testpc["nuc"] / "openocd.log").exists()  # nothing built, nothing uploaded
    line = one_error_line(run(flash(lab, env, "nope"), env))
    assert line == f"error: no place 'nope' at coordinator {lab.address} (places: nuc, old, pi)"
    nothing_of_ours(lab, env)


def test_ctrl_c_during_the_upload_releases_the_place(
    lab: Lab, env: dict[str, str], testpc: dict[str, Path], tmp_path: Path
) -> None:
    image = tmp_path / "firmware.elf"
    image.write_bytes(b"image")
    (testpc["nuc"] / "hang").touch()
    proc = Proc.start(flash(lab, env, "nuc", "--image", str(image)), tmp_path, env)
    try:
        assert wait_for((testpc["nuc"] / "hanging").exists, 120), proc.output()
        assert holders(lab)["nuc"] is not None
        assert list((testpc["nuc"] / "tmp").glob("thermrig-flash.*/firmware.elf"))  # in the test PC's TMPDIR
        os.kill(proc.popen.pid, signal.SIGINT)
        assert proc.popen.wait(60) != 0, proc.output()
    finally:
        (testpc["nuc"] / "go").touch()  # the fake tool on the test PC ends too (ssh gone, it runs on)
        proc.stop()
    assert wait_for((testpc["nuc"] / "resumed").exists, 30)
    assert wait_for(lambda: not list((testpc["nuc"] / "tmp").glob("thermrig-flash.*")), 30)  # its folder gone
    nothing_of_ours(lab, env)


def test_a_campaign_warns_of_a_rig_older_than_this_host_and_status_shows_it(
    lab: Lab, tmp_path: Path, influx_env: dict[str, str]
) -> None:
    path = campaign(tmp_path, "older", lab.address, runs=1, ssh_key=lab.ssh_key)
    path.write_text(path.read_text().replace('board = "sim"', 'board = "nucleo_f446re"'))
    cmd = [sys.executable, "-m", "thermrig.cli", "run", str(path), "--out", str(tmp_path / "runs"), "--no-prompt"]
    done = subprocess.run(cmd, env=influx_env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    warned = [x for x in done.stdout.splitlines() if x.startswith("place old: the rig runs firmware ")]
    assert len(warned) == 1 and f"firmware {OLD}, older than this host" in warned[0], done.stdout
    cmd = [sys.executable, "-m", "thermrig.cli", "lab", "status", "-x", lab.address]
    status = subprocess.run(cmd, env={**influx_env, "COLUMNS": "400"}, capture_output=True, text=True, timeout=120)
    row = next(x for x in status.stdout.splitlines() if x.split()[1:2] == ["old"])
    assert f"{tag_value(OLD)}: differs" in row and "free" in row, row


def test_a_rig_with_latched_faults_fails_its_start_check(lab: Lab, tmp_path: Path, influx_env: dict[str, str]) -> None:
    """Left heating by a host that went away, the rig latches HOST_LOST and would refuse to heat: the place's
    start check names it (the only place: the campaign fails in that one line, nothing locked)."""
    port = lab.rigs["pi"].port
    rig = lab.rigs["pi"]
    with RigLink(port) as link:
        link.hello()
        link.set(air=4000, hlim=500, heat=1)
        assert wait_for(lambda: rig.actuators()[0] > 0.0, 30)  # heating

    def host_lost() -> bool:
        with RigLink(port) as link:
            link.hello()
            return bool(link.next_telemetry(5.0).faults & Fault.HOST_LOST)

    try:
        assert wait_for(lambda: rig.actuators()[0] == 0.0, 60)  # the host gone, the rig went safe by itself
        assert host_lost()
        path = campaign(tmp_path, "tripped", lab.address, runs=1, ssh_key=lab.ssh_key)
        path.write_text(path.read_text().replace('board = "sim"', 'board = "pico"'))
        cmd = [sys.executable, "-m", "thermrig.cli", "run", str(path), "--out", str(tmp_path / "runs"), "--no-prompt"]
        done = subprocess.run(cmd, env=influx_env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=300)  # fmt: skip
        line = one_error_line(done)
        assert line.startswith("error: place pi: its rig at rfc2217://127.0.0.1:") and "latched faults" in line, line
        assert "HOST_LOST" in line and "`thermrig rig clear --port rfc2217://127.0.0.1:" in line, line
        nothing_of_ours(lab, influx_env)
    finally:
        with RigLink(port) as link:
            link.hello()
            link.command("CLEAR")
