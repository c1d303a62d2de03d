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
from thermrig.fio.workloads import ResolvedWorkload, Workload, WorkloadError, WorkloadKind, parse_size
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
_TAG = "letters, digits, _ . : + - (it becomes a tag)"
_FILESYSTEM = '"ext4" (or "": the drive as a block device)'
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
    workloads: tuple[ResolvedWorkload, ...]
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
    name = r.get(camp, "campaign", "name", str, "letters, digits, _ . : + - (a tag)", pattern=_IDENT)
    repeats = r.get(camp, "campaign", "repeats", int, "a whole number of repeats, at least 1", 1, at_least=1)
    rig = r.get(data, "rig", "rig", dict, 'a [rig] table with port = "sim" or a device', {} if lab else ...)
    r.known(rig, "rig", {"port", "name", "speed", "firmware"})
    sim_firmware = r.choice(rig, "rig", "firmware", FIRMWARES)
    speed = "a simulation speed, 1 (real time) or more"
    sim_speed = r.get(rig, "rig", "speed", (int, float), speed, 1.0, at_least=1)
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
        baseline_s=r.get(camp, "campaign", "baseline_s", (int, float), "seconds, 0 or more", 30.0, at_least=0),
        sim_firmware=sim_firmware,
        lab=lab,
        baseline=r.choice(camp, "campaign", "baseline", BASELINES),
        order=r.choice(camp, "campaign", "order", ORDERS),
    )


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
    scale = r.get(d, "drive", "scale", (int, float), "a bandwidth scale in (0, 1]", 0.1, above=0, at_most=1)
    keep = r.get(d, "drive", "keep_data", str, 'a size such as "8g" (or "0": drop written data)', "0")
    try:
        keep_data = parse_size(keep)
    except WorkloadError as exc:
        raise r.fail("drive", "keep_data", repr(keep), 'a size such as "8g" (or "0": drop written data)') from exc
    spec = DriveSpec(
        target=target,
        size=r.get(d, "drive", "size", str, "a size such as 4g", "1g"),
        serial=r.get(d, "drive", "serial", str, "the drive's serial number", None),
        model=r.get(d, "drive", "model", str, _TAG, profile if target == "virtual" else "unknown", pattern=_IDENT),
        profile=profile,
        scale=scale,
        fast_fill=r.get(d, "drive", "fast_fill", bool, "true or false", True),
        keep_data=keep_data,
        filesystem=r.get(d, "drive", "filesystem", str, _FILESYSTEM, "", choices=("", "ext4")),
    )
    if spec.filesystem and not spec.keep_data:
        raise r.fail("drive", "filesystem", "a file system needs the data kept", 'keep_data = "8g" (or more)')
    return spec


def _equilibrium(r: TomlFile, d: dict) -> Equilibrium:
    r.known(d, "equilibrium", {"rate_c_per_min", "window_s", "timeout_s", "channels", "rule", "carry", "transition"})
    channels = tuple(
        r.get(d, "equilibrium", "channels", list, "a list of the rig's channel names", list(Equilibrium.channels))
    )
    for ch in channels:
        if not isinstance(ch, str) or not _CHANNEL.fullmatch(ch):
            raise r.fail("equilibrium", "channels", f"{ch!r}", "channel names from the rig's map (thermrig rig info)")
    number = (int, float)
    eq = Equilibrium(
        rate_c_per_min=r.get(d, "equilibrium", "rate_c_per_min", number, "°C per minute, above 0", 0.2, above=0),
        window_s=r.get(d, "equilibrium", "window_s", number, "seconds, above 0", 60.0, above=0),
        timeout_s=r.get(d, "equilibrium", "timeout_s", number, "seconds, above 0", 1800.0, above=0),
        channels=channels,
        rule=r.choice(d, "equilibrium", "rule", EQUILIBRIUM_RULES),
        carry=r.get(d, "equilibrium", "carry", bool, "true or false", True),
        transition=r.choice(d, "equilibrium", "transition", TRANSITIONS),
    )
    if eq.timeout_s < eq.window_s:
        short = f"{eq.timeout_s} s is shorter than the window ({eq.window_s} s)"
        raise r.fail("equilibrium", "timeout_s", short, "timeout_s >= window_s")
    return eq


def _cooldown(r: TomlFile, d: dict) -> Cooldown:
    r.known(d, "cooldown", {"margin_c", "timeout_s", "mode", "before_change"})
    return Cooldown(
        margin_c=r.get(d, "cooldown", "margin_c", (int, float), "°C, above 0", 1.0, above=0),
        timeout_s=r.get(d, "cooldown", "timeout_s", (int, float), "seconds, above 0", 1800.0, above=0),
        mode=r.choice(d, "cooldown", "mode", COOLDOWN_MODES),
        before_change=r.choice(d, "cooldown", "before_change", BEFORE_CHANGE),
    )


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


def _workloads(r: TomlFile, items: list) -> tuple[ResolvedWorkload, ...]:
    out = []
    names = set()
    for i, t in enumerate(items):
        r.known(t, "workload", {*_WORKLOAD_KEYS}, i)
        name = r.get(t, "workload", "name", str, "a unique short name (a tag)", occurrence=i, pattern=_IDENT)
        if name in names:
            raise r.fail("workload", "name", f"{name!r} is not a unique identifier", "a unique short name", i)
        names.add(name)
        kind = r.get(t, "workload", "kind", str, f"one of {', '.join(WorkloadKind)}", occurrence=i)  # resolved()
        job = r.get(t, "workload", "job", str, "a fio job file, relative to the campaign file", "", i)
        if job and kind != WorkloadKind.LAB:
            lab = WorkloadKind.LAB.value
            raise r.fail("workload", "job", f"job is for kind = {lab!r}", f'kind = "{lab}", or no job', i)
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
            raise r.fail("workload", exc.key, str(exc), "a valid workload", i) from exc
        out.append(w)
    return tuple(out)


def _check_lab_jobs(workloads: tuple[ResolvedWorkload, ...], drive: DriveSpec) -> None:
    """A lab's fio job file: read and checked against what thermrig sets on this target, before any run."""
    for w in workloads:
        if w.kind == WorkloadKind.LAB:
            try:
                check_job(read_job_file(w.job), virtual=drive.is_virtual and not drive.filesystem)  # NBD: engine ours
            except JobFileError as exc:
                raise CampaignError(f"workload {w.name!r}: {exc}") from exc
