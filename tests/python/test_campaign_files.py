"""Campaign files: every class of mistake gets an error naming the file, line, key and what is expected;
the plan is complete, reproducible from its seed, and groups hardware changes."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from thermrig.campaign.plan import make_plan
from thermrig.campaign.spec import CampaignError, load_campaign

REPO = Path(__file__).resolve().parents[2]
GOOD = """\
[campaign]
name = "t1"
repeats = 2
seed = 3

[rig]
port = "sim"
speed = 20

[drive]
target = "/var/tmp/x.dat"
size = "64m"

[factors]
slot = ["top", "bottom", "underside"]
heatsink = ["none", "passive"]
profile = ["single_gpu_load", "dual_gpu_load"]

[[workload]]
name = "sw"
kind = "seq_write"
runtime_s = 10

[[workload]]
name = "mix"
kind = "mixed_random_sweep"
runtime_s = 5
steps = [100, 50, 0]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('name = "t1"', 'name = "my campaign"', r"c.toml:2: \[campaign\] name: 'my campaign' has spaces"),
        ("repeats = 2", "repeats = 0", r"c.toml:3: \[campaign\] repeats: 0; expected .*at least 1"),
        ("repeats = 2", 'repeats = "two"', r"c.toml:3: \[campaign\] repeats: 'two' is a str; expected a whole"),
        ("seed = 3", "sead = 3", r"c.toml:4: \[campaign\] sead: unknown key 'sead'; expected one of"),
        (
            'slot = ["top", "bottom", "underside"]',
            'slot = ["top", "attic"]',
            r"c.toml:15: \[factors\] slot: unknown slot 'attic'",
        ),
        (
            'profile = ["single_gpu_load", "dual_gpu_load"]',
            'profile = ["quad_gpu"]',
            r"c.toml:17: \[factors\] profile: .*no chassis profile \[quad_gpu\]",
        ),
        ('kind = "seq_write"', 'kind = "seq_wirte"', r"c.toml:21: \[workload\] kind: .*'seq_wirte' is not one of"),
        ("steps = [100, 50, 0]", "steps = [100, 150]", r"c.toml:28: \[workload\] steps: .*read percentages 0-100"),
        ('port = "sim"', "port = 5", r"c.toml:7: \[rig\] port: 5 is a int; expected a device path"),
        ("speed = 20", "speed = 0.5", r"c.toml:8: \[rig\] speed: 0.5; expected .*1 \(real time\) or more"),
        ('target = "/var/tmp/x.dat"', "", r"c.toml:10: \[drive\]: target is missing"),
        (
            'heatsink = ["none", "passive"]',
            "heatsink = []",
            r"c.toml:16: \[factors\] heatsink: \[\]; expected a non-empty",
        ),
        ("[drive]", "[drivee]", r"\[campaign\] drivee: unknown key 'drivee'"),
        (
            'size = "64m"',
            'size = "64m"\nprofile = "950pro_512"',
            r"c.toml:13: \[drive\] profile: profile is for the virtual drive",
        ),
    ],
)
def test_each_mistake_is_named_with_file_line_key_and_expectation(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    assert old in GOOD
    with pytest.raises(CampaignError, match=message):
        load_campaign(write(tmp_path, GOOD.replace(old, new, 1)))


def test_broken_toml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CampaignError, match=r"c.toml: not valid TOML"):
        load_campaign(write(tmp_path, "[campaign\nname = 1"))
    with pytest.raises(CampaignError, match=r"nope.toml: cannot read"):
        load_campaign(tmp_path / "nope.toml")
    with pytest.raises(CampaignError, match=r"c.toml:\d+: \[equilibrium\] timeout_s: 50.0 s is shorter"):
        load_campaign(write(tmp_path, GOOD + "\n[equilibrium]\nwindow_s = 100\ntimeout_s = 50\n"))


def test_plan_is_complete_reproducible_and_groups_hardware_changes(tmp_path: Path) -> None:
    c = load_campaign(write(tmp_path, GOOD))
    plan = make_plan(c)
    assert len(plan.runs) == 3 * 2 * 2 * 2 * 2  # slots x heatsinks x profiles x workloads x repeats
    cells = {(r.physical["slot"], r.physical["heatsink"], r.profile, r.workload.name, r.repeat) for r in plan.runs}
    assert len(cells) == len(plan.runs)
    assert plan.physical_changes() == 3 * 2 - 1  # one block per hardware configuration
    assert [r.run_id for r in make_plan(c).runs] == [r.run_id for r in plan.runs]
    order = [(r.physical["slot"], r.profile, r.workload.name) for r in plan.runs]
    assert order == [(r.physical["slot"], r.profile, r.workload.name) for r in make_plan(c, 3).runs]
    assert order != [(r.physical["slot"], r.profile, r.workload.name) for r in make_plan(c, 4).runs]
    assert all(r.run_id == f"t1-{r.index:03d}" for r in plan.runs)
    assert plan.total_s() > 0
    unseeded = load_campaign(write(tmp_path, GOOD.replace("seed = 3\n", "")))
    seeds = {make_plan(unseeded).seed for _ in range(5)}
    assert len(seeds) > 1  # without a seed in the file each plan draws one, and records it


