"""The newcomer's path, as a test: the README's commands in the order it shows them, in a temp folder, on
the simulated rig; then its "Your first rig" steps with `--sim` (bring-up, tune, self-test) and a campaign
from the packaged examples. A command the README shows that does not run fails this test.

Long-running commands are run as a user would: `thermrig sim` in the background until its port (or the
virtual drive's NBD URI) is printed, then Ctrl-C; `thermrig rig watch` for a few seconds."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from interruptible import with_default_sigint
from sim_helpers import served_port

REPO = Path(__file__).resolve().parents[2]
THERMRIG = [sys.executable, "-m", "thermrig.cli"]
# Reading the README: the commands after the two make commands, and the first-rig steps.
TRY_IT = "Then try the agent yourself"
FIRST_RIG = "## Your first rig"


def readme() -> str:
    return (REPO / "README.md").read_text()


def try_it_commands() -> list[str]:
    """The sh block that follows 'Then try the agent yourself', comments dropped."""
    text = readme()
    block = re.search(r"```sh\n(.*?)```", text[text.index(TRY_IT) :], flags=re.S)
    assert block, "the README has no command block after its two commands"
    lines = [line.split(" #", 1)[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line]


def first_rig_steps() -> list[str]:
    """The `thermrig rig ...` commands of the README's 'Your first rig' steps, in order."""
    section = readme().split(FIRST_RIG, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"`(thermrig rig \w+[^`]*)`", section)


def run(args: list[str], env: dict[str, str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    res = subprocess.run([*THERMRIG, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    assert res.returncode == 0, f"`thermrig {shlex.join(args)}` exited {res.returncode}:\n{res.stdout}\n{res.stderr}"
    return res


def background(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        with_default_sigint([*THERMRIG, *args]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )


def interrupt(proc: subprocess.Popen[str]) -> None:
    """Ctrl-C, as the README says; the simulator stops cleanly."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""


def nbd_uri(proc: subprocess.Popen[str]) -> str:
    """The URI `thermrig sim --drive` prints before its port."""
    assert proc.stdout is not None
    for _ in range(8):
        found = re.search(r"(nbd\+unix://\S+|nbd://\S+)", proc.stdout.readline())
        if found:
            return found.group(1)
    raise AssertionError("thermrig sim --drive printed no NBD URI")


def test_the_readme_shows_the_path() -> None:
    assert next(c.split()[:3] for c in try_it_commands() if c.startswith("thermrig")) == ["thermrig", "sim"]
    assert [s.split()[2] for s in first_rig_steps()] == ["bringup", "tune", "selftest"]


@pytest.mark.timeout(1800)  # a campaign, a tune and a self-test, one after another
def test_a_newcomer_follows_the_readme_on_the_simulated_rig(influx_env: dict[str, str], tmp_path: Path) -> None:
    env = {**influx_env, "COLUMNS": "150"}
    home = tmp_path / "newcomer"
    home.mkdir()
    sim: subprocess.Popen[str] | None = None
    ran: list[str] = []
    try:
        for line in try_it_commands():
            if line.startswith(". "):  # activating the venv: this test runs the venv's Python already
                continue
            args = shlex.split(line)[1:]
            ran.append(line)
            if args == ["sim"]:
                sim = background(args, env, home)
                served_port(sim)
            elif args[:2] == ["sim", "--drive"]:
                assert sim is not None
                interrupt(sim)  # one simulated rig at a time, as a user in one shell would
                sim = background(args, env, home)
                uri = nbd_uri(sim)
                info = subprocess.run(["nbdinfo", uri], capture_output=True, text=True, timeout=60)
                assert info.returncode == 0 and "export-size" in info.stdout, info.stderr
                interrupt(sim)
                sim = None
            elif args[:2] == ["rig", "watch"]:
                out = run([*args, "--seconds", "2"], env, home, timeout=60).stdout
                assert "chassis_air" in out
            elif args[0] == "run":
                # The README's example paths are the repository's; a newcomer's copy comes from the package.
                run(["examples", "--copy", "examples"], env, home, timeout=60)
                example = home / args[1]
                assert example.is_file(), f"`thermrig examples --copy` did not bring {args[1]}"
                # The drive's file in this test's folder: the example's /var/tmp path is the user's, and
                # would outlive the test (and meet another run's).
                text = example.read_text()
                target = re.search(r'^target = "(/var/tmp/[^"]+)"$', text, flags=re.M)
                assert target is not None, f"{args[1]} no longer writes to a file in /var/tmp"
                example.write_text(text.replace(target[1], str(home / Path(target[1]).name)))
                out = run(args, env, home, timeout=900).stdout
                assert "done" in out
            elif args[0] == "throttle":
                out = run(args, env, home, timeout=120).stdout
                assert "onset" in out.lower()
            else:
                run(args, env, home, timeout=300)
        assert sim is None, "the README leaves a simulator running"
        for step in first_rig_steps():
            args = [a for a in shlex.split(step)[1:] if a != "--destructive"]
            ran.append(step)
            run([*args, "--sim"], env, home, timeout=600)  # each exits non-zero when a step or check fails
    finally:
        if sim is not None and sim.poll() is None:
            sim.kill()
    assert len(ran) >= 7, ran


@pytest.mark.parametrize("broken", ["thermrig sim --no-such-flag", "thermrig rig nosuch"])
def test_a_command_that_does_not_run_fails_the_path(broken: str, isolated_env: dict[str, str], tmp_path: Path) -> None:
    res = subprocess.run([*THERMRIG, *shlex.split(broken)[1:]], capture_output=True, text=True, env=isolated_env)
    assert res.returncode != 0
