"""The replayed campaigns (replayed_runs.py) were recorded on a world that kept up: every replay loads,
and a recording in which the plant, the virtual drive or fio fell behind past the lag bound does not."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from replayed_runs import REPLAYS, LaggingReplay, load

from thermrig.analysis.lag import BOUND_MS

REPLAY_FILES = sorted(REPLAYS.glob("*.json.gz"))


def test_there_are_replays() -> None:
    assert {p.name for p in REPLAY_FILES} >= {"recorded-950pro.json.gz", "cache-drops.json.gz"}


@pytest.mark.parametrize("path", REPLAY_FILES, ids=[p.name for p in REPLAY_FILES])
def test_every_replay_was_recorded_on_a_world_that_kept_up(path: Path) -> None:
    assert load(path)


def _with_late_sample(src: Path, dst: Path, counter: str, ms: float) -> Path:
    """src with one of its first run's `counter` samples (drive_smart's record of the simulator's lateness)
    set to `ms`: in its first phase, before the workload, where no window the analysis reads sees it."""
    with gzip.open(src, "rt") as f:
        runs = json.load(f)
    values = runs[0]["counters"][counter]["values"]
    values[1] = ms
    with gzip.open(dst, "wt") as f:
        json.dump(runs, f)
    return dst


@pytest.mark.parametrize(("counter", "source"), [("sim_plant_late_ms", "plant"), ("sim_drive_late_ms", "drive")])
def test_a_recording_that_fell_behind_past_the_bound_anywhere_does_not_load(
    tmp_path: Path, counter: str, source: str
) -> None:
    src = REPLAYS / "cache-drops.json.gz"
    assert load(_with_late_sample(src, tmp_path / "at.json.gz", counter, BOUND_MS))  # at the bound: kept up
    late = _with_late_sample(src, tmp_path / "late.json.gz", counter, BOUND_MS + 1)
    with pytest.raises(LaggingReplay, match=rf"-001: the {source} 501 ms late, past the 500 ms bound"):
        load(late)


def test_a_recording_whose_fio_log_ran_late_does_not_load(tmp_path: Path) -> None:
    with gzip.open(REPLAYS / "cache-drops.json.gz", "rt") as f:
        runs = json.load(f)
    stamps = runs[1]["jobs"][0]["stamps_ms"]
    runs[1]["jobs"][0]["stamps_ms"] = [*stamps[:3], *(t + 600 for t in stamps[3:])]  # a window of 1.6 s
    with gzip.open(tmp_path / "late.json.gz", "wt") as f:
        json.dump(runs, f)
    with pytest.raises(LaggingReplay, match=r"-002: the fio 6\d\d ms late"):
        load(tmp_path / "late.json.gz")
