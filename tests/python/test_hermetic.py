"""Every suite runs away from the user's own state (tests/hermetic.py, applied by tests/conftest.py): with
a user's state planted where thermrig, ssh and labgrid find it (a chassis profile whose heater gives
40 W, gains `rig tune` stored for the simulated rig, an ssh config that sends every connection nowhere,
LG_PROXY and THERMRIG_LAB_SSH_KEY, a config file naming a rig), a selection of the conformance suite,
the lab tests and the campaign tests, run as a user would start them, give the verdicts they give
without it: every one passes."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hermetic import KEPT, MARK, users
from skips import machine_cannot_if

from thermrig.hardware.profiles import load_chassis
from thermrig.link.rig_link import RigLink
from thermrig.link.stored_gains import Gains, rig_key, save_gains

REPO = Path(__file__).resolve().parents[2]
# Each is moved by one of the things planted when it is not kept from it: the chassis profile (the
# conformance suite's wiring check and a campaign's equilibrium: the heater cannot heat the chassis), the
# ssh config (a lab's upload over SSH to its test PC), LG_PROXY (every call to the lab's coordinator).
CHECKS_TO_WIRING = ("handshake", "commands", "bad-frames", "repeats", "telemetry", "wiring")
SELECTION = [
    # the rigsim checks in the suite's order up to the wiring check, which fails on a heater of 40 W
    *(f"tests/conformance/test_conformance.py::test_check[rigsim-{check}]" for check in CHECKS_TO_WIRING),
    "tests/python/test_campaign_run.py::test_equilibrium_is_judged_on_the_plant",
    "tests/python/test_lab_flash.py::test_flash_a_nucleo_place_uploads_on_its_test_pc_and_checks_the_version",
]
PLANTED_HEATER_W = 40.0
SSH_CONFIG = "Host *\n  ProxyCommand /bin/false\n"
# The account's home as ssh finds it (the password database: ssh reads no $HOME), shown in a mount
# namespace of its own with the real home's entries and the planted .ssh: $1 the home, $2 the planted
# home, $3 an empty folder to show the real one at; then the command.
IN_HOME = """set -e
mount --bind "$1" "$3"
mount -t tmpfs tmpfs "$1"
for e in "$3"/* "$3"/.[!.]*; do if [ -e "$e" ] || [ -L "$e" ]; then ln -s "$e" "$1/${e##*/}"; fi; done
rm -f "$1/.ssh" && ln -s "$2/.ssh" "$1/.ssh"
shift 3
exec "$@"
"""
needs_root = machine_cannot_if(None if os.geteuid() == 0 else "root, for a mount namespace (unshare -m)")


def plant(home: Path, sim_key: str) -> dict[str, str]:
    """A user's state under home; returns the environment a user starts the tests in."""
    config, data = home / ".config", home / ".local" / "share"
    profiles = config / "thermrig" / "profiles"
    profiles.mkdir(parents=True)
    shipped = (REPO / "hardware" / "profiles" / "chassis.toml").read_text()
    assert "max_w = 400.0 " in shipped
    (profiles / "chassis.toml").write_text(shipped.replace("max_w = 400.0 ", f"max_w = {PLANTED_HEATER_W} ", 1))
    (config / "thermrig" / "config.toml").write_text('[rig]\nport = "/dev/no-such-rig"\n')
    with pytest.MonkeyPatch.context() as here:
        here.setenv("XDG_DATA_HOME", str(data))
        save_gains(sim_key, Gains(0.5, 0.0, 0.0), "a tune gone wrong")
    (home / ".ssh").mkdir(mode=0o700)
    (home / ".ssh" / "config").write_text(SSH_CONFIG)
    (home / ".ssh" / "config").chmod(0o600)
    path = [p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / MARK).exists()]  # theirs
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("XDG_")},
        "PATH": os.pathsep.join(path),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(config),
        "XDG_DATA_HOME": str(data),
        "LG_PROXY": "nobody@lab-proxy.invalid",
        "THERMRIG_LAB_SSH_KEY": str(home / ".ssh" / "not-the-labs-key"),
    }


def in_home(home: Path, shown_at: Path, cmd: list[str]) -> list[str]:
    """cmd, where ssh finds the planted home's .ssh as the account's own."""
    account = pwd.getpwuid(os.getuid()).pw_dir
    shown_at.mkdir()
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", IN_HOME, "sh", account, str(home),
            str(shown_at), *cmd]  # fmt: skip


def outcomes(junit: Path) -> dict[str, str]:
    """Each test case's outcome in a junit XML report: passed, failed, error or skipped."""
    found = {}
    for case in ET.parse(junit).iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        name = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
        found[name] = {"failure": "failed"}.get(kinds[0], kinds[0]) if kinds else "passed"
    return found


