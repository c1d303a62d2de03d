"""The drive's own temperatures and thermal-management counters from `nvme smart-log -o json`.

nvme-cli reports temperatures in Kelvin (0 = sensor not implemented), the thermal management
transition counts and total times in seconds, and the warning/critical temperature times in minutes.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

from thermrig.settings import find_tool


class SmartError(RuntimeError):
    pass


@dataclass(frozen=True)
class DriveTemps:
    composite_c: float | None
    sensors_c: tuple[float | None, ...]  # sensors 1-8; None where not implemented
    tmt1_count: int
    tmt1_time_s: int
    tmt2_count: int
    tmt2_time_s: int
    warning_temp_time_min: int
    critical_temp_time_min: int
    power_state: int | None = None  # only where the source reports it (the virtual drive); nvme smart-log does not

    def fields(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {
            "tmt1_count": self.tmt1_count,
            "tmt1_time_s": self.tmt1_time_s,
            "tmt2_count": self.tmt2_count,
            "tmt2_time_s": self.tmt2_time_s,
            "warning_temp_time_min": self.warning_temp_time_min,
            "critical_temp_time_min": self.critical_temp_time_min,
        }
        if self.composite_c is not None:
            out["composite_c"] = self.composite_c
        if self.power_state is not None:
            out["power_state"] = self.power_state
        for i, value in enumerate(self.sensors_c, start=1):
            if value is not None:
                out[f"sensor{i}_c"] = value
        return out


def _kelvin(value: object) -> float | None:
    if not isinstance(value, int | float) or value <= 0:
        return None
    return round(float(value) - 273.15, 2)


def parse_smart_log(text: str) -> DriveTemps:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SmartError(f"nvme smart-log output is not JSON: {text[:80]!r}") from exc
    if "temperature" not in data:
        raise SmartError("nvme smart-log output has no temperature")

    def count(key: str) -> int:
        value = data.get(key, 0)
        return int(value) if isinstance(value, int | float) else 0

    return DriveTemps(
        composite_c=_kelvin(data["temperature"]),
        sensors_c=tuple(_kelvin(data.get(f"temperature_sensor_{i}")) for i in range(1, 9)),
        tmt1_count=count("thm_temp1_trans_count"),
        tmt1_time_s=count("thm_temp1_total_time"),
        tmt2_count=count("thm_temp2_trans_count"),
        tmt2_time_s=count("thm_temp2_total_time"),
        warning_temp_time_min=count("warning_temp_time"),
        critical_temp_time_min=count("critical_comp_time"),
        power_state=int(data["power_state"]) if isinstance(data.get("power_state"), int) else None,
    )


def read_smart_log(device: str) -> DriveTemps:
    nvme = find_tool("nvme")
    if not nvme.exists():
        raise SmartError("nvme-cli is not installed: run `make setup`")
    r = subprocess.run([nvme, "smart-log", device, "-o", "json"], capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        raise SmartError(f"nvme smart-log {device}: {r.stderr.strip() or r.stdout.strip()}")
    return parse_smart_log(r.stdout)
