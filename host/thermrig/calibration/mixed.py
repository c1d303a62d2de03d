"""Seeds 000 and 004 on the replay: the mixed random and mixed sequential sweeps and the hour of random
writes after a fill, heatsink against bare, judged as the reviews describe them (analysis.published)."""

from __future__ import annotations

import statistics

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
    MIXED_STEP_S,
    MIXED_STEPS,
)
from thermrig.calibration.check import Check
from thermrig.calibration.fit import RAND_WRITE
from thermrig.calibration.replay import condition, replay, replay_sweep
from thermrig.plant.drive_profiles import DriveProfile
from thermrig.plant.profiles import ChassisParams, load_drive_thermal, load_slot

HEATSINKS = ("none", "passive")


def _sweeps(chassis: ChassisParams, drive: DriveProfile, bs: int, qd: int, sequential: bool) -> dict:  # type: ignore[type-arg]
    slot, profile = MIXED_CONDITION
    out = {}
    for heatsink in HEATSINKS:
        cond = condition(chassis, load_slot(slot), load_drive_thermal(heatsink), profile)
        out[heatsink] = replay_sweep(chassis, drive, cond, MIXED_STEPS, bs, qd, MIXED_STEP_S, sequential)
    return out


def mixed_random_checks(chassis: ChassisParams, drive: DriveProfile) -> list[Check]:
    runs = _sweeps(chassis, drive, 4096, 3, sequential=False)
    avg = {h: {s.read_pct: statistics.fmean(s.iops) for s in steps} for h, steps in runs.items()}
    gain = statistics.fmean(avg["passive"].values()) / statistics.fmean(avg["none"].values()) - 1
    lo, hi = MIXED_RANDOM_GAIN_BAND
    heavy = max(abs(avg["passive"][p] / avg["none"][p] - 1) for p in MIXED_READ_HEAVY)
    write_end = avg["passive"][0] / avg["none"][0] - 1
    return [
        Check(
            "000 AnandTech",
            "950 Pro mixed 4KB random QD3: sweep average, heatsink vs bare",
            f"+{MIXED_RANDOM_GAIN:.1%} ({lo:+.0%} to {hi:+.0%})",
            f"{gain:+.1%} ({statistics.fmean(avg['none'].values()):,.0f} -> "
            f"{statistics.fmean(avg['passive'].values()):,.0f} IOPS)",
            lo <= gain <= hi,
        ),
        Check(
            "000 AnandTech",
            "950 Pro mixed 4KB random QD3: read-heavy steps (100-80 % reads)",
            f"essentially unaffected (within {MIXED_READ_HEAVY_REL:.0%})",
            f"largest change {heavy:.1%}; write end {write_end:+.1%}",
            heavy <= MIXED_READ_HEAVY_REL and write_end > gain,
        ),
    ]


def mixed_seq_checks(chassis: ChassisParams, drive: DriveProfile) -> list[Check]:
    runs = _sweeps(chassis, drive, 128 * 1024, 1, sequential=True)
    avg = {h: {s.read_pct: statistics.fmean(s.iops) for s in steps} for h, steps in runs.items()}
    pure = {p: avg["passive"][p] / avg["none"][p] - 1 for p in (100, 0)}
    throttled = [s.read_pct for s in runs["none"] if s.read_pct in MIXED_SEQ_BALANCED and s.throttled]
    return [
        Check(
            "000 AnandTech",
            "950 Pro mixed 128KB seq QD1: pure read and pure write steps, heatsink vs bare",
            f"gains (each >= {MIXED_SEQ_PURE_GAIN:+.0%})",
            f"read {pure[100]:+.1%}, write {pure[0]:+.1%}",
            min(pure.values()) >= MIXED_SEQ_PURE_GAIN,
        ),
        Check(
            "000 AnandTech",
            "950 Pro mixed 128KB seq QD1: balanced mixes (60-40 % reads), bare",
            "no throttling",
            "throttled at " + ", ".join(f"{p} %" for p in throttled) if throttled else "no throttling",
            not throttled,
        ),
    ]


def consistency_checks(chassis: ChassisParams, drive: DriveProfile) -> list[Check]:
    slot, profile = CONSISTENCY_CONDITION
    tail: dict[str, float] = {}
    bare_states: set[int] = set()
    for heatsink in HEATSINKS:
        cond = condition(chassis, load_slot(slot), load_drive_thermal(heatsink), profile)
        states: list[int] = []
        series = replay(chassis, drive, cond, RAND_WRITE, CONSISTENCY_RUNTIME_S, filled=True, states=states)
        tail[heatsink] = statistics.fmean(series[-CONSISTENCY_WINDOW_S:]) / RAND_WRITE.bs
        if heatsink == "none":
            bare_states = set(states[-CONSISTENCY_WINDOW_S:])
    gain = tail["passive"] / tail["none"] - 1
    names = ", ".join(drive.states[i].name for i in sorted(bare_states))
    return [
        Check(
            "004 AnandTech",
            "950 Pro 4KB random write QD32, last 400 s of an hour: heatsink vs bare",
            f"heatsink raises the steady state (>= {CONSISTENCY_GAIN_MIN:+.0%})",
            f"{gain:+.1%} ({tail['none']:,.0f} -> {tail['passive']:,.0f} IOPS)",
            gain >= CONSISTENCY_GAIN_MIN,
        ),
        Check(
            "004 AnandTech",
            "950 Pro 4KB random write QD32, last 400 s, bare",
            "one power state (a very high consistency score)",
            names,
            len(bare_states) == 1,
        ),
    ]


def mixed_and_consistency_checks(chassis: ChassisParams, drive: DriveProfile) -> list[Check]:
    return mixed_random_checks(chassis, drive) + mixed_seq_checks(chassis, drive) + consistency_checks(chassis, drive)
