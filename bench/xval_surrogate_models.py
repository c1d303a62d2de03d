"""The slot and profile models xval_surrogate.py screens: each the exhaust model's slot and profile
numbers (thermrig.calibration.parameters.EXHAUST) with some held, some tied to another."""

from __future__ import annotations

from collections.abc import Callable

from xval_surrogate import SModel, profiles_v

from thermrig.calibration.parameters import PROFILE_BOUNDS, SLOT_BOUNDS
from thermrig.hardware.profiles import SLOTS

BOUNDS = {
    **{f"{s}.{b.name}": (b.lo, b.hi) for s in SLOTS for b in SLOT_BOUNDS},
    **{b.name: (b.lo, b.hi) for b in PROFILE_BOUNDS.values()},
}
EXHAUST_HELD = {
    "top.air_coupling": 1.0,
    "underside.air_coupling": 1.0,
    "top.v_chassis_fan": 0.921,
    "upright.v_heater": 0.0,
    "underside.v_heater": 0.0,
}


def model(
    name: str, held: dict[str, float] | None = None, ties: dict[str, str] | None = None, freed: tuple[str, ...] = ()
) -> SModel:
    """The exhaust model, and beyond its held numbers `held`, `ties` (a number set equal to another) and
    `freed` (an exhaust model's held number fitted)."""
    base = profiles_v()
    fixed = {k: v for k, v in {**EXHAUST_HELD, **(held or {})}.items() if k not in freed}
    tied = ties or {}
    free = tuple((n, *BOUNDS[n]) for n in BOUNDS if n not in fixed and n not in tied)

    def derive(v: dict[str, float]) -> dict[str, float]:
        out = {**base, **fixed, **v}
        out.update({n: out[src] for n, src in tied.items()})
        return out

    return SModel(name, free, derive)


_BUILD: dict[str, Callable[[], SModel]] = {
    "exhaust": lambda: model("exhaust"),
    "under=upright": lambda: model("under=upright", ties={"underside.v_chassis_fan": "upright.v_chassis_fan"}),
    "under=bottom": lambda: model("under=bottom", ties={"underside.v_chassis_fan": "bottom.v_chassis_fan"}),
    "under=top": lambda: model("under=top", ties={"underside.v_chassis_fan": "top.v_chassis_fan"}),
    "under=upright,coupling": lambda: model(
        "under=upright,coupling",
        freed=("underside.air_coupling",),
        ties={"underside.v_chassis_fan": "upright.v_chassis_fan"},
    ),
    "bottom no exhaust": lambda: model("bottom no exhaust", held={"bottom.v_heater": 0.0}),
    "bottom fan=top": lambda: model("bottom fan=top", ties={"bottom.v_chassis_fan": "top.v_chassis_fan"}),
    "upright fan=top": lambda: model("upright fan=top", ties={"upright.v_chassis_fan": "top.v_chassis_fan"}),
    "under=upright,bottom no exhaust": lambda: model(
        "under=upright,bottom no exhaust",
        held={"bottom.v_heater": 0.0},
        ties={"underside.v_chassis_fan": "upright.v_chassis_fan"},
    ),
    "under=bottom=upright": lambda: model(
        "under=bottom=upright",
        ties={"underside.v_chassis_fan": "upright.v_chassis_fan", "bottom.v_chassis_fan": "upright.v_chassis_fan"},
    ),
    "bottom coupling=1": lambda: model("bottom coupling=1", held={"bottom.air_coupling": 1.0}),
}


class _Lazy(dict[str, SModel]):
    def __missing__(self, key: str) -> SModel:
        self[key] = _BUILD[key]()
        return self[key]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(_BUILD)


MODELS = _Lazy()
