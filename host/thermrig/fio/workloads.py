"""The workload library: the seeds' and SNIA PTS's methods as fio job files.

Every job logs bandwidth, IOPS and latency per second (log_avg_msec=1000) with Unix-epoch millisecond
timestamps (log_alternate_epoch=1, clock 0 = CLOCK_REALTIME), so fio's own logs line up with the rig's
telemetry in UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from enum import StrEnum

from thermrig.dut.drive import DriveUnderTest, Fill
from thermrig.fio.job_file import compose, read_job_file


class WorkloadKind(StrEnum):
    """What a workload runs: the library's kinds (fio job files thermrig writes), a lab's own job file
    (LAB, thermrig.fio.job_file) and the sustainable write rate by bisection (RATE_SEARCH,
    thermrig.fio.rate_search). A kind not listed here is an error wherever a workload is made."""

    SEQ_READ = "seq_read"
    SEQ_WRITE = "seq_write"
    RAND_READ = "rand_read"
    RAND_WRITE = "rand_write"
    MIXED_RANDOM_SWEEP = "mixed_random_sweep"
    MIXED_SEQ_SWEEP = "mixed_seq_sweep"
    CONSISTENCY = "consistency"
    SNIA_PRECONDITION = "snia_precondition"
    SNIA_STEADY_STATE = "snia_steady_state"
    LAB = "fio"
    RATE_SEARCH = "rate_search"

    @property
    def is_sweep(self) -> bool:
        return self in (WorkloadKind.MIXED_RANDOM_SWEEP, WorkloadKind.MIXED_SEQ_SWEEP)


K = WorkloadKind
# Each library kind's block size and queue depth when the workload sets none.
KIND_DEFAULTS = {
    K.SEQ_READ: ("128k", 32),
    K.SEQ_WRITE: ("128k", 32),
    K.RAND_READ: ("4k", 32),
    K.RAND_WRITE: ("4k", 32),
    K.MIXED_RANDOM_SWEEP: ("4k", 3),
    K.MIXED_SEQ_SWEEP: ("128k", 1),
    K.CONSISTENCY: ("4k", 32),
    K.SNIA_PRECONDITION: ("128k", 32),
    K.SNIA_STEADY_STATE: ("4k", 32),
}
KINDS = tuple(KIND_DEFAULTS)  # the library's kinds: those it writes a job file for
# The one table of which workloads fill the drive and how: sequential passes over the workload's span
# (the whole drive when it has none) that its job writes before what is measured. A consistency run
# fills once (when its `fill` is on), SNIA PTS preconditions with 2x the capacity.
FILL_PASSES = {K.CONSISTENCY: 1, K.SNIA_PRECONDITION: 2}
SEARCH_STEPS = 6  # rate_search: steps when max_rounds is left at its default
MAX_ROUNDS = 25  # SNIA PTS: steady state must show within 25 rounds
_SIZE = re.compile(r"\d+(\.\d+)?[kKmMgGtT]?(i?[bB])?")


class WorkloadError(ValueError):
    """A workload that cannot run as written; key: the campaign file's key that holds the mistake."""

    def __init__(self, message: str, key: str = "kind") -> None:
        super().__init__(message)
        self.key = key


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
    """One workload of a campaign as written. Defaults follow the seeds; every field can be overridden.
    What runs is its resolved() form: checked, with its kind's defaults filled in."""

    name: str
    kind: str  # a WorkloadKind's value
    runtime_s: int = 300  # per job (per step in a sweep)
    bs: str = ""  # default per kind
    iodepth: int = 0  # default per kind
    span: str = ""  # LBA range written or read: "" = the whole target; e.g. "16g" for the mixed sweep
    steps: tuple[int, ...] = field(default=())  # read percentages of a sweep, e.g. (100, 90, ..., 0)
    fill: bool = True  # consistency: fill the span sequentially first
    score_window_s: int = 400  # consistency: scored over the last N seconds
    max_rounds: int = MAX_ROUNDS  # snia_steady_state: rounds of runtime_s each, until steady
    job: str = ""  # kind "fio": the lab's job file (absolute; the campaign file resolves it)

    def resolved(self) -> ResolvedWorkload:
        """Checked (a WorkloadError names the key at fault) and with its kind's defaults."""
        try:
            kind = WorkloadKind(self.kind)
        except ValueError:
            known = ", ".join(WorkloadKind)
            raise WorkloadError(f"workload {self.name!r}: kind {self.kind!r} is not one of {known}") from None
        if kind == K.LAB:  # the job file says what runs; runtime_s is the plan's estimate only
            if not self.job:
                raise WorkloadError(f'workload {self.name!r}: kind "fio" needs job = "FILE.fio"', "job")
            return self._resolved(kind)
        if self.runtime_s <= 0:
            raise WorkloadError(f"workload {self.name!r}: runtime_s must be positive", "runtime_s")
        if kind == K.RATE_SEARCH:  # sequential writes at fio's rate=; max_rounds: the search's steps
            steps = SEARCH_STEPS if self.max_rounds == MAX_ROUNDS else self.max_rounds
            if not 2 <= steps <= MAX_ROUNDS:
                what = f"max_rounds = {steps}: a rate search bisects 2-{MAX_ROUNDS} times"
                raise WorkloadError(f"workload {self.name!r}: {what}", "max_rounds")
            bs = _size(self.name, "bs", self.bs or "128k")
            return self._resolved(kind, bs=bs, iodepth=self.iodepth or 32, max_rounds=steps)
        bs, qd = KIND_DEFAULTS[kind]
        steps = self.steps
        if not steps and kind.is_sweep:
            steps = tuple(range(100, -1, -10))  # pure reads to pure writes in 10 % steps
        span = self.span or ("16g" if kind == K.MIXED_RANDOM_SWEEP else "")
        _size(self.name, "bs", self.bs or bs)
        _size(self.name, "span", span or "1")
        if any(not 0 <= s <= 100 for s in steps):
            raise WorkloadError(f"workload {self.name!r}: steps are read percentages 0-100", "steps")
        if not 5 <= self.max_rounds <= MAX_ROUNDS:
            what = f"max_rounds must be 5-{MAX_ROUNDS} (a 5-round window)"
            raise WorkloadError(f"workload {self.name!r}: {what}", "max_rounds")
        return self._resolved(kind, bs=self.bs or bs, iodepth=self.iodepth or qd, span=span, steps=steps)

    def _resolved(self, kind: WorkloadKind, **filled: object) -> ResolvedWorkload:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return ResolvedWorkload(**{**values, **filled, "kind": kind})  # type: ignore[arg-type]


