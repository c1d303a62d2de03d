"""Bounded fit of the documented parameters to the seeds, on the replay (thermrig.sim.replay).

950 Pro against the Puget tables (seed 001): one parameter set for the drive, one per slot, one per
chassis profile (its chassis-air target), never per table cell. SM951 against seed 002: its throttle
threshold, heavy-throttle power and idle power. Bounds: ../shared/reference/physics.md, cited beside
each. The 950 Pro objective is the acceptance test of `make calibrate`: per cell, (onset error / onset
tolerance)^2 + (depth error / 8 pp)^2. Powell's method: derivative-free, as the throttle makes the
objective piecewise constant in places. `make fit` (thermrig calibrate fit --write) writes the result
into hardware/profiles in place."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import minimize

from thermrig.analysis.published import (
    DEPTH_PP,
    PUGET,
    PUGET_RUNTIME_S,
    SM951_CONDITION,
    SM951_IOPS_BARE,
    SM951_PEAK_S,
    SM951_RANDOM_RUNTIME_S,
    SM951_RANDOM_WINDOW_S,
    SM951_SEQ_RUNTIME_S,
)
from thermrig.analysis.throttle import throttle_of
from thermrig.hardware.drive_profiles import DriveProfile, PowerState, load_drive_profile
from thermrig.hardware.profiles import (
    SLOTS,
    ChassisParams,
    SlotParams,
    load_chassis,
    load_chassis_profiles,
    load_drive_thermal,
    load_slot,
)
from thermrig.sim.replay import Pattern, condition, replay

SEQ_WRITE = Pattern(write=True, random=False, bs=128 * 1024)
RAND_WRITE = Pattern(write=True, random=True, bs=4096)


@dataclass(frozen=True)
class Bound:
    name: str
    lo: float
    hi: float
    source: str


DRIVE_BOUNDS = (
    Bound("tmt1_c", 65, 85, "no published threshold; 'start near 70-80 C on the controller'"),
    Bound("tmt2_c", 75, 95, "heavy throttle above the light one"),
    Bound("hysteresis_c", 0.5, 6, "EST"),
    Bound("throttle_gain_w_per_k_s", 0.01, 0.3, "EST: the light throttle settles within seconds to minutes"),
    Bound("ctrl_capacity_j_per_k", 0.3, 3, "small controller node above the board (DESIGN.md)"),
    Bound("board_capacity_j_per_k", 6, 12, "~9 J/K EST, board <= 10 g"),
    Bound("g_ctrl_board_w_per_k", 0.2, 2, "EST"),
    Bound("ctrl_power_fraction", 0.3, 0.8, "EST"),
    Bound("tmt2_w", 1.3, 3.5, "below PS2's 3.6 W, above idle"),
    Bound("idle_power_w", 0.5, 2.0, "awake idle; APST idle 0.07 W"),
)
PROFILE_BOUNDS = {  # chassis air, C: Tom's Hardware 26 C open bench, 39 C closed case under FurMark
    "single_gpu_idle": Bound("single_gpu_idle.air_c", 26, 36, "one idle GPU in a closed case"),
    "dual_gpu_idle": Bound("dual_gpu_idle.air_c", 28, 40, "two idle GPUs"),
    "single_gpu_load": Bound("single_gpu_load.air_c", 34, 45, "39 C measured under FurMark"),
    "dual_gpu_load": Bound("dual_gpu_load.air_c", 38, 52, "two GPUs under FurMark: above one"),
}
SLOT_BOUNDS = (
    Bound("air_coupling", 0.2, 1.2, "share of the chassis-air rise at the slot (EST)"),
    Bound("v_chassis_fan", 0.05, 2.0, "air speed at the slot, m/s, full chassis fan (EST)"),
)


def bounds() -> list[Bound]:
    out = list(DRIVE_BOUNDS)
    for slot in SLOTS:
        out += [replace(b, name=f"{slot}.{b.name}") for b in SLOT_BOUNDS]
    return out + list(PROFILE_BOUNDS.values())


@dataclass(frozen=True)
class Fitted:
    drive: DriveProfile
    slots: dict[str, SlotParams]
    air_c: dict[str, float]  # chassis-air target per chassis profile


def apply(x: np.ndarray, drive: DriveProfile, slots: dict[str, SlotParams]) -> Fitted:
    v = dict(zip([b.name for b in bounds()], (float(a) for a in x), strict=True))
    states = (*drive.states[:-1], PowerState(drive.states[-1].name, v["tmt2_w"]))
    d = replace(
        drive,
        tmt1_c=v["tmt1_c"],
        tmt2_c=max(v["tmt2_c"], v["tmt1_c"] + 3.0),
        hysteresis_c=v["hysteresis_c"],
        throttle_gain=v["throttle_gain_w_per_k_s"],
        ctrl_capacity=v["ctrl_capacity_j_per_k"],
        board_capacity=v["board_capacity_j_per_k"],
        g_ctrl_board=v["g_ctrl_board_w_per_k"],
        ctrl_power_fraction=v["ctrl_power_fraction"],
        idle_power_w=v["idle_power_w"],
        states=states,
    )
    s = {
        name: replace(p, air_coupling=v[f"{name}.air_coupling"], v_chassis_fan=v[f"{name}.v_chassis_fan"])
        for name, p in slots.items()
    }
    return Fitted(d, s, {name: v[b.name] for name, b in PROFILE_BOUNDS.items()})


def start(drive: DriveProfile, slots: dict[str, SlotParams]) -> np.ndarray:
    x = [
        drive.tmt1_c,
        drive.tmt2_c,
        drive.hysteresis_c,
        drive.throttle_gain,
        drive.ctrl_capacity,
        drive.board_capacity,
        drive.g_ctrl_board,
        drive.ctrl_power_fraction,
        drive.states[-1].max_w,
        drive.idle_power_w,
    ]
    for name in SLOTS:
        x += [slots[name].air_coupling, slots[name].v_chassis_fan]
    profiles = load_chassis_profiles()
    x += [float(profiles[name]["air_c"]) for name in PROFILE_BOUNDS]
    lo = np.array([b.lo for b in bounds()])
    hi = np.array([b.hi for b in bounds()])
    return np.clip(np.array(x), lo, hi)


@dataclass(frozen=True)
class CellResult:
    onset_s: float | None
    depth_pct: float


def evaluate(chassis: ChassisParams, fitted: Fitted) -> list[CellResult]:
    cooling = load_drive_thermal("none")
    out = []
    for cell in PUGET:
        cond = replace(
            condition(chassis, fitted.slots[cell.slot], cooling, cell.profile), air_c=fitted.air_c[cell.profile]
        )
        th = throttle_of(replay(chassis, fitted.drive, cond, SEQ_WRITE, PUGET_RUNTIME_S))
        out.append(CellResult(th.onset_s, th.depth_pct))
    return out


def cost(results: list[CellResult]) -> float:
    total = 0.0
    for cell, r in zip(PUGET, results, strict=True):
        onset = r.onset_s if r.onset_s is not None else float(PUGET_RUNTIME_S)
        total += ((onset - cell.onset_s) / cell.onset_tolerance_s()) ** 2 + (
            (r.depth_pct - cell.depth_pct) / DEPTH_PP
        ) ** 2
    return total


def fit(
    drive_name: str = "950pro_512", maxfev: int = 1500, report: Callable[[int, float], None] | None = None
) -> tuple[Fitted, float]:
    chassis = load_chassis()
    drive = load_drive_profile(drive_name)
    slots = {name: load_slot(name) for name in SLOTS}
    calls = [0]

    def objective(x: np.ndarray) -> float:
        c = cost(evaluate(chassis, apply(x, drive, slots)))
        calls[0] += 1
        if report is not None:
            report(calls[0], c)
        return c

    b = bounds()
    res = minimize(
        objective,
        start(drive, slots),
        method="Powell",
        bounds=[(x.lo, x.hi) for x in b],
        options={"maxfev": maxfev, "xtol": 1e-3, "ftol": 1e-4},
    )
    return apply(res.x, drive, slots), float(res.fun)


def current() -> Fitted:
    """The parameters as the profiles hold them now."""
    drive = load_drive_profile("950pro_512")
    slots = {name: load_slot(name) for name in SLOTS}
    profiles = load_chassis_profiles()
    return Fitted(drive, slots, {name: float(profiles[name]["air_c"]) for name in PROFILE_BOUNDS})


SM951_BOUNDS = (
    Bound("tmt1_c", 65, 85, "no published threshold; 'start near 70-80 C on the controller'"),
    Bound("tmt2_w", 1.3, 3.0, "below PS2's 3.0 W"),
    Bound("idle_power_w", 0.5, 2.0, "awake idle"),
)


def sm951_replay(chassis: ChassisParams, drive: DriveProfile) -> tuple[float | None, dict[str, float]]:
    """Seed 002 on the replay: seconds at peak sequential write (bare), sustained 4 KB random-write IOPS
    on a full drive, bare and with the passive heatsink."""
    slot_name, profile = SM951_CONDITION
    slot = load_slot(slot_name)
    bare = condition(chassis, slot, load_drive_thermal("none"), profile)
    peak = throttle_of(replay(chassis, drive, bare, SEQ_WRITE, SM951_SEQ_RUNTIME_S)).onset_s
    iops = {}
    for heatsink in ("none", "passive"):
        cond = condition(chassis, slot, load_drive_thermal(heatsink), profile)
        series = replay(chassis, drive, cond, RAND_WRITE, SM951_RANDOM_RUNTIME_S, preconditioned=True)
        tail = series[-SM951_RANDOM_WINDOW_S:]
        iops[heatsink] = sum(tail) / len(tail) / RAND_WRITE.bs
    return peak, iops


def fit_sm951(maxfev: int = 300) -> tuple[DriveProfile, float]:
    chassis = load_chassis()
    drive = load_drive_profile("sm951_512")

    def build(x: np.ndarray) -> DriveProfile:
        states = (*drive.states[:-1], PowerState(drive.states[-1].name, float(x[1])))
        return replace(drive, tmt1_c=float(x[0]), idle_power_w=float(x[2]), states=states)

    def objective(x: np.ndarray) -> float:
        peak, iops = sm951_replay(chassis, build(x))
        p = peak if peak is not None else float(SM951_SEQ_RUNTIME_S)
        return ((p - SM951_PEAK_S) / 15.0) ** 2 + ((iops["none"] - SM951_IOPS_BARE) / (0.05 * SM951_IOPS_BARE)) ** 2

    x0 = np.array([drive.tmt1_c, drive.states[-1].max_w, drive.idle_power_w])
    res = minimize(
        objective, x0, method="Powell", bounds=[(b.lo, b.hi) for b in SM951_BOUNDS], options={"maxfev": maxfev}
    )
    return build(res.x), float(res.fun)
