"""The planner without history: the calibrated rig model walked through a small plan in its order with
its rules (campaign.model_estimate on testbed.simulated_rig_model: the stepped simulated rig, the drive model's
heat for each workload), its estimates against the fixed guesses and against each other, the sources
`thermrig plan` names, and recorded runs winning over the model where they hold one like a run."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from campaign_helpers import thermrig

from thermrig.campaign.history import START, History, RunRecord
from thermrig.campaign.model_estimate import model_history
from thermrig.campaign.plan import COOLDOWN_GUESS_S, EQUILIBRIUM_GUESS_S, HISTORY, MODEL, Plan, make_plan
from thermrig.campaign.plan_estimate import cache_file
from thermrig.campaign.spec import load_campaign
from thermrig.cli.durations import hms
from thermrig.testbed.simulated_rig_model import rig_model

# One slot, the coolest and the hottest profile, two runs of each in blocks from the coolest up: a run
# from a cold rig, one after a cool-down in its condition (kept: the next is the same), a skipped
# cool-down before the change, a driven change to the hotter profile, and one more after it.
CAMPAIGN = """
[campaign]
name = "modelled"
repeats = 2
seed = 3
order = "least-change"

[rig]
port = "sim"
name = "rig1"

[drive]
target = "virtual"
profile = "950pro_512"

[equilibrium]
rate_c_per_min = 0.2
window_s = 60
timeout_s = 1800
channels = ["chassis_air", "drive_ctrl", "drive_nand"]
rule = "fit"
transition = "driven"

[cooldown]
margin_c = 1.0
timeout_s = 1800
mode = "active"
before_change = "skip"

[factors]
slot = ["top"]
heatsink = ["none"]
profile = ["single_gpu_idle", "dual_gpu_load"]

[[workload]]
name = "sw"
kind = "seq_write"
runtime_s = 60
"""


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Plan]]:
    """The campaign file and its plan with the model's walk (about 1,500 rig s on the stepped rig)."""
    path = tmp_path_factory.mktemp("plan-model") / "modelled.toml"
    path.write_text(CAMPAIGN)
    plan = make_plan(load_campaign(path))
    yield path, plan.with_model(model_history(plan, rig_model))


def test_the_model_walks_the_plan_s_own_transitions_with_its_rules(walked: tuple[Path, Plan]) -> None:
    _, plan = walked
    assert plan.model is not None
    records = plan.model.runs
    assert [r.profile for r in records] == ["single_gpu_idle"] * 2 + ["dual_gpu_load"] * 2  # coolest first
    assert [r.before for r in records] == [START, "single_gpu_idle", "single_gpu_idle", "dual_gpu_load"]
    # the run before the change has no cool-down: the next run's driven transition takes the drive on
    assert [r.cooldown_skipped for r in records] == [False, True, False, False]
    assert records[1].cooldown_s == 0.0 and all(r.cooldown_s > 0 for r in (records[0], records[2], records[3]))
    # a change to the hotter profile takes longer than a run after a cool-down in its own condition
    assert records[2].equilibrium_s > records[3].equilibrium_s + 30
    assert records[0].equilibrium_s > records[1].equilibrium_s + 30  # from a cold rig likewise
    assert all(r.baseline_s == 0.0 for r in records)  # the tail baseline: no rig time of its own
    for run in plan.runs:
        e = plan.phases(run)
        assert e.equilibrium_from == MODEL and e.cooldown_from == MODEL
        assert e.equilibrium_s != EQUILIBRIUM_GUESS_S and e.workload_s == 60
        assert (e.cooldown_s == 0.0) == plan.skips_cooldown(run) and e.cooldown_s != COOLDOWN_GUESS_S
    assert plan.total_s() < make_plan(plan.campaign).total_s()  # the guesses: 300 s each


def test_recorded_runs_win_over_the_model_where_they_hold_one_like_a_run(walked: tuple[Path, Plan]) -> None:
    _, plan = walked
    first = plan.runs[0]
    other = "seq_read 60 s"  # another workload than the plan's: only the run's own profile matches
    recorded = RunRecord("rig1", START, first.profile, other, "fit", "active", 123.0, 0.0, 45.0, "driven")
    mixed = dataclasses.replace(plan, history=History("rig1", (recorded,), "past"))
    e = mixed.phases(first)
    assert (e.equilibrium_s, e.equilibrium_from) == (123.0, HISTORY)
    assert (e.cooldown_s, e.cooldown_from) == (45.0, HISTORY) and e.source == HISTORY
    hotter = mixed.phases(plan.runs[2])  # nothing recorded from single-GPU idle to dual-GPU load...
    # ...but a change of condition was: history's median of changed conditions, its cool-down the model's
    assert hotter.equilibrium_from == HISTORY and hotter.cooldown_from == MODEL
    assert hotter.source == "history+model"


def test_plan_names_the_model_as_the_source_of_its_estimates(
    walked: tuple[Path, Plan], tmp_path: Path, isolated_env: dict[str, str]
) -> None:
    """The walk as `thermrig plan` keeps it under --history, read back by the next plan (and by `thermrig
    run`) without walking again; without it and --no-model, the fixed guesses."""
    path, plan = walked
    history = tmp_path / "runs"
    guessed = thermrig("plan", str(path), "--history", str(history), "--no-model", env=isolated_env)
    assert guessed.returncode == 0, guessed.stderr
    assert "estimates from fixed guesses (300 s equilibrium, 300 s cool-down): equilibrium of 4/4" in " ".join(
        guessed.stdout.split()
    )
    assert plan.model is not None
    cache = cache_file(plan, history)
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps([dataclasses.asdict(r) for r in plan.model.runs]))
    out = thermrig("plan", str(path), "--history", str(history), "--no-model", env=isolated_env)
    assert out.returncode == 0, out.stderr
    said = " ".join(out.stdout.split())
    assert (
        "estimates from the calibrated rig model run through this plan: equilibrium of 4/4 runs, cool-down of 4/4"
        in said
    )
    assert f"estimated {hms(plan.total_s())} (" in said