@dataclass(frozen=True)
class ResolvedWorkload(Workload):
    """A workload as it runs (Workload.resolved): checked, its kind a WorkloadKind, its block size, queue
    depth, span and steps filled in. Made only by resolved(); what runs, plans and writes job files
    takes this type."""

    kind: WorkloadKind

    def resolved(self) -> ResolvedWorkload:
        return self

    def duration_s(self, target_bytes: int | None = None, fill_bw: float = 1.5e9) -> float:
        """Estimated wall time (fill and preconditioning at an assumed bandwidth)."""
        if self.kind == K.LAB:
            return self.runtime_s
        if self.kind == K.RATE_SEARCH:
            return self.runtime_s * self.max_rounds  # at most; equilibrium between steps comes on top
        if self.kind.is_sweep:
            return self.runtime_s * len(self.steps)
        if self.kind == K.SNIA_STEADY_STATE:
            return self.runtime_s * self.max_rounds  # at most
        passes = self.fill_passes()
        extra = passes * target_bytes / fill_bw if target_bytes and passes else 0.0
        return (0 if self.kind == K.SNIA_PRECONDITION else self.runtime_s) + extra

    def fill_passes(self) -> int:
        """Sequential passes the job writes over the span before what is measured (FILL_PASSES); 0: none."""
        if self.kind == K.CONSISTENCY and not self.fill:
            return 0
        return FILL_PASSES.get(self.kind, 0)

    def fill_state(self) -> Fill | None:
        """The state the workload's fill leaves, which a drive may take at once; None: no fill."""
        passes = self.fill_passes()
        return Fill(parse_size(self.span) if self.span else None, passes) if passes else None


def _size(name: str, key: str, value: str) -> str:
    if not _SIZE.fullmatch(value):
        raise WorkloadError(f"workload {name!r}: {key} = {value!r} is not a size such as 4k or 16g", key)
    return value


_PLAIN_RW = {K.SEQ_READ: "read", K.SEQ_WRITE: "write", K.RAND_READ: "randread", K.RAND_WRITE: "randwrite"}


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


def job_file(w: ResolvedWorkload, target: DriveUnderTest, log_prefix: str, prefilled: bool = False) -> str:
    """The fio job file for one workload on a drive; prefilled: the drive took the fill's state at
    once (DriveUnderTest.take_fill), so the job writes no fill."""
    if w.kind == K.LAB:
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
    if w.kind in _PLAIN_RW:
        lines += [f"[{w.name}]", f"rw={_PLAIN_RW[w.kind]}", *timed]
    elif w.kind.is_sweep:
        rw = "randrw" if w.kind == K.MIXED_RANDOM_SWEEP else "rw"
        for pct in w.steps:
            lines += [f"[{w.name}-read{pct}]", "stonewall", f"rw={rw}", f"rwmixread={pct}", *timed, ""]
    elif w.kind == K.CONSISTENCY:
        if w.fill_passes() and not prefilled:
            lines += [f"[{w.name}-fill]", "rw=write", "bs=128k", "iodepth=32", ""]
        lines += [f"[{w.name}]", "stonewall", "rw=randwrite", *timed]
    elif w.kind == K.SNIA_STEADY_STATE:  # one round; the runner repeats it until steady
        lines += [f"[{w.name}]", "rw=randwrite", *timed]
    elif w.kind == K.SNIA_PRECONDITION and prefilled:  # done: one write shows the drive is there
        lines += [f"[{w.name}]", "rw=write", "number_ios=1"]
    elif w.kind == K.SNIA_PRECONDITION:
        lines += [f"[{w.name}]", "rw=write", f"loops={w.fill_passes()}"]  # 2x the capacity, 128 KiB sequential
    else:  # a kind the library has no job for (rate_search: thermrig.fio.rate_search writes its steps)
        raise WorkloadError(f"workload {w.name!r}: kind {w.kind.value!r} has no job file of its own")
    return "\n".join(lines).rstrip() + "\n"
