"""Load the plant's parameter files (TOML), validated where they are read: the user's own in the config
dir's profiles/ (XDG_CONFIG_HOME/thermrig/profiles), file by file over the packaged ones (the package's
data; hardware/profiles in a checkout), or all from $THERMRIG_HARDWARE_DIR/profiles."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thermrig.paths import packaged
from thermrig.settings import config_dir, data_dir, environment
from thermrig.toml_file import TomlError, TomlFile

SLOTS = ("top", "bottom", "upright", "underside")
HEATSINKS = ("none", "passive")


class ProfileError(TomlError):
    """A profile file is missing, malformed, or lacks a key; the message names file, line and key."""


def profiles_dir() -> Path:
    """The profiles thermrig ships (or $THERMRIG_HARDWARE_DIR/profiles): what `make fit` rewrites."""
    env = environment("THERMRIG_HARDWARE_DIR")
    return Path(env) / "profiles" if env else packaged("profiles")


def user_profiles_dir() -> Path:
    """The user's own profiles: a file here is read instead of the packaged one of the same name."""
    return config_dir() / "profiles"


def profile_path(name: str) -> Path:
    """profiles/<name>: the user's, else the packaged one (with THERMRIG_HARDWARE_DIR, that folder's)."""
    mine = user_profiles_dir() / name
    if not environment("THERMRIG_HARDWARE_DIR") and mine.exists():
        return mine
    return profiles_dir() / name


def profile_file(name: str) -> TomlFile:
    """profiles/<name> (profile_path), parsed; its errors are ProfileErrors."""
    missing = f"put one in {user_profiles_dir()} or set THERMRIG_HARDWARE_DIR to a folder holding profiles/"
    return TomlFile.read(profile_path(name), ProfileError, missing)


@dataclass(frozen=True)
class ChassisParams:
    room_c: float
    room_rh: float
    air_capacity: float
    g_still: float
    g_fan: float
    heater_max_w: float
    heater_capacity: float
    g_heater_air: float
    fan_max_rpm: float
    fan_min_duty: float
    fan_min_rpm_fraction: float
    fan_spinup_s: float
    pulses_per_rev: int
    tc_noise_c: float
    tc_lag_s: float
    amb_noise_c: float
    rh_noise_pct: float


@dataclass(frozen=True)
class SlotParams:
    name: str
    air_coupling: float
    v_chassis_fan: float
    v_slot_fan: float
    v_heater: float = 0.0  # m/s at the slot with the heater at its full output (its exhaust passing the slot)


@dataclass(frozen=True)
class DriveThermalParams:
    board_capacity: float
    ctrl_capacity: float
    g_ctrl_board: float
    g_board_connector: float
    ctrl_power_fraction: float
    board_area: float
    ctrl_area: float
    h_still: float
    h_forced: float
    idle_power_w: float
    sink_name: str
    sink_capacity: float
    g_board_sink: float
    g_ctrl_sink: float
    sink_area: float


def chassis_path(name: str | None = None) -> Path:
    """The chassis file: profiles/chassis.toml (profile_path), or a named one (`thermrig rig identify`
    writes them): the user's data dir's chassis/NAME.toml, else the packaged profiles' chassis/NAME.toml."""
    if name is None:
        return profile_path("chassis.toml")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or name.startswith("."):
        raise ProfileError(f"chassis name {name!r}: use letters, digits, '-', '_' and '.'")
    for folder in (data_dir() / "chassis", profiles_dir() / "chassis"):
        if (folder / f"{name}.toml").exists():
            return folder / f"{name}.toml"
    known = sorted({p.stem for f in (data_dir() / "chassis", profiles_dir() / "chassis") for p in f.glob("*.toml")})
    raise ProfileError(
        f"no chassis {name!r} in {data_dir() / 'chassis'} or {profiles_dir() / 'chassis'}"
        f" (known: {', '.join(known) or 'none'}; `thermrig rig identify --name {name}` makes one)"
    )


def load_chassis(name: str | None = None) -> ChassisParams:
    path = chassis_path(name)
    r = TomlFile.read(path, ProfileError, f"put one in {user_profiles_dir()} or set THERMRIG_HARDWARE_DIR")

    def n(sec: str, key: str, lo: float, hi: float) -> float:
        return r.number(r.section(sec), sec, key, lo, hi)

    return ChassisParams(
        room_c=n("room", "temp_c", -10, 50),
        room_rh=n("room", "humidity_pct", 0, 100),
        air_capacity=n("air", "capacity_j_per_k", 50, 50_000),
        g_still=n("air", "g_still_w_per_k", 0.1, 100),
        g_fan=n("air", "g_fan_w_per_k", 0, 200),
        heater_max_w=n("heater", "max_w", 1, 2000),
        heater_capacity=n("heater", "capacity_j_per_k", 1, 1000),
        g_heater_air=n("heater", "g_air_w_per_k", 0.1, 1000),
        fan_max_rpm=n("fans", "max_rpm", 100, 20_000),
        fan_min_duty=n("fans", "min_duty", 0, 0.5),
        fan_min_rpm_fraction=n("fans", "min_rpm_fraction", 0, 1),
        fan_spinup_s=n("fans", "spinup_s", 0.1, 10),
        pulses_per_rev=int(n("fans", "pulses_per_rev", 1, 4)),
        tc_noise_c=n("sensors", "tc_noise_c", 0, 2),
        tc_lag_s=n("sensors", "tc_lag_s", 0.01, 30),
        amb_noise_c=n("sensors", "amb_noise_c", 0, 2),
        rh_noise_pct=n("sensors", "rh_noise_pct", 0, 10),
    )


