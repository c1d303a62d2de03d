"""The workload library: the seeds' and SNIA PTS's methods as fio job files.

Every job logs bandwidth, IOPS and latency per second (log_avg_msec=1000) with Unix-epoch millisecond
timestamps (log_alternate_epoch=1, clock 0 = CLOCK_REALTIME), so fio's own logs line up with the rig's
telemetry in UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from thermrig.dut.drive import DriveUnderTest, Fill
from thermrig.fio.job_file import compose, read_job_file

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
# The one table of which workloads fill the drive and how: sequential passes over the workload's span
# (the whole drive when it has none) that its job writes before what is measured. A consistency run
# fills once (when its `fill` is on), SNIA PTS preconditions with 2x the capacity.
FILL_PASSES = {"consistency": 1, "snia_precondition": 2}

LAB_KIND = "fio"  # a lab's own job file (thermrig.fio.job_file), beside the library's kinds
RATE_SEARCH = "rate_search"  # the sustainable write rate by bisection (thermrig.fio.rate_search)
SEARCH_STEPS = 6  # rate_search: steps when max_rounds is left at its default
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
    job: str = ""  # kind "fio": the lab's job file (absolute; the campaign file resolves it)

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
        if self.kind == LAB_KIND:  # the job file says what runs; runtime_s is the plan's estimate only
            if not self.job:
                raise WorkloadError(f'workload {self.name!r}: kind "fio" needs job = "FILE.fio"')
            return self
        if self.kind == RATE_SEARCH:  # sequential writes at fio's rate=; max_rounds: the search's steps
            steps = SEARCH_STEPS if self.max_rounds == MAX_ROUNDS else self.max_rounds
            if not 2 <= steps <= MAX_ROUNDS or self.runtime_s <= 0:
                what = f"max_rounds = {steps}: a rate search bisects 2-{MAX_ROUNDS} times"
                raise WorkloadError(f"workload {self.name!r}: {what}, each a positive time")
            bs = self.bs or "128k"
            if not _SIZE.fullmatch(bs):
                raise WorkloadError(f"workload {self.name!r}: bs = {bs!r} is not a size such as 4k or 16g")
            return replace(self, bs=bs, iodepth=self.iodepth or 32, max_rounds=steps)
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
        if w.kind == LAB_KIND:
            return w.runtime_s
        if w.kind == RATE_SEARCH:
            return w.runtime_s * w.max_rounds  # at most; equilibrium between steps comes on top
        if w.kind.endswith("_sweep"):
            return w.runtime_s * len(w.steps)
        if w.kind == "snia_steady_state":
            return w.runtime_s * w.max_rounds  # at most
        passes = w.fill_passes()
        extra = passes * target_bytes / fill_bw if target_bytes and passes else 0.0
        return (0 if w.kind == "snia_precondition" else w.runtime_s) + extra

    def fill_passes(self) -> int:
        """Sequential passes the job writes over the span before what is measured (FILL_PASSES); 0: none."""
        if self.kind == "consistency" and not self.fill:
            return 0
        return FILL_PASSES.get(self.kind, 0)

    def fill_state(self) -> Fill | None:
        """The state the workload's fill leaves, which a drive may take at once; None: no fill."""
        w = self.resolved()
        passes = w.fill_passes()
        return Fill(parse_size(w.span) if w.span else None, passes) if passes else None


def _log_lines(log_prefix: str) -> list[str]:
    """Per-second bandwidth, IOPS and latency logs with Unix-ms stamps, one report for all jobs."""
    return ["group_reporting=1", *log_lines(log_prefix)]


def log_lines(log_prefix: str) -> list[str]:
    """Per-second bandwidth, IOPS and latency logs with Unix-ms stamps, a log file per job."""
    return [
        f"write_bw_log={log_prefix}",
        f"write_iops_log={log_prefix}",
        f"write_lat_log={log_prefix}",
        "log_avg_msec=1000",
        "log_alternate_epoch=1",
        "log_alternate_epoch_clock_id=0",
    ]


def target_lines(target: DriveUnderTest) -> list[str]:
    """The options that point a lab's job at the drive (thermrig.fio.job_file): an NBD export's engine
    and URI; a file's or device's name (and a file's size), its own engine and direct staying the job's."""
    lines = target.fio_lines(1)
    if any(line.startswith("ioengine=nbd") for line in lines):
        return lines
    return [
        *(line for line in lines if line.startswith("filename=")),
        *([f"size={target.size}"] if target.size else []),
    ]


def job_file(workload: Workload, target: DriveUnderTest, log_prefix: str, prefilled: bool = False) -> str:
    """The fio job file for one workload on a drive; prefilled: the drive took the fill's state at
    once (DriveUnderTest.take_fill), so the job writes no fill."""
    w = workload.resolved()
    if w.kind == LAB_KIND:
        return compose(read_job_file(w.job), target_lines(target), log_lines(log_prefix))
    region = w.span or target.size  # a file: created at its size; a device or an NBD export: all of it
    lines = [
        "[global]",
        *target.fio_lines(w.iodepth),
        *([f"size={region}"] if region else []),
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
        if w.fill_passes() and not prefilled:
            lines += [f"[{w.name}-fill]", "rw=write", "bs=128k", "iodepth=32", ""]
        lines += [f"[{w.name}]", "stonewall", "rw=randwrite", *timed]
    elif w.kind == "snia_steady_state":  # one round; the runner repeats it until steady
        lines += [f"[{w.name}]", "rw=randwrite", *timed]
    elif w.kind == "snia_precondition" and prefilled:  # done: one write shows the drive is there
        lines += [f"[{w.name}]", "rw=write", "number_ios=1"]
    elif w.kind == "snia_precondition":
        lines += [f"[{w.name}]", "rw=write", f"loops={w.fill_passes()}"]  # 2x the capacity, 128 KiB sequential
    return "\n".join(lines).rstrip() + "\n"
