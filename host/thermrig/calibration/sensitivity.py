"""Which Puget cells each free parameter of a model moves, at the profiles' values: the replay with the
parameter a share of its bound's range either way, each cell's onset change in onset tolerances and
depth change in depth tolerances (8 pp). A parameter that moves no cell is one the cells do not
constrain there. `thermrig calibrate sensitivity`."""

from __future__ import annotations

from dataclasses import dataclass

from thermrig.analysis.published import DEPTH_PP, PUGET, PUGET_RUNTIME_S, PugetCell
from thermrig.calibration.fit import evaluate
from thermrig.calibration.parameters import FIT_MODEL, Fitted, Model, current
from thermrig.dut.replay import ModelReplay
from thermrig.hardware.profiles import load_chassis


@dataclass(frozen=True)
class Moved:
    cell: PugetCell
    onset: float  # |onset change|, in the cell's onset tolerances
    depth: float  # |depth change|, in depth tolerances


@dataclass(frozen=True)
class Sensitivity:
    name: str
    value: float
    cells: list[Moved]


def sensitivity(
    replayer: ModelReplay, model: Model = FIT_MODEL, base: Fitted | None = None, share: float = 0.05
) -> list[Sensitivity]:
    chassis = load_chassis()
    base = current() if base is None else base
    x0 = model.start(base)

    def run(x: list[float]) -> list[tuple[float, float]]:
        out = []
        for cell, r in zip(PUGET, evaluate(replayer, chassis, model.apply(x, base)), strict=True):
            onset = r.onset_s if r.onset_s is not None else float(PUGET_RUNTIME_S)
            out.append((onset / cell.onset_tolerance_s(), r.depth_pct / DEPTH_PP))
        return out

    result = []
    for i, b in enumerate(model.free):
        up, down = list(x0), list(x0)
        up[i] = min(b.hi, x0[i] + share * (b.hi - b.lo))
        down[i] = max(b.lo, x0[i] - share * (b.hi - b.lo))
        moved = [
            Moved(cell, abs(ou - od), abs(du - dd))
            for cell, (ou, du), (od, dd) in zip(PUGET, run(up), run(down), strict=True)
        ]
        result.append(Sensitivity(b.name, x0[i], moved))
    return result