def chassis_toml(c: ChassisParams, note: str) -> str:
    """A chassis file holding c, in the form load_chassis reads; note: comment lines at its top."""
    head = "".join(f"# {line}\n" for line in note.splitlines())
    return (
        f"{head}\n[room]\ntemp_c = {c.room_c:.6g}\nhumidity_pct = {c.room_rh:.6g}\n\n"
        f"[air]\ncapacity_j_per_k = {c.air_capacity:.6g}\ng_still_w_per_k = {c.g_still:.6g}\n"
        f"g_fan_w_per_k = {c.g_fan:.6g}\n\n"
        f"[heater]\nmax_w = {c.heater_max_w:.6g}\ncapacity_j_per_k = {c.heater_capacity:.6g}\n"
        f"g_air_w_per_k = {c.g_heater_air:.6g}\n\n"
        f"[fans]\nmax_rpm = {c.fan_max_rpm:.6g}\nmin_duty = {c.fan_min_duty:.6g}\n"
        f"min_rpm_fraction = {c.fan_min_rpm_fraction:.6g}\nspinup_s = {c.fan_spinup_s:.6g}\n"
        f"pulses_per_rev = {c.pulses_per_rev}\n\n"
        f"[sensors]\ntc_noise_c = {c.tc_noise_c:.6g}\ntc_lag_s = {c.tc_lag_s:.6g}\n"
        f"amb_noise_c = {c.amb_noise_c:.6g}\nrh_noise_pct = {c.rh_noise_pct:.6g}\n"
    )


def load_slot(name: str) -> SlotParams:
    r = profile_file("slots.toml")
    s = r.section(name, SLOTS)
    return SlotParams(
        name=name,
        air_coupling=r.number(s, name, "air_coupling", 0, 1.5),
        v_chassis_fan=r.number(s, name, "v_chassis_fan", 0, 10),
        v_slot_fan=r.number(s, name, "v_slot_fan", 0, 10),
        v_heater=r.number(s, name, "v_heater", 0, 10, 0.0),
    )


# Numbers read by table: field name -> (TOML key, lowest, highest).
Bounds = dict[str, tuple[str, float, float]]

# The drive's thermal numbers, heatsinks.toml's [drive]: the plant's defaults.
DRIVE_THERMAL: Bounds = {
    "board_capacity": ("board_capacity_j_per_k", 1, 100),
    "ctrl_capacity": ("ctrl_capacity_j_per_k", 0.05, 20),
    "g_ctrl_board": ("g_ctrl_board_w_per_k", 0.01, 10),
    "ctrl_power_fraction": ("ctrl_power_fraction", 0, 1),
    "idle_power_w": ("idle_power_w", 0, 10),
    "g_board_connector": ("g_board_connector_w_per_k", 0, 1),
    "board_area": ("board_area_m2", 0.0001, 0.1),
    "ctrl_area": ("ctrl_area_m2", 0, 0.01),
    "h_still": ("h_still", 1, 50),
    "h_forced": ("h_forced", 0, 100),
}
# Those a drive's own package sets: each profile of drives.toml has them, with the same bounds, and
# DriveProfile.thermal puts them in place of the defaults.
DRIVE_PACKAGE: Bounds = {
    f: DRIVE_THERMAL[f]
    for f in ("board_capacity", "ctrl_capacity", "g_ctrl_board", "ctrl_power_fraction", "idle_power_w")
}
# A heatsink of heatsinks.toml.
HEATSINK: Bounds = {
    "sink_capacity": ("capacity_j_per_k", 0, 1000),
    "g_board_sink": ("g_board_sink_w_per_k", 0, 100),
    "g_ctrl_sink": ("g_ctrl_sink_w_per_k", 0, 100),
    "sink_area": ("area_m2", 0, 1),
}


def numbers(number: Callable[[str, float, float], float], table: Bounds) -> dict[str, float]:
    """The table's numbers, each read by number(key, lowest, highest), by field name."""
    return {field: number(key, lo, hi) for field, (key, lo, hi) in table.items()}


def load_drive_thermal(heatsink: str) -> DriveThermalParams:
    r = profile_file("heatsinks.toml")
    dr = r.section("drive")
    hs = r.section(heatsink, HEATSINKS)

    def n(key: str, lo: float, hi: float) -> float:
        return r.number(dr, "drive", key, lo, hi)

    def h(key: str, lo: float, hi: float) -> float:
        return r.number(hs, heatsink, key, lo, hi)

    return DriveThermalParams(sink_name=heatsink, **numbers(n, DRIVE_THERMAL), **numbers(h, HEATSINK))


def load_chassis_profiles() -> dict[str, dict[str, Any]]:
    """The chassis profiles file as tables (the calibration fits and rewrites their air_c); parsed
    profiles come from thermrig.hardware.chassis_profiles."""
    return profile_file("chassis_profiles.toml").data
