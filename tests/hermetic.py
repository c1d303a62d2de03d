"""Every suite under tests/ runs away from the user's own state (tests/conftest.py applies it): its own
HOME and XDG folders, its own working directory, none of the user's THERMRIG_* or LG_* variables, and
an ssh that reads no ~/.ssh/config. What the user keeps are the tools (KEPT): where rigsim, the firmware
images, influxd, node, ... are, which the Makefile and wt-env.sh point at on purpose, and the few
variables that choose what a test run covers.

Two levels: the session's (the process environment, set before collection and restored after, what the
session's fixtures and every child a test starts inherit) and each test's (fresh, empty user folders and
working directory of its own: tests/conftest.py's user_state_away)."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from thermrig.settings import TOOLS, find_tool

# The variables a test run keeps from the environment it is started in: where each external tool is
# (thermrig.settings.TOOLS: the Makefile exports THERMRIG_RIGSIM, THERMRIG_DRIVE_PLUGIN, THERMRIG_INFLUXD,
# THERMRIG_ZEPHYR_ELF, THERMRIG_ZEPHYR_BOARD, THERMRIG_PICO_UF2 from there), and what picks the tests a
# run covers or the archives a firmware build's test reads.
TOOL_VARIABLES = tuple(sorted(t.env for t in TOOLS.values() if t.env))
RUN_VARIABLES = (
    "THERMRIG_TOOLCHAINS",  # the pinned toolchain archives (the firmware builds' tests)
    "THERMRIG_FIO_EXAMPLES",  # fio's own example jobs, which test_lab_job checks too when named
    "THERMRIG_CONFORMANCE_RP2040",  # make conformance-rp2040: which firmwares the conformance suite runs
    "THERMRIG_EMULATOR_SMOKE",  # make emulator-smoke: the STM32 emulator's long tests
)
KEPT = frozenset(TOOL_VARIABLES + RUN_VARIABLES)

# The user's folders: a session's own (XDG_CACHE_HOME: caches may outlive a test), and each test's own.
SESSION_FOLDERS = ("XDG_CACHE_HOME",)
TEST_FOLDERS = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR")
# Besides THERMRIG_* and LG_*: the user's ssh agent, whose keys a test's ssh would offer.
USER_VARIABLES = ("SSH_AUTH_SOCK",)

SSH_WRAPPER = """#!/bin/sh
# The tests' ssh: the real one, reading the session's config instead of the user's ~/.ssh/config (which
# ssh finds from the password database, not from $HOME).
exec {ssh} -F {config} "$@"
"""
MARK = ".thermrig-tests-bin"  # in the folder of the tests' ssh
SSH_CONFIG = """# The tests' ssh client configuration (tests/hermetic.py): none of the user's.
Host *
  UserKnownHostsFile {known_hosts}
"""


def users(name: str) -> bool:
    """Whether the variable `name` is the user's, which no test sees."""
    if name in KEPT:
        return False
    return name.startswith(("THERMRIG_", "LG_")) or name in USER_VARIABLES or name in TEST_FOLDERS + SESSION_FOLDERS


@dataclass(frozen=True)
class SessionState:
    """The session's own folder under `root`, and the environment it was started with (restored after)."""

    root: Path
    started_with: dict[str, str]


def session_environment(environ: Mapping[str, str], root: Path) -> dict[str, str]:
    """The environment a test session runs in: `environ` without the user's variables, its folders under
    root (made), and the tests' ssh first on PATH."""
    env = {k: v for k, v in environ.items() if not users(k)}
    for var in TEST_FOLDERS + SESSION_FOLDERS:
        (root / var.lower()).mkdir(parents=True, exist_ok=True)
        env[var] = str(root / var.lower())
    path = environ.get("PATH", os.defpath).split(os.pathsep)
    ssh = shutil.which("ssh", path=os.pathsep.join(p for p in path if not (Path(p) / MARK).exists()))
    if ssh is not None:  # the real one, not an outer session's wrapper (xdist's workers, a nested pytest)
        bin_dir = root / "bin"
        bin_dir.mkdir(exist_ok=True)
        (bin_dir / MARK).touch()
        config = root / "ssh_config"
        config.write_text(SSH_CONFIG.format(known_hosts=root / "known_hosts"))
        wrapper = bin_dir / "ssh"
        wrapper.write_text(SSH_WRAPPER.format(ssh=ssh, config=config))
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        env["PATH"] = os.pathsep.join([str(bin_dir), *path])
    return env


def enter_session(root: Path) -> SessionState:
    """The process environment replaced by session_environment (the working directory is each fixture's),
    and each tool found where it is found now: one whose default is under the user's home (influxd under
    ~/go/bin) gets its variable, set to where it is."""
    state = SessionState(root, dict(os.environ))
    theirs = {name: find_tool(name) for name, tool in TOOLS.items() if tool.env}
    env = session_environment(os.environ, root)
    os.environ.clear()
    os.environ.update(env)
    for name, path in theirs.items():
        var = TOOLS[name].env
        if var is not None and var not in os.environ and path.exists() and find_tool(name) != path:
            os.environ[var] = str(path)
    return state


def leave_session(state: SessionState) -> None:
    os.environ.clear()
    os.environ.update(state.started_with)
    shutil.rmtree(state.root, ignore_errors=True)


def own_folders(root: Path) -> dict[str, str]:
    """A test's own user folders and working directory under root, made empty: variable -> folder
    ("PWD": the working directory)."""
    folders = {var: root / var.lower() for var in TEST_FOLDERS} | {"PWD": root / "work"}
    for folder in folders.values():
        folder.mkdir(parents=True)
    return {var: str(folder) for var, folder in folders.items()}
