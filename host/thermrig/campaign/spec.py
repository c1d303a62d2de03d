"""Campaign files (TOML): read and validated, with errors naming the file, line, key and what is
expected. docs/campaigns.md describes every key; examples/ has one per seed experiment."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thermrig.campaign.lab_table import LabTable, read_lab_table
from thermrig.drive.thermal_config import HctmLevel, ThermalConfigError
from thermrig.dut.simulation import FIRMWARES
from thermrig.fio.job_file import JobFileError, check_job, read_job_file
from thermrig.fio.workloads import KINDS, LAB_KIND, RATE_SEARCH, Workload, WorkloadError, parse_size
from thermrig.hardware.chassis_profiles import ChassisProfile, load_profile, parse_profile
from thermrig.hardware.drive_profiles import drive_names
from thermrig.hardware.profiles import HEATSINKS, SLOTS, ProfileError
from thermrig.toml_file import TomlError, TomlFile

_WORKLOAD_KEYS = ("name", "kind", "runtime_s", "bs", "iodepth", "span", "steps", "fill", "score_window_s", "max_rounds")
_WORKLOAD_KEYS += ("job",)  # kind "fio"
EQUILIBRIUM_RULES = ("fit", "trend")  # the first is the default
COOLDOWN_MODES = ("active", "passive")
TRANSITIONS = ("passive", "driven")  # a change of chassis condition: waited out, or driven (campaign.transition)
BEFORE_CHANGE = ("wait", "skip")  # the cool-down of a run the next run's condition differs from
BASELINES = ("tail", "after")  # the baseline from the equilibrium's settled tail, or recorded after it
# within a hardware configuration: runs at random, chassis conditions in blocks, or the blocks from the coolest
# condition to the hottest and back (campaign.plan)
ORDERS = ("random", "blocks", "least-change")
_ORDER_KEYS = ("baseline", "order")
PHYSICAL = ("slot", "heatsink", "airflow")  # the operator changes these by hand
_IDENT = re.compile(r"[A-Za-z0-9_.:+-]{1,64}")
_CHANNEL = re.compile(r"[a-z][a-z0-9_]{0,31}")  # a name from the rig's channel map, checked against it at run time


class CampaignError(TomlError):
    """A campaign file that cannot be run as written; the message locates the problem."""


@dataclass(frozen=True)
class Equilibrium:
    """Every listed channel changing less than rate_c_per_min over the last window_s."""

    rate_c_per_min: float = 0.2
    window_s: float = 60.0
    timeout_s: float = 1800.0
    channels: tuple[str, ...] = ("chassis_air", "drive_ctrl")
    rule: str = "fit"  # EQUILIBRIUM_RULES: "trend" (the slope over the window) or "fit" (an exponential fit)
    carry: bool = True  # a run in the condition the previous one cooled down in starts with that telemetry
    transition: str = "passive"  # TRANSITIONS: "driven": heater or fans pushed until the drive nears the new level


@dataclass(frozen=True)
class Cooldown:
    """After the workload: the drive controller back within margin_c of its pre-workload baseline."""

    margin_c: float = 1.0
    timeout_s: float = 1800.0
    mode: str = "active"  # COOLDOWN_MODES: "active": slot fan full, air target lowered, then the profile again
    before_change: str = "wait"  # BEFORE_CHANGE: "skip": none when the next run is in another condition


@dataclass(frozen=True)
class DriveSpec:
    target: str  # a block device, a file path, or "virtual" (the simulated rig's drive)
    size: str = "1g"  # file targets
    serial: str | None = None  # block devices: the serial the operator confirmed
    model: str = "unknown"
    profile: str = "950pro_512"  # virtual: the drive profile (hardware/profiles/drives.toml)
    scale: float = 0.1  # virtual: wire rate per modelled rate (bandwidth and IOPS; times stay true)
    fast_fill: bool = True  # virtual: fills and SNIA preconditioning set the drive state at once (DriveUnderTest)
    keep_data: int = 0  # virtual: bytes of written data the drive keeps at most (a sparse file); 0: dropped
    filesystem: str = ""  # virtual: "ext4": fio runs on a file (size) in a file system made on the drive

    @property
    def is_virtual(self) -> bool:
        return self.target == "virtual"

    @property
    def is_block_device(self) -> bool:
        return self.target.startswith("/dev/")


@dataclass(frozen=True)
class Campaign:
    path: Path
    name: str
    description: str
    port: str  # "sim" or a device / pyserial URL
    rig_name: str
    sim_speed: float  # "sim" only: x real time for the rig's physics (fio always runs in real time)
    drive: DriveSpec
    equilibrium: Equilibrium
    cooldown: Cooldown
    factors: dict[str, tuple[Any, ...]]
    profiles: dict[str, ChassisProfile]
    workloads: tuple[Workload, ...]
    repeats: int = 1
    seed: int | None = None
    randomize: bool = True
    baseline_s: float = 30.0
    extra: dict[str, Any] = field(default_factory=dict)
    sim_firmware: str = "rigsim"  # "sim" only: the firmware the simulated rig runs (thermrig.dut.simulation.FIRMWARES)
    lab: LabTable | None = None  # [lab]: run on a lab's places (thermrig run --lab)
    baseline: str = "tail"  # BASELINES
    order: str = "random"  # ORDERS


def load_campaign(path: str | Path) -> Campaign:
    path = Path(path)
    r = TomlFile.read(path, CampaignError)
    data = r.data
    r.known(
        data,
        "campaign",
        {"campaign", "rig", "drive", "equilibrium", "cooldown", "factors", "profiles", "workload", "lab"},
    )
    lab = read_lab_table(r, data)  # on a lab: the place's rig, its test PC's drive ([rig] port unused)
    camp = r.get(data, "campaign", "campaign", dict, "a [campaign] table with a name")
    r.known(camp, "campaign", {"name", "description", "repeats", "seed", "randomize", "baseline_s", *_ORDER_KEYS})
    name = r.get(camp, "campaign", "name", str, "a name of letters, digits, _ . : + -")
    if not _IDENT.fullmatch(name):
        raise r.fail("campaign", "name", f"{name!r} has spaces or symbols", "letters, digits, _ . : + - (a tag)")
    repeats = r.get(camp, "campaign", "repeats", int, "a whole number of repeats >= 1", 1)
    if repeats < 1:
        raise r.fail("campaign", "repeats", f"{repeats}", "at least 1")
    rig = r.get(data, "rig", "rig", dict, 'a [rig] table with port = "sim" or a device', {} if lab else ...)
    r.known(rig, "rig", {"port", "name", "speed", "firmware"})
    sim_firmware = r.get(rig, "rig", "firmware", str, f"one of {', '.join(FIRMWARES)}", "rigsim")
    if sim_firmware not in FIRMWARES:
        raise r.fail("rig", "firmware", repr(sim_firmware), f"one of {', '.join(FIRMWARES)}")
    sim_speed = float(r.get(rig, "rig", "speed", (int, float), "a simulation speed >= 1 (x real time)", 1.0))
    if sim_speed < 1:
        raise r.fail("rig", "speed", f"{sim_speed}", "1 (real time) or more")
    drive = _drive(r, r.get(data, "drive", "drive", dict, "a [drive] table with a target"))
    profiles = _profiles(r, data.get("profiles", {}))
    factors = _factors(r, r.get(data, "factors", "factors", dict, "a [factors] table", {}), profiles)
    workloads = _workloads(r, r.get(data, "workload", "workload", list, "one or more [[workload]] tables"))
    _check_lab_jobs(workloads, drive)
    if drive.is_virtual and lab is None:
        port = r.get(rig, "rig", "port", str, 'a device path, a pyserial URL, or "sim"')
        if port != "sim":
            raise r.fail("drive", "target", "the virtual drive lives in the simulated rig", 'port = "sim" in [rig]')
    return Campaign(
        path=path,
        name=name,
        description=r.get(camp, "campaign", "description", str, "text", ""),
        port=r.get(rig, "rig", "port", str, 'a device path, a pyserial URL, or "sim"', "lab" if lab else ...),
        rig_name=r.get(rig, "rig", "name", str, "a rig name", "rig1"),
        sim_speed=sim_speed,
        drive=drive,
        equilibrium=_equilibrium(r, data.get("equilibrium", {})),
        cooldown=_cooldown(r, data.get("cooldown", {})),
        factors=factors,
        profiles=profiles,
        workloads=workloads,
        repeats=repeats,
        seed=r.get(camp, "campaign", "seed", int, "a whole number", None),
        randomize=r.get(camp, "campaign", "randomize", bool, "true or false", True),
        baseline_s=float(r.get(camp, "campaign", "baseline_s", (int, float), "seconds", 30.0)),
        sim_firmware=sim_firmware,
        lab=lab,
        baseline=_choice(r, camp, "campaign", "baseline", BASELINES),
        order=_choice(r, camp, "campaign", "order", ORDERS),
    )


def _choice(r: TomlFile, d: dict, section: str, key: str, choices: tuple[str, ...]) -> str:
    """One of choices, the first by default."""
    value = r.get(d, section, key, str, f"one of {', '.join(choices)}", choices[0])
    if value not in choices:
        raise r.fail(section, key, repr(value), f"one of {', '.join(choices)}")
    return value


def _drive(r: TomlFile, d: dict) -> DriveSpec:
    virtual_keys = ("profile", "scale", "fast_fill", "keep_data", "filesystem")
    r.known(d, "drive", {"target", "size", "serial", "model", *virtual_keys})
    target = r.get(d, "drive", "target", str, 'a block device (/dev/nvme0n1), a file path, or "virtual"')
    profile = r.get(d, "drive", "profile", str, "a virtual drive profile", "950pro_512")
    if target == "virtual":
        try:
            known = drive_names()
        except ProfileError as exc:
            raise CampaignError(str(exc)) from exc
        if profile not in known:
            raise r.fail("drive", "profile", f"{profile!r} is not a virtual drive", f"one of {', '.join(known)}")
    elif any(k in d for k in virtual_keys):
        key = next(k for k in virtual_keys if k in d)
        raise r.fail("drive", key, f"{key} is for the virtual drive", 'target = "virtual", or no ' + key)
    scale = float(r.get(d, "drive", "scale", (int, float), "a bandwidth scale in (0, 1]", 0.1))
    if not 0 < scale <= 1:
        raise r.fail("drive", "scale", f"{scale}", "a bandwidth scale in (0, 1]")
    keep = r.get(d, "drive", "keep_data", str, 'a size such as "8g" (or "0": drop written data)', "0")
    try:
        keep_data = parse_size(keep)
    except WorkloadError as exc:
        raise r.fail("drive", "keep_data", repr(keep), 'a size such as "8g" (or "0": drop written data)') from exc
    spec = DriveSpec(
        target=target,
        size=r.get(d, "drive", "size", str, "a size such as 4g", "1g"),
        serial=r.get(d, "drive", "serial", str, "the drive's serial number", None),
        model=r.get(d, "drive", "model", str, "a model name (tag)", profile if target == "virtual" else "unknown"),
        profile=profile,
        scale=scale,
        fast_fill=r.get(d, "drive", "fast_fill", bool, "true or false", True),
        keep_data=keep_data,
        filesystem=r.get(d, "drive", "filesystem", str, '"ext4" (or "": the drive as a block device)', ""),
    )
    if spec.filesystem not in ("", "ext4"):
        raise r.fail("drive", "filesystem", repr(spec.filesystem), '"ext4" (or "": the drive as a block device)')
    if spec.filesystem and not spec.keep_data:
        raise r.fail("drive", "filesystem", "a file system needs the data kept", 'keep_data = "8g" (or more)')
    if not _IDENT.fullmatch(spec.model):
        raise r.fail("drive", "model", f"{spec.model!r}", "letters, digits, _ . : + - (it becomes a tag)")
    return spec


def _equilibrium(r: TomlFile, d: dict) -> Equilibrium:
    r.known(d, "equilibrium", {"rate_c_per_min", "window_s", "timeout_s", "channels", "rule", "carry", "transition"})
    channels = tuple(
        r.get(d, "equilibrium", "channels", list, "a list of the rig's channel names", list(Equilibrium.channels))
    )
    for ch in channels:
        if not isinstance(ch, str) or not _CHANNEL.fullmatch(ch):
            raise r.fail("equilibrium", "channels", f"{ch!r}", "channel names from the rig's map (thermrig rig info)")
    eq = Equilibrium(
        rate_c_per_min=float(r.get(d, "equilibrium", "rate_c_per_min", (int, float), "°C per minute", 0.2)),
        window_s=float(r.get(d, "equilibrium", "window_s", (int, float), "seconds", 60.0)),
        timeout_s=float(r.get(d, "equilibrium", "timeout_s", (int, float), "seconds", 1800.0)),
        channels=channels,
        rule=_choice(r, d, "equilibrium", "rule", EQUILIBRIUM_RULES),
        carry=r.get(d, "equilibrium", "carry", bool, "true or false", True),
        transition=_choice(r, d, "equilibrium", "transition", TRANSITIONS),
    )
    if eq.rate_c_per_min <= 0 or eq.window_s <= 0 or eq.timeout_s < eq.window_s:
        raise r.fail(
            "equilibrium",
            None,
            "non-positive rate or window, or timeout shorter than the window",
            "rate_c_per_min > 0, window_s > 0, timeout_s >= window_s",
        )
    return eq


def _cooldown(r: TomlFile, d: dict) -> Cooldown:
    r.known(d, "cooldown", {"margin_c", "timeout_s", "mode", "before_change"})
    cd = Cooldown(
        margin_c=float(r.get(d, "cooldown", "margin_c", (int, float), "°C", 1.0)),
        timeout_s=float(r.get(d, "cooldown", "timeout_s", (int, float), "seconds", 1800.0)),
        mode=_choice(r, d, "cooldown", "mode", COOLDOWN_MODES),
        before_change=_choice(r, d, "cooldown", "before_change", BEFORE_CHANGE),
    )
    if cd.margin_c <= 0 or cd.timeout_s <= 0:
        raise r.fail("cooldown", None, "non-positive margin or timeout", "margin_c > 0 and timeout_s > 0")
    return cd


def _profiles(r: TomlFile, d: dict) -> dict[str, ChassisProfile]:
    return {name: parse_profile(r, t, f"profiles.{name}", name) for name, t in d.items()}


def _factors(r: TomlFile, d: dict, profiles: dict[str, ChassisProfile]) -> dict[str, tuple[Any, ...]]:
    r.known(d, "factors", {*PHYSICAL, "profile", "fan1_pct", "hctm"})
    out: dict[str, tuple[Any, ...]] = {}
    for key, values in d.items():
        if not isinstance(values, list) or not values:
            raise r.fail("factors", key, f"{values!r}", "a non-empty list of levels")
        out[key] = tuple(values)
    for slot in out.get("slot", ()):
        if slot not in SLOTS:
            raise r.fail("factors", "slot", f"unknown slot {slot!r}", f"levels from {', '.join(SLOTS)}")
    for sink in out.get("heatsink", ()):
        if sink not in HEATSINKS:
            raise r.fail("factors", "heatsink", f"unknown heatsink {sink!r}", f"levels from {', '.join(HEATSINKS)}")
    for level in out.get("airflow", ()):
        if not isinstance(level, str) or not _IDENT.fullmatch(level):
            raise r.fail("factors", "airflow", f"{level!r}", "short names of airflow placements (tags)")
    for name in out.get("profile", ()):
        if name not in profiles:
            try:
                profiles[name] = load_profile(str(name))
            except ProfileError as exc:
                raise r.fail("factors", "profile", str(exc), "profiles from [profiles.*] or the hardware file") from exc
    for pct in out.get("fan1_pct", ()):
        if not isinstance(pct, int | float) or not 0 <= pct <= 100:
            raise r.fail("factors", "fan1_pct", f"{pct!r}", "percentages 0-100")
    for level in out.get("hctm", ()):
        try:
            HctmLevel.parse(level)
        except ThermalConfigError as exc:
            expected = 'levels "off" or "TMT1/TMT2" in °C, e.g. ["off", "60/70"]'
            raise r.fail("factors", "hctm", str(exc), expected) from exc
    if len({HctmLevel.parse(x).tag for x in out.get("hctm", ())}) < len(out.get("hctm", ())):
        raise r.fail("factors", "hctm", f"{list(out['hctm'])!r} repeats a level", "each level once")
    if "profile" not in out:
        raise r.fail("factors", None, "no profile factor", 'profile = ["..."] naming at least one chassis profile')
    return out


def _workloads(r: TomlFile, items: list) -> tuple[Workload, ...]:
    out = []
    names = set()
    for i, t in enumerate(items):
        r.known(
            t,
            "workload",
            {*_WORKLOAD_KEYS},
            i,
        )
        name = r.get(t, "workload", "name", str, "a workload name", occurrence=i)
        kind = r.get(t, "workload", "kind", str, f"one of {', '.join((*KINDS, LAB_KIND, RATE_SEARCH))}", occurrence=i)
        job = r.get(t, "workload", "job", str, "a fio job file, relative to the campaign file", "", i)
        if job and kind != LAB_KIND:
            raise r.fail("workload", "job", f"job is for kind = {LAB_KIND!r}", f'kind = "{LAB_KIND}", or no job', i)
        if not _IDENT.fullmatch(name) or name in names:
            raise r.fail("workload", "name", f"{name!r} is not a unique identifier", "a unique short name", i)
        names.add(name)
        try:
            w = Workload(
                name=name,
                kind=kind,
                runtime_s=r.get(t, "workload", "runtime_s", int, "whole seconds", 300, i),
                bs=r.get(t, "workload", "bs", str, "a block size such as 4k", "", i),
                iodepth=r.get(t, "workload", "iodepth", int, "a queue depth", 0, i),
                span=r.get(t, "workload", "span", str, "a size such as 16g", "", i),
                steps=tuple(r.get(t, "workload", "steps", list, "read percentages, e.g. [100, 50, 0]", [], i)),
                fill=r.get(t, "workload", "fill", bool, "true or false", True, i),
                score_window_s=r.get(t, "workload", "score_window_s", int, "seconds", 400, i),
                max_rounds=r.get(t, "workload", "max_rounds", int, "rounds, 5-25 (rate_search: steps)", 25, i),
                job=str((r.path.parent / job).resolve()) if job else "",
            ).resolved()
        except WorkloadError as exc:
            key = next((k for k in ("steps", "bs", "span", "runtime_s", "max_rounds", "job") if k in str(exc)), "kind")
            raise r.fail("workload", key, str(exc), "a valid workload", i) from exc
        out.append(w)
    return tuple(out)


def _check_lab_jobs(workloads: tuple[Workload, ...], drive: DriveSpec) -> None:
    """A lab's fio job file: read and checked against what thermrig sets on this target, before any run."""
    for w in workloads:
        if w.kind == LAB_KIND:
            try:
                check_job(read_job_file(w.job), virtual=drive.is_virtual and not drive.filesystem)  # NBD: engine ours
            except JobFileError as exc:
                raise CampaignError(f"workload {w.name!r}: {exc}") from exc
