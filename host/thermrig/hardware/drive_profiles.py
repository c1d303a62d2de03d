"""Virtual drive profiles from hardware/profiles/drives.toml, validated where they are read."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from thermrig.hardware.power_state import PowerState
from thermrig.hardware.profiles import DRIVE_PACKAGE, DriveThermalParams, numbers, profile_file
from thermrig.toml_file import TomlFile

GB = 1_000_000_000


@dataclass(frozen=True)
class DriveProfile:
    name: str
    description: str
    model: str
    serial: str
    firmware: str
    capacity_bytes: int
    spare_bytes: int
    seq_read_bps: float
    seq_write_bps: float
    rand_read_iops: float
    rand_write_iops: float
    steady_rand_write_iops: float
    qd1_rand_read_iops: float
    qd1_rand_write_iops: float
    read_power_w: float
    write_power_w: float
    idle_power_w: float
    states: tuple[PowerState, ...]
    tmt1_c: float
    tmt2_c: float
    hysteresis_c: float
    throttle_gain: float  # W per K per second: how fast the light throttle trims its power
    step_s: float
    composite_offset_c: float
    ctrl_capacity: float
    board_capacity: float
    g_ctrl_board: float
    ctrl_power_fraction: float
    slc_cache_bytes: int = 0  # an SLC write cache: 0 = none (writes at seq_write_bps throughout)
    post_cache_write_bps: float = 0.0  # writes once the cache is full (written since idle beyond its size)
    cache_fold_bps: float = 0.0  # while idle, the cache folds back into TLC at this rate

    def identity(self) -> dict[str, str | None]:
        """What a run's manifest records of the drive, as nvme-cli would say it of a real one."""
        return {"device_serial": self.serial, "device_model": self.model, "device_firmware": self.firmware}

    def thermal(self, base: DriveThermalParams) -> DriveThermalParams:
        """The plant's drive nodes with this drive's own package and board figures."""
        return replace(base, **{field: getattr(self, field) for field in DRIVE_PACKAGE})


def drive_names() -> tuple[str, ...]:
    return tuple(profile_file("drives.toml").data)


def load_drive_profile(name: str) -> DriveProfile:
    r = profile_file("drives.toml")
    d = r.section(name)

    def n(key: str, lo: float, hi: float, default: float | None = None) -> float:
        return r.number(d, name, key, lo, hi) if default is None else r.number(d, name, key, lo, hi, default)

    def s(key: str) -> str:
        return r.text(d, name, key)

    states = _states(r, name, d.get("states"))
    profile = DriveProfile(
        **numbers(n, DRIVE_PACKAGE),
        name=name,
        description=s("description"),
        model=s("model"),
        serial=s("serial"),
        firmware=s("firmware"),
        capacity_bytes=int(n("capacity_gb", 1, 100_000) * GB),
        spare_bytes=int(n("spare_gb", 0, 10_000) * GB),
        seq_read_bps=n("seq_read_mb_s", 1, 100_000) * 1e6,
        seq_write_bps=n("seq_write_mb_s", 1, 100_000) * 1e6,
        rand_read_iops=n("rand_read_iops", 1, 10_000_000),
        rand_write_iops=n("rand_write_iops", 1, 10_000_000),
        steady_rand_write_iops=n("steady_rand_write_iops", 1, 10_000_000),
        qd1_rand_read_iops=n("qd1_rand_read_iops", 1, 10_000_000),
        qd1_rand_write_iops=n("qd1_rand_write_iops", 1, 10_000_000),
        read_power_w=n("read_power_w", 0.1, 50),
        write_power_w=n("write_power_w", 0.1, 50),
        states=states,
        tmt1_c=n("tmt1_c", 25, 120),
        tmt2_c=n("tmt2_c", 30, 130),
        hysteresis_c=n("hysteresis_c", 0, 20),
        throttle_gain=n("throttle_gain_w_per_k_s", 0.001, 10),
        step_s=n("step_s", 0.1, 10),
        composite_offset_c=n("composite_offset_c", -40, 40),
        slc_cache_bytes=int(n("slc_cache_gb", 0, 100_000, 0) * GB),
        post_cache_write_bps=n("post_cache_write_mb_s", 1, 100_000, n("seq_write_mb_s", 1, 100_000)) * 1e6,
        cache_fold_bps=n("cache_fold_mb_s", 1, 100_000, n("post_cache_write_mb_s", 1, 100_000, 1000)) * 1e6,
    )
    if profile.tmt2_c <= profile.tmt1_c:
        raise r.located(name, "tmt2_c", "tmt2_c must be above tmt1_c")
    if profile.steady_rand_write_iops > profile.rand_write_iops:
        raise r.located(name, "steady_rand_write_iops", "steady_rand_write_iops cannot exceed rand_write_iops")
    if profile.qd1_rand_read_iops > profile.rand_read_iops or profile.qd1_rand_write_iops > profile.rand_write_iops:
        raise r.located(name, "qd1_rand_read_iops", "QD1 IOPS cannot exceed the QD32 figures")
    return profile


def _states(r: TomlFile, name: str, raw: object) -> tuple[PowerState, ...]:
    ok = isinstance(raw, list) and len(raw) >= 2
    states: list[PowerState] = []
    for item in raw if isinstance(raw, list) else []:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            ok = False
            break
        if not isinstance(item[1], int | float) or item[1] <= 0:
            ok = False
            break
        states.append(PowerState(max_w=float(item[1]), name=item[0]))
    if not ok or any(b.max_w > a.max_w for a, b in itertools.pairwise(states)):
        raise r.located(
            name,
            "states",
            'states must be at least two [name, max_w] pairs with falling power, e.g. [["PS0", 6.5], ["PS1", 5.8]]',
        )
    return tuple(states)
