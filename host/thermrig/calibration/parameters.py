"""What the 950 Pro fit may move, and what it holds: every calibrated number of the drive, the slots
and the chassis profiles by name, its bounds and their source (docs/sources.md), and
the models of the fit (which of them are free, which are set from elsewhere and from what).

`FIT_MODEL` (`EXHAUST_TIED_HELD`) is the fit `make fit` runs and what hardware/profiles hold: the top and
bottom slots in the heater's exhaust, the underside's air speed tied to the upright's (`Tie`), and only what
the Puget cells constrain free (16 numbers; docs/virtual-drive.md, Calibration and "Out of sample"). The
models it grew from, kept to compare against (`thermrig calibrate crossval --model NAME`): `IDENTIFIED` (no
exhaust, 18 free, the fit before), `EXHAUST` (19), `EXHAUST_TIED` (18, the throttle gain and TMT2 power
free); `FREE` frees all 22 numbers, the fit before the identified model. `PRIOR` and `start_point`: where a
fit starts that has seen no Puget cell (`thermrig calibrate crossval`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from thermrig.hardware.drive_profiles import DriveProfile, load_drive_profile
from thermrig.hardware.profiles import SLOTS, SlotParams, load_chassis_profiles, load_slot


@dataclass(frozen=True)
class Bound:
    name: str
    lo: float
    hi: float
    source: str


@dataclass(frozen=True)
class Tie:
    """A number the fit sets equal to another one it moves: what the two share."""

    name: str
    to: str
    source: str


@dataclass(frozen=True)
class Fixed:
    """A number the fit does not move: its value and where it comes from."""

    name: str
    value: float
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
    Bound(
        "v_heater",
        0.0,
        4.0,
        "air speed at the slot, m/s, in the heater's exhaust at its full 400 W (the GPU stand-in's; EST: a "
        "GPU's exhaust past the board beside it, up to a fan's few m/s)",
    ),
)


def all_bounds() -> tuple[Bound, ...]:
    """The 26 calibrated numbers of the 950 Pro fit, in a fixed order."""
    slots = tuple(replace(b, name=f"{slot}.{b.name}") for slot in SLOTS for b in SLOT_BOUNDS)
    return (*DRIVE_BOUNDS, *slots, *PROFILE_BOUNDS.values())


@dataclass(frozen=True)
class Fitted:
    drive: DriveProfile
    slots: dict[str, SlotParams]
    air_c: dict[str, float]  # chassis-air target per chassis profile


def current() -> Fitted:
    """The parameters as the profiles hold them now."""
    drive = load_drive_profile("950pro_512")
    slots = {name: load_slot(name) for name in SLOTS}
    profiles = load_chassis_profiles()
    return Fitted(drive, slots, {name: float(profiles[name]["air_c"]) for name in PROFILE_BOUNDS})


def read(f: Fitted) -> dict[str, float]:
    """Every calibrated number by name."""
    d = f.drive
    out = {
        "tmt1_c": d.tmt1_c,
        "tmt2_c": d.tmt2_c,
        "hysteresis_c": d.hysteresis_c,
        "throttle_gain_w_per_k_s": d.throttle_gain,
        "ctrl_capacity_j_per_k": d.ctrl_capacity,
        "board_capacity_j_per_k": d.board_capacity,
        "g_ctrl_board_w_per_k": d.g_ctrl_board,
        "ctrl_power_fraction": d.ctrl_power_fraction,
        "tmt2_w": d.states[-1].max_w,
        "idle_power_w": d.idle_power_w,
    }
    for name, p in f.slots.items():
        out[f"{name}.air_coupling"] = p.air_coupling
        out[f"{name}.v_chassis_fan"] = p.v_chassis_fan
        out[f"{name}.v_heater"] = p.v_heater
    out.update({f"{name}.air_c": air for name, air in f.air_c.items()})
    return out


def build(v: dict[str, float], base: Fitted) -> Fitted:
    """base with every calibrated number taken from v."""
    drive = base.drive
    states = (*drive.states[:-1], replace(drive.states[-1], max_w=v["tmt2_w"]))
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
    slots = {
        name: replace(
            p,
            air_coupling=v[f"{name}.air_coupling"],
            v_chassis_fan=v[f"{name}.v_chassis_fan"],
            v_heater=v[f"{name}.v_heater"],
        )
        for name, p in base.slots.items()
    }
    return Fitted(d, slots, {name: v[f"{name}.air_c"] for name in base.air_c})


@dataclass(frozen=True)
class Model:
    """Which calibrated numbers the fit moves (within their bounds), which it holds, and at what, and which
    it ties to another it moves."""

    name: str
    fixed: tuple[Fixed, ...]
    ties: tuple[Tie, ...] = ()

    @property
    def free(self) -> tuple[Bound, ...]:
        held = {f.name for f in self.fixed} | {t.name for t in self.ties}
        return tuple(b for b in all_bounds() if b.name not in held)

    def values(self, x: list[float], base: Fitted) -> dict[str, float]:
        v = read(base)
        v.update({f.name: f.value for f in self.fixed})
        v.update({b.name: float(a) for b, a in zip(self.free, x, strict=True)})
        v.update({t.name: v[t.to] for t in self.ties})
        return v

    def apply(self, x: list[float], base: Fitted) -> Fitted:
        return build(self.values(x, base), base)

    def start(self, base: Fitted) -> list[float]:
        """base's free numbers, clipped into their bounds."""
        v = read(base)
        return [min(b.hi, max(b.lo, v[b.name])) for b in self.free]


