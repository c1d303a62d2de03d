"""Chassis heat profiles (hardware/profiles/chassis_profiles.toml) and the SET they become."""

from __future__ import annotations

from dataclasses import dataclass

from thermrig.plant.profiles import ProfileError, hardware_dir, load_chassis_profiles


@dataclass(frozen=True)
class ChassisProfile:
    name: str
    description: str
    air_c: float | None  # None: heater off
    heater_limit_pct: float
    fan0_pct: float
    fan1_pct: float

    def set_args(self) -> dict[str, int]:
        """The SET command's values in protocol units."""
        args = {"fan0": round(self.fan0_pct * 10), "fan1": round(self.fan1_pct * 10)}
        if self.air_c is None:
            args["heat"] = 0
        else:
            args.update(air=round(self.air_c * 100), hlim=round(self.heater_limit_pct * 10), heat=1)
        return args


def _pct(path: str, name: str, table: dict, key: str, default: float | None = None) -> float:
    value = table.get(key, default)
    if not isinstance(value, int | float) or not 0 <= value <= 100:
        raise ProfileError(f"{path}: [{name}] {key} = {value!r}, expected a percentage 0-100")
    return float(value)


def load_profile(name: str) -> ChassisProfile:
    profiles = load_chassis_profiles()
    path = str(hardware_dir() / "profiles" / "chassis_profiles.toml")
    if name not in profiles:
        raise ProfileError(f"{path}: no chassis profile [{name}] (known: {', '.join(profiles)})")
    t = profiles[name]
    heat = t.get("heat", True)
    air = t.get("air_c")
    if heat and (not isinstance(air, int | float) or not 0 <= air <= 65):
        raise ProfileError(f"{path}: [{name}] air_c = {air!r}, expected degrees C within the rig's 0-65")
    return ChassisProfile(
        name=name,
        description=str(t.get("description", "")),
        air_c=float(air) if heat else None,
        heater_limit_pct=_pct(path, name, t, "heater_limit_pct", 100),
        fan0_pct=_pct(path, name, t, "fan0_pct"),
        fan1_pct=_pct(path, name, t, "fan1_pct", 0),
    )
