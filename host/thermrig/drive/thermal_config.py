"""A drive's thermal configuration as NVMe reports it, and host-controlled thermal management (HCTM).

From `nvme id-ctrl -o json` (nvme-cli 1.x and 2.x field names): the warning and critical composite
temperatures (WCTEMP, CCTEMP), whether the drive supports HCTM (HCTMA bit 0) and the range it accepts
(MNTMT..MXTMT), and its power states' maximum power (MXPS scales 0.01 W or 0.0001 W). From `nvme
get-feature -f 0x10`: the current HCTM thresholds, TMT1 in bits 31:16 and TMT2 in bits 15:0, in kelvin,
0 meaning that threshold is off. Every field is optional: a drive that lacks one is recorded without
it, never an error (older drives report 0 for what they do not implement).

Read through thermrig.dut.drive.ThermalManagement: nvme-cli on a real drive (NvmeCli), the model on the
virtual drive (sim/drive_under_test.py). A campaign's `hctm` factor levels (HctmLevel): "off" (no host
thresholds: value 0) or "TMT1/TMT2" in °C.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

from thermrig.dut.drive import ThermalManagement
from thermrig.errors import ThermrigError
from thermrig.hardware.power_state import PowerState

KELVIN = 273.15
FEATURE_HCTM = 0x10


class ThermalConfigError(ThermrigError, ValueError):
    pass


@dataclass(frozen=True)
class ThermalConfig:
    wctemp_c: float | None = None  # warning composite temperature
    cctemp_c: float | None = None  # critical composite temperature
    hctm_supported: bool | None = None  # None: the drive did not say (no hctma field)
    mntmt_c: float | None = None  # lowest TMT the drive accepts
    mxtmt_c: float | None = None  # highest
    power_states: tuple[PowerState, ...] = ()
    tmt1_c: float | None = None  # current HCTM thresholds (None: off or not read)
    tmt2_c: float | None = None
    hctm_value: int | None = None  # the current HCTM feature value as read (0: both thresholds off)

    def fields(self) -> dict[str, float | int | bool]:
        """What a run records (manifest, InfluxDB): only what the drive reported."""
        out: dict[str, float | int | bool] = {}
        for name in ("wctemp_c", "cctemp_c", "mntmt_c", "mxtmt_c", "tmt1_c", "tmt2_c", "hctm_value"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.hctm_supported is not None:
            out["hctm_supported"] = self.hctm_supported
        for i, ps in enumerate(self.power_states):
            out[f"ps{i}_max_power_w"] = ps.max_w
        return out

    def with_hctm(self, value: int) -> ThermalConfig:
        tmt1, tmt2 = (value >> 16) & 0xFFFF, value & 0xFFFF
        return ThermalConfig(
            **{**self.__dict__, "tmt1_c": _celsius(tmt1), "tmt2_c": _celsius(tmt2), "hctm_value": value}  # type: ignore[arg-type]
        )


def _celsius(kelvin: object) -> float | None:
    if not isinstance(kelvin, int | float) or isinstance(kelvin, bool) or kelvin <= 0:
        return None
    return round(float(kelvin) - KELVIN, 2)


def _kelvin(celsius: float) -> int:
    return round(celsius + KELVIN)


def parse_id_ctrl(text: str) -> ThermalConfig:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ThermalConfigError(f"nvme id-ctrl output is not JSON: {text[:80]!r}") from exc
    if not isinstance(data, dict):
        raise ThermalConfigError("nvme id-ctrl output is not a JSON object")
    hctma = data.get("hctma")
    states = []
    for psd in data.get("psds") or []:
        if not isinstance(psd, dict) or not isinstance(psd.get("max_power"), int | float):
            continue
        flags = psd.get("flags")  # nvme-cli 1.x: bit 0 MXPS, bit 1 NOPS; 2.x: fields of their own
        scale = psd.get("max_power_scale", flags & 1 if isinstance(flags, int) else 0)
        non_op = psd.get("non-operational_state", (flags >> 1) & 1 if isinstance(flags, int) else 0)
        states.append(PowerState(max_w=round(psd["max_power"] * (1e-4 if scale else 1e-2), 4), operational=not non_op))
    return ThermalConfig(
        wctemp_c=_celsius(data.get("wctemp")),
        cctemp_c=_celsius(data.get("cctemp")),
        hctm_supported=bool(hctma & 1) if isinstance(hctma, int) else None,
        mntmt_c=_celsius(data.get("mntmt")),
        mxtmt_c=_celsius(data.get("mxtmt")),
        power_states=tuple(states),
    )


def parse_hctm_feature(text: str) -> int:
    """The HCTM feature's value from `nvme get-feature -f 0x10` (its text, "Current value:0x01540159",
    or JSON with a "value")."""
    with_json = None
    with contextlib.suppress(json.JSONDecodeError):
        with_json = json.loads(text)
    if isinstance(with_json, dict) and isinstance(with_json.get("value"), int):
        return with_json["value"]
    m = re.search(r"[Vv]alue:\s*(0[xX][0-9a-fA-F]+|\d+)", text)
    if m is None:
        raise ThermalConfigError(f"no HCTM value in nvme get-feature's output: {text.strip()[:80]!r}")
    return int(m.group(1), 0)


def hctm_value(tmt1_c: float, tmt2_c: float) -> int:
    """The Set Features value for HCTM: TMT1 << 16 | TMT2, each in kelvin."""
    return _kelvin(tmt1_c) << 16 | _kelvin(tmt2_c)


def check_hctm(config: ThermalConfig, tmt1_c: float, tmt2_c: float, drive: str = "the drive") -> None:
    """Refuse, before a run, what the drive would reject or what makes no sense: one line each."""
    if config.hctm_supported is False:
        raise ThermalConfigError(f"{drive} does not support host-controlled thermal management (HCTMA = 0)")
    if config.hctm_supported is None:
        raise ThermalConfigError(f"{drive} does not report host-controlled thermal management (no HCTMA)")
    if tmt1_c >= tmt2_c:
        raise ThermalConfigError(f"TMT1 {tmt1_c:g} °C must be below TMT2 {tmt2_c:g} °C")
    lo, hi = config.mntmt_c, config.mxtmt_c
    for name, value in (("TMT1", tmt1_c), ("TMT2", tmt2_c)):
        kelvin = _kelvin(value)  # as the drive compares them: whole kelvins
        if (lo is not None and kelvin < _kelvin(lo)) or (hi is not None and kelvin > _kelvin(hi)):
            raise ThermalConfigError(
                f"{name} {value:g} °C is outside the {lo if lo is not None else '?'}.."
                f"{hi if hi is not None else '?'} °C that {drive} accepts (MNTMT..MXTMT)"
            )


@dataclass(frozen=True)
class HctmLevel:
    """A level of a campaign's `hctm` factor: "off" (no host thresholds, the drive's own thermal
    management alone: HCTM value 0) or "TMT1/TMT2" in °C, e.g. "60/70"."""

    tmt1_c: float | None = None  # None: off
    tmt2_c: float | None = None

    @classmethod
    def parse(cls, text: object) -> HctmLevel:
        if text == "off":
            return cls()
        parts = text.split("/") if isinstance(text, str) else []
        try:
            tmt1, tmt2 = (float(x) for x in parts)
        except ValueError as exc:
            raise ThermalConfigError(f'{text!r} is not "off" or "TMT1/TMT2" in °C (e.g. "60/70")') from exc
        if tmt1 >= tmt2:
            raise ThermalConfigError(f"{text!r}: TMT1 {tmt1:g} °C must be below TMT2 {tmt2:g} °C")
        return cls(tmt1, tmt2)

    @property
    def off(self) -> bool:
        return self.tmt1_c is None or self.tmt2_c is None

    @property
    def value(self) -> int:
        return 0 if self.tmt1_c is None or self.tmt2_c is None else hctm_value(self.tmt1_c, self.tmt2_c)

    @property
    def label(self) -> str:
        return "off" if self.tmt1_c is None else f"{self.tmt1_c:g}/{self.tmt2_c:g}"

    @property
    def tag(self) -> str:
        """The level as an InfluxDB tag value ("60/70" -> "60-70")."""
        return self.label.replace("/", "-")

    def check(self, config: ThermalConfig, drive: str) -> None:
        """Refuse what the drive would not take: a threshold on a drive without HCTM or outside its range.
        "off" asks nothing of a drive without HCTM (it has no host thresholds to turn off)."""
        if self.tmt1_c is not None and self.tmt2_c is not None:
            check_hctm(config, self.tmt1_c, self.tmt2_c, drive)


def _nvme(*args: str) -> str:
    nvme = shutil.which("nvme")
    if nvme is None:
        raise ThermalConfigError("nvme-cli is not installed: run `make setup`")
    r = subprocess.run([nvme, *args], capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        raise ThermalConfigError(f"nvme {' '.join(args)}: {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


@dataclass(frozen=True)
class NvmeCli:
    """A real NVMe drive's thermal management through nvme-cli (thermrig.dut.drive.ThermalManagement)."""

    device: str  # the controller or a namespace: /dev/nvme0, /dev/nvme0n1

    def identify(self) -> str:
        return _nvme("id-ctrl", self.device, "-o", "json")

    def hctm(self) -> int:
        return parse_hctm_feature(_nvme("get-feature", self.device, "-f", str(FEATURE_HCTM)))

    def set_hctm(self, value: int) -> None:
        _nvme("set-feature", self.device, "-f", str(FEATURE_HCTM), "-v", str(value))


