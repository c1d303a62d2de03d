"""Write fitted values into hardware/profiles/*.toml in place: the value of `key = value` inside its
[section] changes, the comments and the layout stay, so `git diff` shows exactly what a fit moved."""

from __future__ import annotations

import re
from pathlib import Path

from thermrig.calibration.parameters import Fitted
from thermrig.hardware.drive_profiles import DriveProfile
from thermrig.hardware.power_state import PowerState
from thermrig.hardware.profiles import ProfileError, profiles_dir

_SECTION = re.compile(r"^\[([^\]]+)\]")


def set_values(path: Path, section: str, values: dict[str, str]) -> None:
    lines = path.read_text().splitlines()
    current, todo = None, dict(values)
    for i, line in enumerate(lines):
        m = _SECTION.match(line)
        if m:
            current = m.group(1)
            continue
        if current != section:
            continue
        key = line.split("=", 1)[0].strip()
        if key in todo and "=" in line:
            rest = line.split("=", 1)[1]
            comment = rest[rest.index("#") :] if "#" in rest else ""  # the values written hold no '#'
            text = f"{key} = {todo.pop(key)}"
            lines[i] = f"{text:<29} {comment}".rstrip() if comment else text
    if todo:
        raise ProfileError(f"{path}: [{section}] has no {', '.join(todo)} to update")
    path.write_text("\n".join(lines) + "\n")


Edit = tuple[str, str, dict[str, str]]  # profile file, [section], key -> TOML value


def _states(states: tuple[PowerState, ...]) -> str:
    return "[" + ", ".join(f'["{s.name}", {s.max_w:.2f}]' for s in states) + "]"


def fitted_edits(f: Fitted) -> list[Edit]:
    """The 950 Pro fit: the drive's fitted values, each slot's air figures, each chassis profile's air."""
    d = f.drive
    drive = {
        "tmt1_c": f"{d.tmt1_c:.1f}",
        "tmt2_c": f"{d.tmt2_c:.1f}",
        "hysteresis_c": f"{d.hysteresis_c:.2f}",
        "throttle_gain_w_per_k_s": f"{d.throttle_gain:.3f}",
        "ctrl_capacity_j_per_k": f"{d.ctrl_capacity:.3f}",
        "board_capacity_j_per_k": f"{d.board_capacity:.2f}",
        "g_ctrl_board_w_per_k": f"{d.g_ctrl_board:.3f}",
        "ctrl_power_fraction": f"{d.ctrl_power_fraction:.3f}",
        "idle_power_w": f"{d.idle_power_w:.3f}",
        "states": _states(d.states),
    }
    return [
        ("drives.toml", d.name, drive),
        *(
            (
                "slots.toml",
                name,
                {
                    "air_coupling": f"{p.air_coupling:.3f}",
                    "v_chassis_fan": f"{p.v_chassis_fan:.3f}",
                    "v_heater": f"{p.v_heater:.3f}",
                },
            )
            for name, p in f.slots.items()
        ),
        *(("chassis_profiles.toml", name, {"air_c": f"{air:.1f}"}) for name, air in f.air_c.items()),
    ]


def sm951_edits(d: DriveProfile) -> list[Edit]:
    """The SM951 fit: its throttle threshold, idle power and heavy-throttle power."""
    return [
        (
            "drives.toml",
            d.name,
            {"tmt1_c": f"{d.tmt1_c:.1f}", "idle_power_w": f"{d.idle_power_w:.3f}", "states": _states(d.states)},
        )
    ]


def as_toml(edits: list[Edit]) -> str:
    """What `write` would change, as TOML with the file of each section."""
    blocks = [
        "\n".join([f"[{section}]  # {name}", *(f"{k} = {v}" for k, v in values.items())])
        for name, section, values in edits
    ]
    return "\n\n".join(blocks) + "\n"


def write(edits: list[Edit]) -> list[Path]:
    profiles = profiles_dir()
    for name, section, values in edits:
        set_values(profiles / name, section, values)
    return sorted({profiles / name for name, _, _ in edits})