@pytest.mark.parametrize("example", sorted((REPO / "examples").glob("*.toml")), ids=lambda p: p.name)
def test_every_example_campaign_loads_and_plans(example: Path) -> None:
    plan = make_plan(load_campaign(example))
    assert plan.runs and all(itertools.starmap(lambda a, b: a.index + 1 == b.index, itertools.pairwise(plan.runs)))


def test_the_cli_shows_the_section_of_a_mistake(tmp_path: Path) -> None:
    import subprocess
    import sys

    bad = write(tmp_path, GOOD.replace('slot = ["top", "bottom", "underside"]', 'slot = ["attic"]'))
    r = subprocess.run([sys.executable, "-m", "thermrig.cli", "plan", str(bad)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "c.toml:15: [factors] slot: unknown slot 'attic'" in r.stderr  # not eaten as markup, not wrapped


VIRTUAL = GOOD.replace('target = "/var/tmp/x.dat"\nsize = "64m"', 'target = "virtual"\nprofile = "950pro_512"')


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            'profile = "950pro_512"',
            'profile = "990pro"',
            r"c.toml:12: \[drive\] profile: '990pro' is not a virtual drive",
        ),
        (
            'port = "sim"',
            'port = "/dev/ttyACM0"',
            r"c.toml:11: \[drive\] target: the virtual drive lives in the simulated",
        ),
        (
            'profile = "950pro_512"',
            'profile = "950pro_512"\nscale = 2',
            r"c.toml:13: \[drive\] scale: 2.0; expected a band",
        ),
        (
            'profile = "950pro_512"',
            'profile = "950pro_512"\nfast_fill = "yes"',
            r"c.toml:13: \[drive\] fast_fill: .*true or false",
        ),
    ],
)
def test_virtual_drive_mistakes(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert old in VIRTUAL
    with pytest.raises(CampaignError, match=message):
        load_campaign(write(tmp_path, VIRTUAL.replace(old, new, 1)))


def test_a_virtual_drive_campaign_loads_with_its_profile_as_model_tag(tmp_path: Path) -> None:
    c = load_campaign(write(tmp_path, VIRTUAL))  # every kind runs on the virtual drive, mixed sweeps too
    assert c.drive.is_virtual and c.drive.profile == "950pro_512" and c.drive.model == "950pro_512"
    assert c.drive.scale == 0.1 and c.drive.fast_fill
    assert "mixed_random_sweep" in {w.kind for w in c.workloads}


def test_run_ids_carry_the_campaign_folders_start_stamp(tmp_path: Path) -> None:
    c = load_campaign(write(tmp_path, GOOD))
    first = make_plan(c, 3, "20261122T050000").runs
    again = make_plan(c, 3, "20261122T060000").runs
    assert first[0].run_id == "t1-20261122T050000-001"
    assert {r.run_id for r in first}.isdisjoint(r.run_id for r in again)  # a rerun never reuses a run id
    assert [r.run_id[-3:] for r in first] == [f"{i:03d}" for i in range(1, len(first) + 1)]


def test_a_workload_error_is_placed_at_its_key_whatever_the_workload_is_named(tmp_path: Path) -> None:
    """The key at fault comes with the error, not from the words of its message: a workload named
    "jobs" (which holds "bs") with a bad runtime_s is placed at runtime_s."""
    text = GOOD.replace('name = "sw"', 'name = "jobs"').replace("runtime_s = 10", "runtime_s = 0", 1)
    path = write(tmp_path, text)
    line = next(i for i, s in enumerate(text.splitlines(), start=1) if s == "runtime_s = 0")
    with pytest.raises(CampaignError, match=rf"c.toml:{line}: \[workload\] runtime_s: workload 'jobs': runtime_s"):
        load_campaign(path)


def test_bounds_are_read_with_the_key(tmp_path: Path) -> None:
    """Each bounded key refused where it is read, at its own line, for a value just past its bound."""
    for section, old, new in [
        ("drive", 'size = "64m"', 'size = "64m"\nfilesystem = "xfs"'),
        ("equilibrium", "", "\n[equilibrium]\nrate_c_per_min = 0\n"),
        ("cooldown", "", "\n[cooldown]\nmargin_c = -1\n"),
        ("cooldown", "", '\n[cooldown]\nmode = "cold"\n'),
        ("campaign", "seed = 3", "seed = 3\nbaseline_s = -1"),
    ]:
        text = GOOD.replace(old, new, 1) if old else GOOD + new
        key = new.strip().splitlines()[-1].split(" =")[0]
        line = next(i for i, s in enumerate(text.splitlines(), start=1) if s.startswith(f"{key} ="))
        with pytest.raises(CampaignError, match=rf"c.toml:{line}: \[{section}\] {key}: .*; expected"):
            load_campaign(write(tmp_path, text))