def _management(drive: str | ThermalManagement) -> ThermalManagement:
    return NvmeCli(drive) if isinstance(drive, str) else drive


def read_thermal_config(drive: str | ThermalManagement) -> ThermalConfig:
    """A drive's thermal configuration (a device path: through nvme-cli); the current HCTM value where
    the drive supports HCTM."""
    thermal = _management(drive)
    config = parse_id_ctrl(thermal.identify())
    if config.hctm_supported:
        config = config.with_hctm(thermal.hctm())
    return config


@contextlib.contextmanager
def hctm_applied(
    drive: str | ThermalManagement, tmt1_c: float | None, tmt2_c: float | None, name: str | None = None
) -> Iterator[ThermalConfig]:
    """Set a drive's HCTM thresholds for a run (None, None: off, value 0) and put its own value back
    afterwards, whatever ends the run (Ctrl-C included). Checked against the drive's range before
    anything is set. "Off" on a drive without HCTM sets nothing."""
    thermal = _management(drive)
    name = name or (drive if isinstance(drive, str) else "the drive")
    level = HctmLevel(tmt1_c, tmt2_c)
    before = read_thermal_config(thermal)
    level.check(before, name)
    if not before.hctm_supported:
        yield before
        return
    old = thermal.hctm()
    thermal.set_hctm(level.value)
    try:
        yield before.with_hctm(thermal.hctm())
    finally:
        thermal.set_hctm(old)
