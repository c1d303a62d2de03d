"""Seeds 000 and 004: the mixed random and mixed sequential sweeps and the hour of random writes after a
fill, heatsink against bare, judged as the reviews describe them (analysis.published). The judging takes
per-step and per-second figures, from the replay here or from InfluxDB in the pipeline (make calibrate)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from thermrig.analysis.published import (
    CONSISTENCY_CONDITION,
    CONSISTENCY_GAIN_MIN,
    CONSISTENCY_RUNTIME_S,
    CONSISTENCY_WINDOW_S,
    MIXED_CONDITION,
    MIXED_RANDOM_GAIN,
    MIXED_RANDOM_GAIN_BAND,
    MIXED_READ_HEAVY,
    MIXED_READ_HEAVY_REL,
    MIXED_SEQ_BALANCED,
    MIXED_SEQ_PURE_GAIN,
    MIXED_SEQ_UNTHROTTLED_REL,
    MIXED_STEP_S,
    MIXED_STEPS,
)
from thermrig.calibration.check import CalibrationCheck
from thermrig.calibration.fit import RAND_WRITE
from thermrig.dut.replay import MixedSweep, ModelReplay, Workload, condition
from thermrig.hardware.drive_profiles import DriveProfile
from thermrig.hardware.profiles import ChassisParams, load_drive_thermal, load_slot

HEATSINKS = ("none", "passive")
Sweep = dict[int, float]  # read share % -> the step's mean IOPS, reads and writes together


@dataclass(frozen=True)
class SteadyState:
    """The last CONSISTENCY_WINDOW_S seconds of the hour: IOPS per second and the power states seen."""

    iops: list[float]
    states: set[str]


def judge_mixed_random(sweeps: dict[str, Sweep]) -> list[CalibrationCheck]:
    bare, sink = sweeps["none"], sweeps["passive"]
    gain = statistics.fmean(sink.values()) / statistics.fmean(bare.values()) - 1
    lo, hi = MIXED_RANDOM_GAIN_BAND
    heavy = max(abs(sink[p] / bare[p] - 1) for p in MIXED_READ_HEAVY)
    write_end = sink[0] / bare[0] - 1
    return [
        CalibrationCheck(
            "000 AnandTech",
            "950 Pro mixed 4KB random QD3: sweep average, heatsink vs bare",
            f"+{MIXED_RANDOM_GAIN:.1%} ({lo:+.0%} to {hi:+.0%})",
            f"{gain:+.1%} ({statistics.fmean(bare.values()):,.0f} -> {statistics.fmean(sink.values()):,.0f} IOPS)",
            lo <= gain <= hi,
        ),
        CalibrationCheck(
            "000 AnandTech",
            "950 Pro mixed 4KB random QD3: read-heavy steps (100-80 % reads)",
            f"essentially unaffected (within {MIXED_READ_HEAVY_REL:.0%}); the gain at the write end",
            f"largest change {heavy:.1%}; write end {write_end:+.1%}",
            heavy <= MIXED_READ_HEAVY_REL and write_end > gain,
        ),
    ]


def judge_mixed_seq(sweeps: dict[str, Sweep]) -> list[CalibrationCheck]:
    bare, sink = sweeps["none"], sweeps["passive"]
    pure = {p: sink[p] / bare[p] - 1 for p in (100, 0)}
    behind = {p: 1 - bare[p] / sink[p] for p in MIXED_SEQ_BALANCED}
    throttled = [p for p, lost in behind.items() if lost > MIXED_SEQ_UNTHROTTLED_REL]
    return [
        CalibrationCheck(
            "000 AnandTech",
            "950 Pro mixed 128KB seq QD1: pure read and pure write steps, heatsink vs bare",
            f"gains (each >= {MIXED_SEQ_PURE_GAIN:+.0%})",
            f"read {pure[100]:+.1%}, write {pure[0]:+.1%}",
            min(pure.values()) >= MIXED_SEQ_PURE_GAIN,
        ),
        CalibrationCheck(
            "000 AnandTech",
            "950 Pro mixed 128KB seq QD1: balanced mixes (60-40 % reads), bare",
            f"no throttling (within {MIXED_SEQ_UNTHROTTLED_REL:.0%} of the heatsink)",
            ", ".join(f"{p} % {-lost:+.1%}" for p, lost in behind.items()),
            not throttled,
        ),
    ]


def judge_consistency(tails: dict[str, SteadyState]) -> list[CalibrationCheck]:
    bare = tails["none"]
    mean = {h: statistics.fmean(t.iops) for h, t in tails.items()}
    gain = mean["passive"] / mean["none"] - 1
    floor = statistics.quantiles(bare.iops, n=100)[0] / mean["none"]  # the slowest 1 % of seconds
    return [
        CalibrationCheck(
            "004 AnandTech",
            "950 Pro 4KB random write QD32, last 400 s of an hour: heatsink vs bare",
            f"heatsink raises the steady state (>= {CONSISTENCY_GAIN_MIN:+.0%})",
            f"{gain:+.1%} ({mean['none']:,.0f} -> {mean['passive']:,.0f} IOPS)",
            gain >= CONSISTENCY_GAIN_MIN,
        ),
        CalibrationCheck(
            "004 AnandTech",
            "950 Pro 4KB random write QD32, last 400 s, bare",
            "one power state (a very high consistency score)",
            f"{', '.join(sorted(bare.states)) or 'none'}; slowest 1 % of seconds at {floor:.0%} of the mean",
            len(bare.states) == 1,
        ),
    ]


def _sweeps(
    replayer: ModelReplay, chassis: ChassisParams, drive: DriveProfile, bs: int, qd: int, sequential: bool
) -> dict[str, Sweep]:
    slot, profile = MIXED_CONDITION
    out = {}
    for heatsink in HEATSINKS:
        cond = condition(load_slot(slot), load_drive_thermal(heatsink), profile)
        steps = replayer.replay_sweep(chassis, drive, cond, MixedSweep(MIXED_STEPS, bs, qd, MIXED_STEP_S, sequential))
        out[heatsink] = {s.read_pct: statistics.fmean(s.iops) for s in steps}
    return out


def _steady_states(replayer: ModelReplay, chassis: ChassisParams, drive: DriveProfile) -> dict[str, SteadyState]:
    slot, profile = CONSISTENCY_CONDITION
    out = {}
    for heatsink in HEATSINKS:
        cond = condition(load_slot(slot), load_drive_thermal(heatsink), profile)
        states: list[int] = []
        series = replayer.replay(chassis, drive, cond, Workload(RAND_WRITE, CONSISTENCY_RUNTIME_S, filled=True), states)
        out[heatsink] = SteadyState(
            [b / RAND_WRITE.bs for b in series[-CONSISTENCY_WINDOW_S:]],
            {drive.states[i].name for i in states[-CONSISTENCY_WINDOW_S:]},
        )
    return out


def mixed_and_consistency_checks(
    replayer: ModelReplay, chassis: ChassisParams, drive: DriveProfile
) -> list[CalibrationCheck]:
    """The six checks on the replay."""
    return (
        judge_mixed_random(_sweeps(replayer, chassis, drive, 4096, 3, sequential=False))
        + judge_mixed_seq(_sweeps(replayer, chassis, drive, 128 * 1024, 1, sequential=True))
        + judge_consistency(_steady_states(replayer, chassis, drive))
    )