FREE = Model(
    "free",
    tuple(
        Fixed(f"{slot}.v_heater", 0.0, "the plant before the heater's exhaust reached a slot (the identified model's)")
        for slot in SLOTS
    ),
)
_HELD = (  # what no Puget cell constrains, or what they cannot tell apart: held in every model below
    Fixed(
        "tmt2_c",
        95.0,
        "no Puget cell reaches it (the light throttle holds the controller at tmt1_c); no published "
        "heavy-throttle temperature (WCTEMP/CCTEMP report 0): kept at the top of its bound",
    ),
    Fixed(
        "hysteresis_c",
        2.0,
        "no Puget cell leaves the throttle (120 s of continuous write); EST: two steps of the whole-kelvin "
        "temperature NVMe reports",
    ),
    Fixed(
        "top.air_coupling",
        1.0,
        "definition: a profile's air target is the air at the top slot, in the first GPU's exhaust (Tom's "
        "Hardware's hottest point in the case); couplings and targets otherwise trade off exactly",
    ),
    Fixed(
        "underside.air_coupling",
        1.0,
        "behind the motherboard tray no intake air dilutes the chassis air (little airflow): the slot "
        "shares the top slot's air, its air speed alone is its own",
    ),
    Fixed(
        "upright.v_heater",
        0.0,
        "the upright riser stands at the board's edge, far from both GPUs (Puget: its cells barely change "
        "from one idle GPU to two): no GPU's exhaust passes it",
    ),
    Fixed(
        "underside.v_heater",
        0.0,
        "behind the motherboard tray, the board between it and the GPUs: no GPU's exhaust reaches it",
    ),
)
IDENTIFIED = Model(
    "identified",
    (
        *_HELD,
        *(
            Fixed(
                f"{slot}.v_heater",
                0.0,
                "no exhaust term in this model (the fit before the exhaust's; --model exhaust and those after "
                "add it: docs/virtual-drive.md)",
            )
            for slot in ("top", "bottom")
        ),
    ),
)
EXHAUST = Model(  # the slots beside the GPUs in their exhaust (docs/virtual-drive.md, "Models tried")
    "exhaust",
    (
        *_HELD,
        Fixed(
            "top.v_chassis_fan",
            0.921,
            "seeds 000 and 002 run the drive in the top slot on an open bench (no GPU heat, no exhaust), seed 004 "
            "with one idle GPU: their air speed is the chassis fan's alone. Held at the value the identified fit "
            "left, with which all three pass; the exhaust the Puget profiles add comes on top of it",
        ),
    ),
)
EXHAUST_TIED = Model(  # docs/virtual-drive.md, "Models tried"
    "exhaust-tied",
    EXHAUST.fixed,
    (
        Tie(
            "underside.v_chassis_fan",
            "upright.v_chassis_fan",
            "neither slot is in a GPU's exhaust; EST: the chassis fan moves the same air speed past the drive "
            "behind the tray as at the upright riser. Without it the underside's speed rests on its two cells "
            "alone, and either held out misses",
        ),
    ),
)
EXHAUST_TIED_HELD = Model(  # make fit's (FIT_MODEL): docs/virtual-drive.md, "Models tried"
    "exhaust-tied-held",
    (
        *EXHAUST_TIED.fixed,
        Fixed(
            "throttle_gain_w_per_k_s",
            0.092,
            "moves no Puget cell by a quarter of a tolerance (thermrig calibrate sensitivity --model exhaust-tied "
            "at these profiles): on the plateau from about 0.08 to 0.3; held at the value exhaust-tied's "
            "in-sample fit left",
        ),
        Fixed(
            "tmt2_w",
            1.82,
            "moves no Puget cell (the light throttle's allowance never falls to it in 120 s); held at the value "
            "exhaust-tied's in-sample fit left",
        ),
    ),
    EXHAUST_TIED.ties,
)
MODELS = {m.name: m for m in (IDENTIFIED, EXHAUST, EXHAUST_TIED, EXHAUST_TIED_HELD, FREE)}
FIT_MODEL = EXHAUST_TIED_HELD  # what make fit fits, crossval and sensitivity judge by default


