"""Which place runs which run: fixed hardware tags honoured, the operator asked only where the hardware
is not fixed, the places kept equally busy; and the planned time of the Puget matrix on a lab."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from thermrig.lab.assign import PlaceHardware, RunNeed, assign
from thermrig.lab.errors import LabError

REPO = Path(__file__).resolve().parents[2]
SLOTS = ("top", "bottom", "upright", "underside")


def runs(n_per_slot: int = 3, estimate_s: float = 100.0) -> list[RunNeed]:
    return [
        RunNeed(f"r{s}{i}", {"slot": slot, "heatsink": "none"}, estimate_s + i)
        for s, slot in enumerate(SLOTS)
        for i in range(n_per_slot)
    ]


def test_places_with_fixed_slots_take_their_slots_runs_without_a_prompt() -> None:
    lab = [PlaceHardware(f"p-{slot}", {"slot": slot, "heatsink": "none"}) for slot in SLOTS]
    split = assign(runs(), lab)
    for lane in split.lanes:
        slot = lane.place.removeprefix("p-")
        assert len(lane.runs) == 3 and lane.prompts == []
        assert all(r.startswith(f"r{SLOTS.index(slot)}") for r in lane.runs)
    assert split.makespan_s == 100 + 101 + 102


def test_a_place_that_fixes_nothing_asks_the_operator_and_shares_the_load() -> None:
    lab = [PlaceHardware("fixed-top", {"slot": "top"}), PlaceHardware("bench", {"board": "sim"})]
    split = assign(runs(n_per_slot=2), lab)
    fixed, bench = split.lanes
    assert set(fixed.runs) == {"r00", "r01"}  # slot top: to the place that has it (heatsink still asked)
    assert fixed.prompts == fixed.runs  # heatsink is not fixed there
    assert len(bench.runs) == 6 and bench.prompts == bench.runs
    assert split.place_of("r31") == "bench"


def test_a_run_no_place_can_take_is_one_line() -> None:
    lab = [PlaceHardware("fixed-top", {"slot": "top", "heatsink": "none"})]
    with pytest.raises(LabError) as err:
        assign(runs(n_per_slot=1), lab)
    assert str(err.value) == (
        "run r10 needs heatsink=none, slot=bottom: no place has that hardware or lets the operator set it"
    )


def test_longest_runs_first_keep_the_places_equally_busy() -> None:
    lab = [PlaceHardware(f"p{i}", {}) for i in range(3)]
    needs = [RunNeed(f"r{i}", {}, s) for i, s in enumerate([50, 40, 30, 30, 20, 20, 10])]
    split = assign(needs, lab)
    assert sorted(lane.busy_s for lane in split.lanes) == [60, 70, 70]
    assert split.lanes[0].runs == ["r0", "r5"]  # in the plan's order


def test_the_puget_matrix_on_one_and_on_four_places() -> None:
    cmd = [sys.executable, "-m", "thermrig.cli", "lab", "plan", str(REPO / "examples/puget-slots-gpu-heat.toml")]
    cmd.append("--no-model")  # the fixed guesses: the split, not the estimate
    one = subprocess.run([*cmd, "--places", "1"], capture_output=True, text=True, check=True).stdout
    four = subprocess.run([*cmd, "--places", "4"], capture_output=True, text=True, check=True).stdout
    # order = "least-change": 15 changes of condition, the 4 between profiles under 1 °C apart keep their
    # cool-down, whatever order is drawn
    assert "planned 15h05m00s on one place, 15h05m00s on 1 places (1.00x" in one
    assert "planned 15h05m00s on one place, 3h50m00s on 4 places (3.93x" in four
