"""The drive's own temperatures and thermal-management counters from `nvme smart-log -o json`, and,
where the drive has it, its own throttling from the OCP Datacenter NVMe SSD spec's extended SMART log
(log page C0h, `nvme ocp smart-add-log -o json`).

nvme-cli reports temperatures in Kelvin (0 = sensor not implemented), the thermal management
transition counts and total times in seconds, and the warning/critical temperature times in minutes.
Its OCP plugin prints the C0h log with one of two sets of key names (--output-format-version 1, the
default, or 2); both are read.
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
    data_units_written: int | None = None  # the drive's own count of writes, in 512,000-byte units

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
        if self.data_units_written is not None:
            out["data_units_written"] = self.data_units_written
        for i, value in enumerate(self.sensors_c, start=1):
            if value is not None:
                out[f"sensor{i}_c"] = value
        return out


def _kelvin(value: object) -> float | None:
    if not isinstance(value, int | float) or value <= 0:
        return None
    return round(float(value) - 273.15, 2)


def parse_smart_log(text: str) -> DriveTemps:
    data = _json(text, "nvme smart-log")
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
        data_units_written=int(v) if isinstance(v := data.get("data_units_written"), int | float) else None,
    )


# C0h's thermal throttling fields: drive_smart field <- nvme-cli's keys (output format versions 1 and 2)
OCP_FIELDS = {
    "ocp_throttle_events": ("Number of Thermal throttling events", "thermal_throttling_events"),
    "ocp_throttle_status": ("Current throttling status", "current_throttling_status"),
}
OCP_GUID_KEYS = ("Log page GUID", "log_page_guid")  # what tells the C0h log from the smart-log in a stream


def parse_ocp_smart_log(text: str | dict) -> dict[str, int]:
    """`nvme ocp smart-add-log -o json`: the thermal throttling event count (cumulative, as the TMT counts)
    and the current throttling status (0: not throttling; the spec's codes otherwise)."""
    data = text if isinstance(text, dict) else _json(text, "nvme ocp smart-add-log")
    out: dict[str, int] = {}
    for field, keys in OCP_FIELDS.items():
        value = next((data[k] for k in keys if k in data), None)
        if isinstance(value, int | float):
            out[field] = int(value)
    if not out:
        raise SmartError("nvme ocp smart-add-log output has no thermal throttling fields")
    return out


def is_ocp_log(data: dict) -> bool:
    return any(k in data for k in OCP_GUID_KEYS) and "temperature" not in data


def _json(text: str, what: str) -> dict:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SmartError(f"{what} output is not JSON: {text[:80]!r}") from exc
    if not isinstance(data, dict):
        raise SmartError(f"{what} output is not a JSON object: {text[:80]!r}")
    return data


class SmartReader:
    """A drive's smart-log, with its OCP extended SMART log where it has one: tried once; a drive (or an
    nvme-cli) without it is read with the plain smart-log from then on."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.has_ocp: bool | None = None  # None: not tried yet

    def read(self) -> dict[str, float | int]:
        fields: dict[str, float | int] = dict(read_smart_log(self.device).fields())
        if self.has_ocp is not False:
            try:
                fields.update(read_ocp_smart_log(self.device))
                self.has_ocp = True
            except SmartError:  # the drive (or nvme-cli) has no such log
                if self.has_ocp is None:
                    self.has_ocp = False
            except subprocess.TimeoutExpired:  # a busy machine, not an answer: asked again next time
                pass
        return fields


def read_ocp_smart_log(device: str) -> dict[str, int]:
    nvme = find_tool("nvme")
    r = subprocess.run([nvme, "ocp", "smart-add-log", device, "-o", "json"], capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        raise SmartError(f"nvme ocp smart-add-log {device}: {r.stderr.strip() or r.stdout.strip()}")
    return parse_ocp_smart_log(r.stdout)


def read_smart_log(device: str) -> DriveTemps:
    nvme = find_tool("nvme")
    if not nvme.exists():
        raise SmartError("nvme-cli is not installed: run `make setup`")
    r = subprocess.run([nvme, "smart-log", device, "-o", "json"], capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        raise SmartError(f"nvme smart-log {device}: {r.stderr.strip() or r.stdout.strip()}")
    return parse_smart_log(r.stdout)
