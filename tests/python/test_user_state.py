"""No test reads or writes the user's own state (conftest.py's user_state_away): with a user's state laid
where a test would find it (a history of recorded runs in the working directory's thermrig-runs/, as
`make demo` and `thermrig plan` leave there, stored gains for the simulated rig, a config.toml naming a
rig and a server, a running `thermrig sim`'s state file), the tests that would read it give their exact
answers still."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from thermrig.db.influx_settings import configured
from thermrig.link.rig_link import RigLink
from thermrig.link.stored_gains import Gains, load_gains, rig_key, save_gains
from thermrig.settings import RunningSim, config_file, running_sim

REPO = Path(__file__).resolve().parents[2]
PUGET = REPO / "examples" / "puget-slots-gpu-heat.toml"
PUGET_PLANNED = "planned 15h05m00s on one place"  # test_lab_assign's figure, from the fixed guesses
# Tests that read the user's state when they are not kept from it: the Puget plan (the history folder,
# the model's estimate cache under it) and this file's look at every other place.
SENSITIVE = [
    "tests/python/test_lab_assign.py::test_the_puget_matrix_on_one_and_on_four_places",
    "tests/python/test_user_state.py::test_a_test_finds_none_of_the_users_state",
]


def test_a_test_finds_none_of_the_users_state(link: RigLink, user_state_away: Path) -> None:
    assert not Path("thermrig-runs").exists() and Path.cwd().is_relative_to(user_state_away)
    assert not config_file().exists() and config_file().is_relative_to(user_state_away)
    assert running_sim() is None and configured() is None
    assert link.info is not None and link.gains is None  # the simulated rig runs its firmware's gains
    assert os.environ.get("THERMRIG_PORT") is None and os.environ.get("THERMRIG_HARDWARE_DIR") is None


def _lay_a_users_state(home: Path, clone: Path, sim_key: str) -> dict[str, str]:
    """A user's state under home, their working directory clone; returns the environment that finds it."""
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_RUNTIME_DIR": str(home / "run"),
    }
    # A recorded run of the Puget campaign's rig, as a campaign's folder keeps it (campaign/run/manifest.json).
    run = clone / "thermrig-runs" / "puget-slots-gpu-heat" / "run-001"
    run.mkdir(parents=True)
    manifest = {
        "rig": {"name": "rig1"},
        "status": "ok",
        "index": 1,
        "start_utc": "2026-01-01T00:00:00Z",
        "factors": {"slot": "top", "heatsink": "none", "profile": "single_gpu_idle"},
        "workload": {"kind": "seq_read", "runtime_s": 300},
        "equilibrium": {"after_s": 7777.0, "rule": "fit", "transition": "driven"},
        "cooldown": {"after_s": 5555.0, "mode": "active"},
    }
    (run / "manifest.json").write_text(json.dumps(manifest))
    (home / "config" / "thermrig").mkdir(parents=True)
    (home / "config" / "thermrig" / "config.toml").write_text(
        '[rig]\nport = "/dev/no-such-rig"\n\n[influx]\nurl = "http://127.0.0.1:9"\nbucket = "theirs/autogen"\n'
    )
    (home / "run" / "thermrig").mkdir(parents=True)
    # a `thermrig sim` that runs (this process stands in for it: its pid is alive)
    sim = {"port": "/dev/no-such-sim", "pid": os.getpid(), "control": str(home / "run" / "none.sock")}
    (home / "run" / "thermrig" / "sim.json").write_text(json.dumps({**sim, "firmware": "rigsim", "drive": None}))
    with pytest.MonkeyPatch.context() as here:
        here.setenv("XDG_DATA_HOME", env["XDG_DATA_HOME"])
        save_gains(sim_key, Gains(0.5, 0.0, 0.0), "a user's tune")
    return env


def test_the_tests_give_their_answers_beside_a_users_state(link: RigLink, tmp_path: Path) -> None:
    assert link.info is not None
    sim_key = rig_key(link.info, None)  # the key the simulated rig's stored gains are kept under
    home, clone = tmp_path / "home", tmp_path / "clone"
    env = _lay_a_users_state(home, clone, sim_key)

    # The state laid is found by thermrig where the tests are not kept from it: each seed counts.
    lab_plan = [sys.executable, "-m", "thermrig.cli", "lab", "plan", str(PUGET), "--no-model", "--places", "1"]
    theirs = subprocess.run(lab_plan, capture_output=True, text=True, env=env, cwd=clone, check=True).stdout
    assert PUGET_PLANNED not in theirs and "recorded runs of rig rig1" in theirs
    with pytest.MonkeyPatch.context() as here:
        for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"):
            here.setenv(var, env[var])
        sim = running_sim()
        assert isinstance(sim, RunningSim) and sim.port == "/dev/no-such-sim"
        influx = configured()
        assert influx is not None and influx.url == "http://127.0.0.1:9"
        stored = load_gains(sim_key)
        assert stored is not None and stored.gains.kp == 0.5

    # The tests, run from that working directory with that environment, give their answers.
    tests = [str(REPO / t.split("::")[0]) + "::" + t.split("::")[1] for t in SENSITIVE]
    r = subprocess.run(
        [sys.executable, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        capture_output=True,
        text=True,
        env=env,
        cwd=clone,
        timeout=300,
    )
    assert r.returncode == 0 and f"{len(SENSITIVE)} passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
    assert sorted(p.name for p in clone.iterdir()) == ["thermrig-runs"]  # nothing written where they run
    assert [p.name for p in (clone / "thermrig-runs").iterdir()] == ["puget-slots-gpu-heat"]
