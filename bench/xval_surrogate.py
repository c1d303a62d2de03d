"""Screen slot and profile models for the leave-one-cell-out cheaply (issue 20, item 8).

Each Puget cell's onset and depth on the replay depend, with the drive held, only on the air around
the drive and its air speed there. This computes them once over a grid of (local air, air speed) with the
drive as THERMRIG_HARDWARE_DIR's profiles hold it, interpolates, and then fits and cross-validates slot and
profile models in seconds: each cell maps to (room + coupling x the profile's rise, the chassis fan's
speed + the exhaust's). Several Powell starts, fully converged, the drive not refitted: it ranks models,
it does not give the crossval's counts (docs/virtual-drive.md, "Models tried").

    THERMRIG_HARDWARE_DIR=bench/xval_exhaust PYTHONPATH=host python bench/xval_surrogate.py [MODEL ...]
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy.interpolate import RegularGridInterpolator
from scipy.optimize import minimize

from thermrig.analysis.published import DEPTH_PP, PUGET, PUGET_RUNTIME_S, PugetCell
from thermrig.analysis.throttle import throttle_of
from thermrig.calibration.fit import SEQ_WRITE
from thermrig.calibration.parameters import current, read
from thermrig.dut.replay import Condition
from thermrig.hardware.profiles import load_chassis, load_drive_thermal, load_slot
from thermrig.testbed.replay import model_replay

AIR = np.arange(22.0, 62.01, 0.5)
SPEED = np.geomspace(0.03, 3.0, 41)
ROOM = 22.0
FAN0 = 0.475  # the chassis fan's airflow at the profiles' 40 % duty (FanModel.steady_rpm)
G_AIR_ROOM = 3.0 + 12.0 * FAN0  # W/K: the heater's output holding the air at the target is this x its rise
HEATER_MAX_W = 400.0
CACHE = Path("build")  # xval_surrogate-<the drive's hash>.npz: a grid per drive


def grid() -> tuple[np.ndarray, np.ndarray]:
    """onset (s) and depth (%) of a 120 s sequential write over AIR x SPEED, the drive held."""
    replayer, chassis, drive = model_replay(), load_chassis(), current().drive
    cache = CACHE / f"xval_surrogate-{hashlib.sha256(repr(drive).encode()).hexdigest()[:12]}.npz"
    if cache.exists():
        d = np.load(cache)
        return d["onset"], d["depth"]
    base = replace(load_slot("top"), air_coupling=1.0, v_heater=0.0, v_slot_fan=0.0)
    cooling = load_drive_thermal("none")
    onset = np.zeros((len(AIR), len(SPEED)))
    depth = np.zeros_like(onset)
    for i, air in enumerate(AIR):
        for j, v in enumerate(SPEED):
            cond = Condition(replace(base, v_chassis_fan=float(v)), cooling, float(air), 1.0, 0.0)
            th = throttle_of(replayer.replay(chassis, drive, cond, SEQ_WRITE, PUGET_RUNTIME_S))
            onset[i, j] = PUGET_RUNTIME_S if th.onset_s is None else th.onset_s
            depth[i, j] = th.depth_pct
    CACHE.mkdir(exist_ok=True)
    np.savez(cache, onset=onset, depth=depth)
    return onset, depth


@dataclass(frozen=True)
class Surrogate:
    onset: RegularGridInterpolator
    depth: RegularGridInterpolator

    def cell(self, air: float, speed: float) -> tuple[float, float]:
        p = np.array([[min(max(air, AIR[0]), AIR[-1]), np.log(min(max(speed, SPEED[0]), SPEED[-1]))]])
        return float(self.onset(p)[0]), float(self.depth(p)[0])


def surrogate() -> Surrogate:
    onset, depth = grid()
    axes = (AIR, np.log(SPEED))
    return Surrogate(RegularGridInterpolator(axes, onset), RegularGridInterpolator(axes, depth))


@dataclass(frozen=True)
class SModel:
    """Slot and profile numbers: the free ones (name, lo, hi), the rest set by `derive` from them."""

    name: str
    free: tuple[tuple[str, float, float], ...]
    derive: Callable[[dict[str, float]], dict[str, float]]

    def numbers(self, x: np.ndarray) -> dict[str, float]:
        v = {n: float(a) for (n, _, _), a in zip(self.free, x, strict=True)}
        return self.derive(v)


LOADED = ("single_gpu_load", "dual_gpu_load")  # the profiles with a GPU under load
DUAL = ("dual_gpu_idle", "dual_gpu_load")  # the profiles with a second GPU


def where(v: dict[str, float], cell: PugetCell) -> tuple[float, float]:
    """The cell's (local air, air speed) from the slot and profile numbers. Terms only some models have,
    each absent from v where a model lacks it: `{slot}.v_gpu_fans`, m/s the loaded GPUs' fans add at the
    slot in the loaded profiles; `loaded.exhaust_gain`, the exhaust's speed in the loaded profiles over
    the heat's share; `{slot}.second_gpu_coupling`, the second GPU's share of the rise at the slot in the
    dual profiles."""
    rise = v[f"{cell.profile}.air_c"] - ROOM
    s = cell.slot
    exhaust = v[f"{s}.v_heater"] * G_AIR_ROOM * rise / HEATER_MAX_W
    speed = v[f"{s}.v_chassis_fan"] * FAN0 + exhaust
    air = ROOM + v[f"{s}.air_coupling"] * rise
    if cell.profile in LOADED:
        speed += v.get(f"{s}.v_gpu_fans", 0.0) + (v.get("loaded.exhaust_gain", 1.0) - 1.0) * exhaust
    if cell.profile in DUAL:
        air += v.get(f"{s}.second_gpu_coupling", 0.0) * rise
    return air, speed


def predict(sur: Surrogate, v: dict[str, float], cell: PugetCell) -> tuple[float, float]:
    return sur.cell(*where(v, cell))


def cost(sur: Surrogate, v: dict[str, float], cells: list[PugetCell]) -> float:
    total = 0.0
    for c in cells:
        onset, depth = predict(sur, v, c)
        total += ((onset - c.onset_s) / c.onset_tolerance_s()) ** 2 + ((depth - c.depth_pct) / DEPTH_PP) ** 2
    return total


def ok(cell: PugetCell, onset: float, depth: float) -> bool:
    return all(cell.judge(float(round(onset)), depth))


def fit(sur: Surrogate, m: SModel, cells: list[PugetCell], x0: np.ndarray, starts: int = 6) -> np.ndarray:
    rng = np.random.default_rng(0)
    lo = np.array([b[1] for b in m.free])
    hi = np.array([b[2] for b in m.free])
    best: tuple[float, np.ndarray] = (cost(sur, m.numbers(x0), cells), x0)
    for k in range(starts):
        x = x0 if k == 0 else np.clip(best[1] + rng.normal(0, 0.15, len(x0)) * (hi - lo), lo, hi)
        r = minimize(
            lambda y: cost(sur, m.numbers(y), cells),
            x,
            method="Powell",
            bounds=list(zip(lo, hi, strict=True)),
            options={"xtol": 1e-4, "ftol": 1e-6, "maxfev": 4000},
        )
        if r.fun < best[0]:
            best = (float(r.fun), r.x)
    return best[1]


def profiles_v() -> dict[str, float]:
    v = read(current())
    return {k: a for k, a in v.items() if "." in k}


def screen(sur: Surrogate, m: SModel) -> None:
    base = profiles_v()
    x0 = np.array([min(hi, max(lo, base.get(n, lo))) for n, lo, hi in m.free])  # an added term starts off
    cells = list(PUGET)
    xs = fit(sur, m, cells, x0)
    v = m.numbers(xs)
    ins = [predict(sur, v, c) for c in cells]
    n_in = sum(ok(c, *p) for c, p in zip(cells, ins, strict=True))
    held, misses = 0, []
    for c in cells:
        xf = fit(sur, m, [d for d in cells if d != c], xs, starts=3)
        o, d = predict(sur, m.numbers(xf), c)
        if ok(c, o, d):
            held += 1
        else:
            misses.append(f"{c.slot}/{c.profile} {d:.0f}% after {o:.1f} s")
    fitted = ", ".join(f"{n.split('.')[0][:5]}.{n.split('.')[1][:6]}={v[n]:.3g}" for n, _, _ in m.free)
    print(f"{m.name}: {len(m.free)} free, in sample {n_in}/14 (cost {cost(sur, v, cells):.2f}), held out {held}/14")
    print(f"    misses: {'; '.join(misses) or 'none'}")
    print(f"    fit: {fitted}", flush=True)


def main() -> None:
    from xval_surrogate_models import MODELS

    sur = surrogate()
    chosen = sys.argv[1:] or list(MODELS)
    for name in chosen:
        screen(sur, MODELS[name])


if __name__ == "__main__":
    main()
