"""Firmware identity: every C build stamps HELLO's ver= with the project version and git revision
(firmware/version.cmake); the host computes the same stamp for this checkout, `thermrig rig info`
says whether the rig runs it, and a campaign refuses another protocol and warns on older firmware."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from campaign_helpers import CampaignFile, file_drive, run_args, start_run, thermrig

from thermrig import __version__
from thermrig.dut.pacing import Pacing
from thermrig.firmware_identity import FirmwareVersion, checkout_verdict, checkout_version, older_than_host
from thermrig.paths import REPO_ROOT
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

VERSION_CMAKE = REPO_ROOT / "firmware" / "version.cmake"


def cmake_stamp(root: Path, out: Path) -> str:
    subprocess.run(["cmake", f"-DROOT={root}", f"-DOUT={out}", "-P", str(VERSION_CMAKE)], check=True)
    return out.read_text().split('"')[1]


@pytest.fixture(scope="module")
def rigsims(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """rigsim built from this checkout as it is, as an older release, and speaking protocol 2."""
    builds = {
        "fresh": (),
        "older": ("-DTHERMRIG_FW_VERSION=0.0.9",),
        "proto2": ("-DCMAKE_C_FLAGS=-DRIG_PROTO_VERSION=2",),
    }
    root = tmp_path_factory.mktemp("rigsims")
    for name, defs in builds.items():
        build = root / name
        cmd = ["cmake", "-S", str(REPO_ROOT / "firmware"), "-B", str(build), "-G", "Ninja", *defs]
        subprocess.run(cmd, check=True, capture_output=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "rigsim"], check=True, capture_output=True)
    return {name: root / name / "rigsim" for name in builds}


def test_host_and_build_stamp_this_checkout_alike(tmp_path: Path) -> None:
    stamp = cmake_stamp(REPO_ROOT, tmp_path / "rig_version.h")
    assert stamp == checkout_version()
    parsed = FirmwareVersion.parse(stamp)
    assert parsed.release == FirmwareVersion.parse(__version__).release and parsed.revision is not None


def test_the_stamp_names_the_revision_and_a_dirty_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var, value in (("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@t"), ("GIT_COMMITTER_NAME", "t")):
        monkeypatch.setenv(var, value)
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@t")
    monkeypatch.setenv("HOME", str(tmp_path))
    repo = tmp_path / "repo"
    (repo / "host").mkdir(parents=True)
    (repo / "host" / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2.3.4"\n')
    assert checkout_version(repo) == "2.3.4"  # not a git checkout yet: the release alone
    assert cmake_stamp(repo, tmp_path / "a.h") == "2.3.4"
    git = ["git", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "v"], check=True)
    rev = subprocess.run([*git, "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert checkout_version(repo) == cmake_stamp(repo, tmp_path / "b.h") == f"2.3.4+g{rev}"
    (repo / "host" / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2.3.4"\n# edit\n')
    assert checkout_version(repo) == cmake_stamp(repo, tmp_path / "c.h") == f"2.3.4+g{rev}-dirty"


def test_verdicts() -> None:
    assert checkout_verdict("0.1.0+gabcdef1", "0.1.0+gabcdef1")[0]
    assert checkout_verdict("0.1.0+gabcdef1-dirty", "0.1.0+gabcdef1")[0]
    same, line = checkout_verdict("0.1.0+g1234567", "0.1.0+gabcdef1")
    assert not same and "thermrig flash" in line
    assert not checkout_verdict("0.1.0", "0.1.0+gabcdef1")[0]
    assert older_than_host("0.0.9+g1234567", "0.1.0") is not None
    assert older_than_host("0.1.0+g1234567", "0.1.0") is None
    assert older_than_host("0.2.0", "0.1.0") is None
    assert "not a thermrig version" in (older_than_host("banana", "0.1.0") or "")


def test_rig_info_says_whether_the_rig_runs_this_checkout(
    rigsims: dict[str, Path], isolated_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for binary, runs_this_checkout in ((rigsims["fresh"], True), (rigsims["older"], False)):
        monkeypatch.setenv("THERMRIG_RIGSIM", str(binary))
        with SimulatedRig(SimConfig(pacing=Pacing.accelerated(0))) as sim:
            r = thermrig("rig", "info", "--port", sim.port, env={**isolated_env, "COLUMNS": "200"}, timeout=60)
        assert r.returncode == 0, r.stderr
        [line] = [ln for ln in r.stdout.splitlines() if ln.startswith("this checkout: ")]
        if runs_this_checkout:  # "yes, ..." on a clean tree; the same revision with changes on a dirty one
            assert line.startswith(("this checkout: yes, ", "this checkout: this checkout's revision")), line
        else:
            assert line.startswith("this checkout: no: this checkout builds ") and "thermrig flash" in line, line


def test_campaign_refuses_another_protocol_and_warns_on_older_firmware(
    rigsims: dict[str, Path], tmp_path: Path, influx_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The test's own influxd (influx_env): a campaign with no server configured would start the user's
    # local one, which is left running for queries and would outlive the test.
    def campaign(port: str) -> Path:
        return CampaignFile("identity", file_drive(tmp_path, "16m"), rig={"port": port}).write(tmp_path)

    monkeypatch.setenv("THERMRIG_RIGSIM", str(rigsims["proto2"]))
    with SimulatedRig(SimConfig(pacing=Pacing.accelerated(0))) as sim:
        r = thermrig(*run_args(campaign(sim.port), tmp_path / "a"), env=influx_env, timeout=60)
    assert r.returncode == 1
    assert "speaks protocol 2" in r.stderr and "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1

    monkeypatch.setenv("THERMRIG_RIGSIM", str(rigsims["older"]))
    with SimulatedRig(SimConfig(pacing=Pacing.accelerated(0))) as sim:
        proc = start_run(
            campaign(sim.port), tmp_path / "b", influx_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        assert proc.stdout is not None
        seen = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (line := proc.stdout.readline()):
            seen.append(line)
            if "warning:" in line:
                break
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()
    assert any("older than this host" in line and "0.0.9" in line for line in seen), seen
    assert os.path.exists(tmp_path / "b")  # the campaign went ahead after the warning