@dataclass(frozen=True)
class Prior:
    """A physical value for a calibrated number, and where it comes from: where a fit starts that has
    seen no Puget cell (`thermrig calibrate crossval`'s folds)."""

    name: str
    value: float
    source: str


MIDDLE_SOURCE = "no published value: the middle of its bound"
PRIOR = (  # docs/sources.md; every other number starts at its bound's middle (MIDDLE_SOURCE)
    Prior("tmt1_c", 75.0, "no published threshold; 'start near 70-80 C on the controller': the middle of that"),
    Prior("board_capacity_j_per_k", 9.0, "M.2 2280 board <= 10 g (spec): ~9 J/K (EST)"),
    Prior(
        "single_gpu_load.air_c",
        39.0,
        "Tom's Hardware: 39 C at the hottest point of a closed case, one GPU under FurMark",
    ),
)
STARTS = ("prior", "middle", "profiles")  # where a crossval fit starts: crossval.start_point


def prior() -> dict[str, Prior]:
    """Every calibrated number's prior: PRIOR's, else its bound's middle."""
    given = {p.name: p for p in PRIOR}
    return {b.name: given.get(b.name, Prior(b.name, (b.lo + b.hi) / 2, MIDDLE_SOURCE)) for b in all_bounds()}


def start_point(model: Model, how: str, profiles: Fitted) -> Fitted:
    """Where a fit of model starts: "prior" (PRIOR, else each bound's middle), "middle" (each bound's
    middle), each free number there and every other one at the model's held value; or "profiles" (the
    profiles' values: a fit on every Puget cell, so a fold starting there has seen the cell it holds
    out). profiles supplies what no calibrated number sets (the drive's power states and the like)."""
    if how == "profiles":
        return profiles
    if how not in STARTS:
        raise ValueError(f"start {how!r}: one of {', '.join(STARTS)}")
    values = prior()
    x = [values[b.name].value if how == "prior" else (b.lo + b.hi) / 2 for b in model.free]
    return model.apply(x, profiles)
