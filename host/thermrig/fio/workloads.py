"""The workload library: the seeds' and SNIA PTS's methods as fio job files.

Every job logs bandwidth, IOPS and latency per second (log_avg_msec=1000) with Unix-epoch millisecond
timestamps (log_alternate_epoch=1, clock 0 = CLOCK_REALTIME), so fio's own logs line up with the rig's
telemetry in UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

KINDS = (
    "seq_read",
    "seq_write",
    "rand_read",
    "rand_write",
    "mixed_random_sweep",
    "mixed_seq_sweep",
    "consistency",
    "snia_precondition",
    "snia_steady_state",
)
MAX_ROUNDS = 25  # SNIA PTS: steady state must show within 25 rounds
_SIZE = re.compile(r"\d+(\.\d+)?[kKmMgGtT]?(i?[bB])?")


class WorkloadError(ValueError):
    pass


def parse_size(text: str) -> int:
    """A fio size in bytes; as fio reads them, k/m/g/t are powers of 1024."""
    if not _SIZE.fullmatch(text):
        raise WorkloadError(f"{text!r} is not a size such as 4k or 16g")
    digits = re.match(r"\d+(\.\d+)?", text)
    assert digits is not None
    unit = text[digits.end() : digits.end() + 1].lower()
    return int(float(digits.group()) * 1024 ** " kmgt".index(unit or " "))


@dataclass(frozen=True)
class Workload:
    """One workload of a campaign. Defaults follow the seeds; every field can be overridden."""

    name: str
    kind: str
    runtime_s: int = 300  # per job (per step in a sweep)
    bs: str = ""  # default per kind
    iodepth: int = 0  # default per kind
    span: str = ""  # LBA range written or read: "" = the whole target; e.g. "16g" for the mixed sweep
    steps: tuple[int, ...] = field(default=())  # read percentages of a sweep, e.g. (100, 90, ..., 0)
    fill: bool = True  # consistency: fill the span sequentially first
    score_window_s: int = 400  # consistency: scored over the last N seconds
    max_rounds: int = MAX_ROUNDS  # snia_steady_state: rounds of runtime_s each, until steady

    def resolved(self) -> Workload:
        defaults = {
            "seq_read": ("128k", 32),
            "seq_write": ("128k", 32),
            "rand_read": ("4k", 32),
            "rand_write": ("4k", 32),
            "mixed_random_sweep": ("4k", 3),
            "mixed_seq_sweep": ("128k", 1),
            "consistency": ("4k", 32),
            "snia_precondition": ("128k", 32),
            "snia_steady_state": ("4k", 32),
        }
        if self.kind not in defaults:
            raise WorkloadError(f"workload {self.name!r}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        bs, qd = defaults[self.kind]
        steps = self.steps
        if not steps and self.kind.endswith("_sweep"):
            steps = tuple(range(100, -1, -10))  # pure reads to pure writes in 10 % steps
        span = self.span or ("16g" if self.kind == "mixed_random_sweep" else "")
        for value, what in ((self.bs or bs, "bs"), (span or "1", "span")):
            if not _SIZE.fullmatch(value):
                raise WorkloadError(f"workload {self.name!r}: {what} = {value!r} is not a size such as 4k or 16g")
        if any(not 0 <= s <= 100 for s in steps):
            raise WorkloadError(f"workload {self.name!r}: steps are read percentages 0-100")
        if self.runtime_s <= 0:
            raise WorkloadError(f"workload {self.name!r}: runtime_s must be positive")
        if not 5 <= self.max_rounds <= MAX_ROUNDS:
            raise WorkloadError(f"workload {self.name!r}: max_rounds must be 5-{MAX_ROUNDS} (a 5-round window)")
        return replace(self, bs=self.bs or bs, iodepth=self.iodepth or qd, span=span, steps=steps)

    def duration_s(self, target_bytes: int | None = None, fill_bw: float = 1.5e9) -> float:
        """Estimated wall time (fill and preconditioning at an assumed bandwidth)."""
        w = self.resolved()
        if w.kind.endswith("_sweep"):
            return w.runtime_s * len(w.steps)
        if w.kind == "snia_steady_state":
            return w.runtime_s * w.max_rounds  # at most
        extra = 0.0
        if target_bytes and (w.kind == "snia_precondition" or (w.kind == "consistency" and w.fill)):
            extra = (2 if w.kind == "snia_precondition" else 1) * target_bytes / fill_bw
        return (0 if w.kind == "snia_precondition" else w.runtime_s) + extra


@dataclass(frozen=True)
class Target:
    """What fio writes to: a block device, a file (created at size), or the simulated rig's virtual drive
    through fio's net engine (path "virtual", net_port: the drive's port for writes, fio's for reads)."""

    path: str
    size: str = ""  # files only
    block_device: bool = False
    net_host: str = "127.0.0.1"
    net_port: int = 0

    @property
    def virtual(self) -> bool:
        return self.path == "virtual"

    @property
    def direct(self) -> int:
        return 1 if self.block_device else 0  # O_DIRECT is not available on every file system


