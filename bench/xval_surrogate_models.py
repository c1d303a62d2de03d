"""The slot and profile models xval_surrogate.py screens: each the exhaust model's slot and profile
numbers (thermrig.calibration.parameters.EXHAUST) with some held, some tied to another, and some with a
term of their own added (docs/design/calibration-models.md, "Terms beyond one number per profile")."""

from __future__ import annotations

from collections.abc import Callable

from xval_surrogate import SModel, profiles_v

from thermrig.calibration.parameters import PROFILE_BOUNDS, SLOT_BOUNDS
from thermrig.hardware.profiles import SLOTS, load_slot

BOUNDS = {
    **{f"{s}.{b.name}": (b.lo, b.hi) for s in SLOTS for b in SLOT_BOUNDS},
    **{b.name: (b.lo, b.hi) for b in PROFILE_BOUNDS.values()},
}
UNDER_UPRIGHT = {"underside.v_chassis_fan": "upright.v_chassis_fan"}  # make fit's tie (exhaust-tied)
EXHAUST_HELD = {
    "top.air_coupling": 1.0,
    "underside.air_coupling": 1.0,
    "top.v_chassis_fan": 0.921,
    "upright.v_heater": 0.0,
    "underside.v_heater": 0.0,
}


def model(
    name: str,
    held: dict[str, float] | None = None,
    ties: dict[str, str] | None = None,
    freed: tuple[str, ...] = (),
    added: tuple[tuple[str, float, float], ...] = (),
    then: Callable[[dict[str, float]], dict[str, float]] | None = None,
) -> SModel:
    """The exhaust model, and beyond its held numbers `held`, `ties` (a number set equal to another),
    `freed` (an exhaust model's held number fitted), `added` (a term's own free numbers, name and bounds)
    and `then` (the numbers a term sets from them: xval_surrogate.where's)."""
    base = profiles_v()
    fixed = {k: v for k, v in {**EXHAUST_HELD, **(held or {})}.items() if k not in freed}
    tied = ties or {}
    free = tuple((n, *BOUNDS[n]) for n in BOUNDS if n not in fixed and n not in tied) + added

    def derive(v: dict[str, float]) -> dict[str, float]:
        out = {**base, **fixed, **v}
        out.update({n: out[src] for n, src in tied.items()})
        return out if then is None else {**out, **then(out)}

    return SModel(name, free, derive)


V_SLOT_FAN = {s: load_slot(s).v_slot_fan for s in SLOTS}  # m/s at the slot, the slot fan at full airflow


def slot_fan_under_load(slots: tuple[str, ...]) -> Callable[[dict[str, float]], dict[str, float]]:
    """The loaded GPUs' fans recreated by the slot fan at `gpu_fans.airflow` (a share of its full
    airflow) in the loaded profiles, reaching `slots`."""
    return lambda v: {f"{s}.v_gpu_fans": V_SLOT_FAN[s] * v["gpu_fans.airflow"] for s in slots}


_BUILD: dict[str, Callable[[], SModel]] = {
    "exhaust": lambda: model("exhaust"),
    "under=upright": lambda: model("under=upright", ties=UNDER_UPRIGHT),
    "under=bottom": lambda: model("under=bottom", ties={"underside.v_chassis_fan": "bottom.v_chassis_fan"}),
    "under=top": lambda: model("under=top", ties={"underside.v_chassis_fan": "top.v_chassis_fan"}),
    "under=upright,coupling": lambda: model(
        "under=upright,coupling",
        freed=("underside.air_coupling",),
        ties=UNDER_UPRIGHT,
    ),
    "bottom no exhaust": lambda: model("bottom no exhaust", held={"bottom.v_heater": 0.0}),
    "bottom fan=top": lambda: model("bottom fan=top", ties={"bottom.v_chassis_fan": "top.v_chassis_fan"}),
    "upright fan=top": lambda: model("upright fan=top", ties={"upright.v_chassis_fan": "top.v_chassis_fan"}),
    "under=upright,bottom no exhaust": lambda: model(
        "under=upright,bottom no exhaust",
        held={"bottom.v_heater": 0.0},
        ties=UNDER_UPRIGHT,
    ),
    "under=bottom=upright": lambda: model(
        "under=bottom=upright",
        ties={**UNDER_UPRIGHT, "bottom.v_chassis_fan": "upright.v_chassis_fan"},
    ),
    "bottom coupling=1": lambda: model("bottom coupling=1", held={"bottom.air_coupling": 1.0}),
    # Terms under=upright (make fit's slots and targets) lacks, each screened at hardware/profiles' drive:
    "gpu fans, every slot": lambda: model(
        "gpu fans, every slot",
        ties=UNDER_UPRIGHT,
        added=(("gpu_fans.airflow", 0.0, 1.0),),
        then=slot_fan_under_load(SLOTS),
    ),
    "gpu fans, top and bottom": lambda: model(
        "gpu fans, top and bottom",
        ties=UNDER_UPRIGHT,
        added=(("gpu_fans.airflow", 0.0, 1.0),),
        then=slot_fan_under_load(("top", "bottom")),
    ),
    "gpu fans, a speed per slot": lambda: model(
        "gpu fans, a speed per slot",
        ties=UNDER_UPRIGHT,
        added=(("top.v_gpu_fans", 0.0, 4.0), ("bottom.v_gpu_fans", 0.0, 4.0)),
    ),
    "exhaust faster under load": lambda: model(
        "exhaust faster under load", ties=UNDER_UPRIGHT, added=(("loaded.exhaust_gain", 1.0, 6.0),)
    ),
    "second gpu at the bottom": lambda: model(
        "second gpu at the bottom", ties=UNDER_UPRIGHT, added=(("bottom.second_gpu_coupling", 0.0, 1.0),)
    ),
    "second gpu at the bottom, gpu fans top and bottom": lambda: model(
        "second gpu at the bottom, gpu fans top and bottom",
        ties=UNDER_UPRIGHT,
        added=(("bottom.second_gpu_coupling", 0.0, 1.0), ("gpu_fans.airflow", 0.0, 1.0)),
        then=slot_fan_under_load(("top", "bottom")),
    ),
}


class _Lazy(dict[str, SModel]):
    def __missing__(self, key: str) -> SModel:
        self[key] = _BUILD[key]()
        return self[key]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(_BUILD)


MODELS = _Lazy()
