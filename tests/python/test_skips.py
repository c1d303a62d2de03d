"""make test's skips (skips.py, conftest.py's --strict-skips and --skip-list): a test skipped for what
make setup provides fails there; one skipped for what the machine cannot do, or for what another
target runs, stays skipped and is listed with its reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

TESTS = """
import pytest
from skips import elsewhere_unless, machine_cannot, machine_cannot_if


def test_socat_missing():
    pytest.skip("socat is not installed (scripts/setup_system.sh installs it)")


def test_no_fuse():
    machine_cannot("no /dev/fuse")


@machine_cannot_if("no /dev/loop-control")
def test_no_loop():
    pass


@machine_cannot_if(None)
def test_has_it():
    pass


@elsewhere_unless(False, "make emulator-smoke runs it")
def test_minutes():
    pass


@pytest.mark.xfail(strict=True, reason="a known fault")
def test_known():
    assert False
"""


def run(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_example.py").write_text(TESTS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q", "-rfs", *options]
    return subprocess.run([*cmd, "test_example.py"], capture_output=True, text=True, cwd=tmp_path, env=env)


def test_under_strict_skips_a_skip_for_what_setup_provides_fails_and_the_rest_are_listed(tmp_path: Path) -> None:
    r = run(tmp_path, "--strict-skips", "--skip-list", "skips.txt")
    assert r.returncode == 1, r.stdout
    assert "1 failed, 1 passed, 3 skipped, 1 xfailed" in r.stdout, r.stdout
    assert "FAILED test_example.py::test_socat_missing" in r.stdout
    assert "skipped under make test, where it must run: socat is not installed" in r.stdout
    assert (tmp_path / "skips.txt").read_text().splitlines() == [
        "test_example.py::test_minutes: runs elsewhere: make emulator-smoke runs it",
        "test_example.py::test_no_fuse: this machine cannot: no /dev/fuse",
        "test_example.py::test_no_loop: this machine cannot: no /dev/loop-control",
    ]


def test_without_strict_skips_every_skip_is_a_skip(tmp_path: Path) -> None:
    r = run(tmp_path)
    assert r.returncode == 0 and "2 passed" not in r.stdout and "1 passed, 4 skipped, 1 xfailed" in r.stdout, r.stdout