def test_only_the_tools_and_the_runs_choices_are_kept_of_the_users_variables() -> None:
    assert not [k for k in os.environ if k.startswith(("LG_", "THERMRIG_")) and k not in KEPT]
    assert "THERMRIG_RIGSIM" in KEPT and "THERMRIG_ZEPHYR_ELF" in KEPT and "THERMRIG_PORT" not in KEPT
    assert users("THERMRIG_PORT") and users("LG_PROXY") and users("HOME") and not users("THERMRIG_RIGSIM")
    assert Path.cwd() != REPO and not Path.home().is_relative_to(pwd.getpwuid(os.getuid()).pw_dir)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"):
        assert Path(os.environ[var]).is_dir() and not Path(os.environ[var]).is_relative_to(REPO)


def test_every_variable_the_makefile_gives_the_tests_is_kept() -> None:
    """The tool paths the Makefile exports (and the choices it sets on a pytest line) reach the tests: the
    list of what is kept (tests/hermetic.py's KEPT, from thermrig.settings.TOOLS) holds each."""
    makefile = (REPO / "Makefile").read_text()
    given = {word.split("=")[0].split(":")[0] for word in makefile.split() if word.startswith("THERMRIG_")}
    exported = {line.split()[1] for line in makefile.splitlines() if line.startswith("export THERMRIG_")}
    assert exported >= {"THERMRIG_RIGSIM", "THERMRIG_DRIVE_PLUGIN", "THERMRIG_INFLUXD", "THERMRIG_ZEPHYR_ELF"}
    build_only = {"THERMRIG_ZEPHYR_OUT", "THERMRIG_ZEPHYR_ARGS"}  # scripts/build_zephyr.sh's, not the tests'
    assert sorted(given - build_only - KEPT) == []


@needs_root
@pytest.mark.timeout(900)
def test_the_verdicts_do_not_change_beside_a_users_state(link: RigLink, tmp_path: Path) -> None:
    assert link.info is not None
    home, clone = tmp_path / "home", tmp_path / "clone"
    clone.mkdir()
    env = plant(home, rig_key(link.info, None))  # the key the simulated rig's stored gains are kept under

    # What is planted is found where the tests are not kept from it: thermrig reads the profile, ssh the config.
    heater = [sys.executable, "-c", f"from {load_chassis.__module__} import load_chassis as c; print(c().heater_max_w)"]
    theirs = subprocess.run(heater, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert theirs == [str(PLANTED_HEATER_W)]
    ssh = in_home(home, tmp_path / "shown-home", ["ssh", "-G", "test-pc.invalid"])
    effective = subprocess.run(ssh, env=env, capture_output=True, text=True, check=True).stdout.splitlines()
    assert "proxycommand /bin/false" in effective
    ours = subprocess.run(["ssh", "-G", "test-pc.invalid"], capture_output=True, text=True, check=True).stdout
    assert "proxycommand" not in ours  # the tests' own ssh

    # The selection, started as a user starts it: from their clone, in their environment and home.
    junit = tmp_path / "junit.xml"
    pytest_run = [sys.executable, "-m", "pytest", *(str(REPO / t) for t in SELECTION), "-q", "-p", "no:cacheprovider",
                  "-p", "no:xdist", "--strict-skips", f"--junitxml={junit}", "-o", "junit_family=xunit1"]  # fmt: skip
    r = subprocess.run(
        in_home(home, tmp_path / "shown-home-2", pytest_run), env=env, cwd=clone, capture_output=True, text=True
    )
    found = outcomes(junit) if junit.exists() else {}
    assert found == dict.fromkeys(SELECTION, "passed"), r.stdout[-4000:] + r.stderr[-2000:]
    assert r.returncode == 0
    assert sorted(p.name for p in clone.iterdir()) == []  # nothing written where they run


def test_a_tool_found_under_the_users_home_stays_found(tmp_path: Path) -> None:
    """influxd's default is under ~/go/bin (go install's): the session, whose HOME is its own, is told where
    it is; a tool's variable the user did not set is not set for one found the same way."""
    influxd = tmp_path / "home" / "go" / "bin" / "influxd"
    influxd.parent.mkdir(parents=True)
    influxd.write_text("#!/bin/sh\n")
    tests = Path(__file__).resolve().parents[1]
    show = (
        "import os, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import hermetic; "
        "hermetic.enter_session(Path(sys.argv[2])); print(os.environ.get('THERMRIG_INFLUXD'), "
        "os.environ.get('THERMRIG_NODE'), os.environ['HOME'])"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("THERMRIG_INFLUXD", "THERMRIG_NODE", "GOPATH")}
    env |= {"HOME": str(tmp_path / "home"), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", show, str(tests), str(tmp_path / "session")], env=env,
                         capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert out == [str(influxd), "None", str(tmp_path / "session" / "home")]
