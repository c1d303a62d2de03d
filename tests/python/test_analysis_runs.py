"""A run's summary, the sensor ranking and the campaign's effects on synthetic runs with known answers."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from thermrig.analysis.effects import cells, effects, welch_ci
from thermrig.analysis.run_analysis import analyse_run
from thermrig.analysis.run_data import CONTROLLER, RunData, Trace
from thermrig.analysis.sensor_ranking import rank_sensors
from thermrig.analysis.throttle_summary import JobLog

T0 = 1_700_000_000_000  # Unix ms
COMPOSITE = "drive_smart.composite_c"


def synthetic_run(run: str, onset_s: int, lag_c: float, slot: str, depth: float = 40.0) -> RunData:
    """Workload from T0 + 100 s for 120 s. The controller reaches 70 C exactly at the onset; the composite
    sensor lags it by a slot-dependent lag_c; ambient stays at 25 C. Cool-down after the workload."""
    t = np.arange(T0, T0 + 600_000, 1000, dtype=float)
    start = T0 + 100_000
    end = start + 120_000
    onset_ms = start + onset_s * 1000
    heat = np.clip((t - start) / (onset_ms - start), 0, None) * 30.0  # 40 -> 70 C at the onset
    ctrl = np.where(t <= end, 40.0 + heat, 40.0 + heat[int((end - T0) / 1000)] * np.exp(-(t - end) / 30_000))
    ctrl = np.where(t < start, 40.0, ctrl)
    bw = [1000.0] * (onset_s - 1) + [1000.0 * (1 - depth / 100)] * (121 - onset_s)
    counters = {"tmt1_count": Trace(t, np.where(t > onset_ms, 3.0, 1.0)), "power_state": Trace(t, (t > onset_ms) * 2.0)}
    return RunData(
        run=run,
        tags={"campaign": "c", "run": run, "slot": slot, "profile": "p"},
        jobs=[JobLog(1, "write", tuple(int(start + 1000 * (i + 1)) for i in range(120)), tuple(bw))],
        temps={
            CONTROLLER: Trace(t, ctrl),
            COMPOSITE: Trace(t, ctrl - lag_c),
            "rig_telemetry.ambient_c": Trace(t, np.full(len(t), 25.0)),
        },
        counters=counters,
        phases={"baseline": T0 + 80_000, "workload": start, "cooldown": end},
        status="ok",
        end_ms=int(t[-1]),
    )


def test_a_runs_summary_on_a_run_with_known_answers() -> None:
    s = analyse_run(synthetic_run("r1", 50, 8.0, "top"), thresholds=(60.0, 70.0))
    assert s.throttle.onset_s == 50.0 and s.throttle.depth_pct == pytest.approx(40.0)
    assert s.at_onset_c[CONTROLLER] == pytest.approx(70.0, abs=0.7)
    assert s.at_onset_c[COMPOSITE] == pytest.approx(62.0, abs=0.7)
    ctrl_above = s.above_s[CONTROLLER]
    # 70 C from the onset to the job's end (112 C there), then 30 s x ln(72/30) of the exponential cool-down
    assert ctrl_above[70.0] == pytest.approx(70 + 30 * np.log(72 / 30), abs=1.5)
    assert s.above_s["rig_telemetry.ambient_c"][60.0] == 0.0
    assert s.baseline_ctrl_c == pytest.approx(40.0)
    assert s.recovery_s == pytest.approx(30 * np.log(72 / 2.0), abs=1.5)  # within 2 C of the 40 C baseline
    assert s.drive.tmt["tmt1_count"] == 2.0 and s.drive.max_power_state == 2
    assert s.complete and not s.missing


def test_a_run_that_failed_half_way_is_summarised_with_what_is_missing() -> None:
    data = synthetic_run("r1", 50, 8.0, "top")
    data.jobs = [JobLog(1, "write", data.jobs[0].stamps_ms[:20], data.jobs[0].values[:20])]
    data.status = "failed"
    s = analyse_run(data)
    assert s.throttle.onset_s is None and not s.complete
    assert any("only 20 s" in m for m in s.missing) and "the run ended failed" in s.missing


def test_the_controller_thermocouple_predicts_onset_better_than_the_composite_sensor() -> None:
    runs = [
        synthetic_run(f"r{i}", onset, lag, slot)
        for i, (onset, lag, slot) in enumerate([(50, 4.0, "top"), (30, 12.0, "bottom"), (65, 2.0, "upright")])
    ]
    ranking, silent = rank_sensors([(d, analyse_run(d)) for d in runs])
    order = [r.sensor for r in ranking]
    assert order.index(CONTROLLER) < order.index(COMPOSITE)
    best = ranking[0]
    assert best.sensor == CONTROLLER and best.mad_c < 1.0 and best.spread_c < 1.0 and best.missed == 0
    composite = ranking[order.index(COMPOSITE)]
    assert composite.mad_c > 1.5 and composite.follows
    ambient = ranking[-1]  # the tightest spread of all, but it does not heat with the drive: last
    assert ambient.sensor == "rig_telemetry.ambient_c" and ambient.mad_c < 0.01 and not ambient.follows
    assert silent == []


def test_replicates_and_effects_with_a_welch_interval() -> None:
    onsets = {"top": [50, 52, 48], "bottom": [30, 33, 28]}
    runs = [
        analyse_run(synthetic_run(f"{slot}{i}", onset, 4.0, slot))
        for slot, xs in onsets.items()
        for i, onset in enumerate(xs)
    ]
    by = {(c.levels["slot"], c.metric): c for c in cells(runs)}
    assert by[("top", "onset_s")].n == 3 and by[("top", "onset_s")].mean == pytest.approx(50.0)
    assert by[("top", "onset_s")].sd == pytest.approx(2.0)
    [effect] = [e for e in effects(runs, {s.run: i for i, s in enumerate(runs)}) if e.metric == "onset_s"]
    assert (effect.factor, effect.level, effect.reference) == ("slot", "top", "bottom")
    assert effect.difference == pytest.approx(np.mean(onsets["top"]) - np.mean(onsets["bottom"]))
    ci = stats.ttest_ind(onsets["top"], onsets["bottom"], equal_var=False).confidence_interval(0.95)
    assert (effect.ci_low, effect.ci_high) == pytest.approx((ci.low, ci.high))
    assert welch_ci([1.0], [2.0, 3.0]) is None


def test_effects_without_replicates_carry_no_interval_but_a_note() -> None:
    """A 2 x 2 campaign with one run per cell: each slot has two runs, but they differ in profile: the
    spread of a slot's runs is the profile's effect, not noise. No interval; a note asks for replicates."""
    onsets = {("top", "a"): [50], ("top", "b"): [40], ("bottom", "a"): [30], ("bottom", "b"): [22]}

    def runs_of(table: dict[tuple[str, str], list[int]]) -> list:
        out = []
        for (slot, profile), xs in table.items():
            for i, onset in enumerate(xs):
                data = synthetic_run(f"{slot}-{profile}-{i}", onset, 4.0, slot)
                data.tags["profile"] = profile
                out.append(analyse_run(data))
        return out

    single = runs_of(onsets)
    for effect in (e for e in effects(single, {s.run: i for i, s in enumerate(single)}) if e.metric == "onset_s"):
        assert effect.ci_low is None and effect.ci_high is None and "repeat the runs" in effect.note
    assert {e.factor for e in effects(single, {})} == {"slot", "profile"}
    replicated = runs_of({cell: [x, x + 2] for cell, [x] in onsets.items()})
    [slot] = [e for e in effects(replicated, {}) if e.metric == "onset_s" and e.factor == "slot"]
    assert slot.ci_low is not None and slot.ci_high is not None and slot.ci_low <= slot.difference <= slot.ci_high
    assert slot.note == ""