# fio 3.33's net engine loses count of TCP reads that return less than bs (measured here: 3.1 of 4.6 GB
# counted at bs=128k, exact at 4k): read jobs use 4 KiB requests on the wire (bandwidth exact; the drive
# is told the real bs, so its model and power are those of the real block size).
NET_READ_BS = 4 * 1024
VIRTUAL_KINDS = ("seq_read", "seq_write", "rand_read", "rand_write", "consistency", "snia_steady_state")


def is_write(kind: str) -> bool:
    return kind not in ("seq_read", "rand_read")


def is_random(kind: str) -> bool:
    return kind in ("rand_read", "rand_write", "consistency", "snia_steady_state")


def _log_lines(log_prefix: str) -> list[str]:
    """Per-second bandwidth, IOPS and latency logs with Unix-ms stamps, one report for all jobs."""
    return [
        "group_reporting=1",
        f"write_bw_log={log_prefix}",
        f"write_iops_log={log_prefix}",
        f"write_lat_log={log_prefix}",
        "log_avg_msec=1000",
        "log_alternate_epoch=1",
        "log_alternate_epoch_clock_id=0",
    ]


def job_file(workload: Workload, target: Target, log_prefix: str) -> str:
    """The fio job file for one workload."""
    w = workload.resolved()
    if target.virtual:
        return _net_job(w, target, log_prefix)
    engine = "psync" if w.iodepth == 1 else "libaio"
    region = w.span or ("" if target.block_device else target.size)  # a file is created at this size
    lines = [
        "[global]",
        f"filename={target.path}",
        *([f"size={region}"] if region else []),
        f"ioengine={engine}",
        f"direct={target.direct}",
        f"bs={w.bs}",
        f"iodepth={w.iodepth}",
        *_log_lines(log_prefix),
        "",
    ]
    timed = [f"runtime={w.runtime_s}", "time_based=1"]
    if w.kind in ("seq_read", "seq_write", "rand_read", "rand_write"):
        rw = {"seq_read": "read", "seq_write": "write", "rand_read": "randread", "rand_write": "randwrite"}[w.kind]
        lines += [f"[{w.name}]", f"rw={rw}", *timed]
    elif w.kind.endswith("_sweep"):
        rw = "randrw" if w.kind == "mixed_random_sweep" else "rw"
        for pct in w.steps:
            lines += [f"[{w.name}-read{pct}]", "stonewall", f"rw={rw}", f"rwmixread={pct}", *timed, ""]
    elif w.kind == "consistency":
        if w.fill:
            lines += [f"[{w.name}-fill]", "rw=write", "bs=128k", "iodepth=32", ""]
        lines += [f"[{w.name}]", "stonewall", "rw=randwrite", *timed]
    elif w.kind == "snia_steady_state":  # one round; the runner repeats it until steady
        lines += [f"[{w.name}]", "rw=randwrite", *timed]
    elif w.kind == "snia_precondition":
        lines += [f"[{w.name}]", "rw=write", "loops=2"]  # 2x the capacity in 128 KiB sequential writes
    return "\n".join(lines).rstrip() + "\n"


def _net_job(w: Workload, target: Target, log_prefix: str) -> str:
    """The virtual drive through fio's net engine. The engine cannot seek, so every job is a stream of
    bs-sized requests; whether they are random is announced to the drive (thermrig.plant.drive_model)."""
    if w.kind not in VIRTUAL_KINDS:
        raise WorkloadError(
            f"workload {w.name!r}: kind {w.kind} needs a real drive (the virtual drive serves "
            f"{', '.join(VIRTUAL_KINDS)})"
        )
    write = is_write(w.kind)
    side = [f"hostname={target.net_host}"] if write else ["listen=1"]  # fio's net engine reads only as a listener
    bs = w.bs if write or parse_size(w.bs) <= NET_READ_BS else "4k"
    return (
        "\n".join(
            [
                "[global]",
                "ioengine=net",
                "protocol=tcp",
                *side,
                f"port={target.net_port}",
                "window_size=64k",  # little data in flight: fio's logs follow the drive's pace
                "size=100t",
                f"bs={bs}",
                *_log_lines(log_prefix),
                "",
                f"[{w.name}]",
                f"rw={'write' if write else 'read'}",
                f"runtime={w.runtime_s}",
                "time_based=1",
            ]
        )
        + "\n"
    )
