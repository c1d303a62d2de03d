"""The one throttle summary of a run (used by the run summary at a run's end, `thermrig throttle`,
`thermrig analyze` and the report): the workload's measured job is the last one by position (after a
fill, the random write; in a sweep, its last step; in SNIA rounds, the last round), never chosen by
comparing job names; its directions are added second by second."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from thermrig.analysis.attribution import Evidence, attribute, stall_judge
from thermrig.analysis.fio_log import LogPoint
from thermrig.analysis.throttle import FALL, TAIL_S, find_falls, per_second, throttle_of
from thermrig.analysis.trace import Trace
from thermrig.db.schema import fio_windows

LOST_SAID_S = 0.05  # the writing time the stalls lost is said beside them from this much (one decimal shown)


@dataclass(frozen=True)
class JobLog:
    """One direction of one job of a workload: fio's per-second bandwidth log."""

    position: int  # the job's place in the workload: fio's job number, or its order in time
    direction: str  # read, write or trim
    stamps_ms: tuple[int, ...]  # window-end stamps, Unix ms
    values: tuple[float, ...]  # bytes/s as fio measured them (on the wire for the virtual drive)
    iops: tuple[float, ...] = ()  # the same seconds' IOPS, when known
    lat_ns: tuple[float, ...] = ()  # the same seconds' mean latency, ns, when known


@dataclass(frozen=True)
class ThrottleSummary:
    position: int | None  # the measured job
    start_ms: int | None  # that job's start (its first window's start), Unix ms
    seconds: int
    plateau_bps: float | None  # at the drive's scale
    onset_s: float | None
    depth_pct: float | None
    note: str  # why there is no onset or depth, when there is none; "" otherwise
    onset_at_s: float | None = None  # the onset moment, up to 2 s before onset_s; set with it (throttle.py)
    onset_cause: str = ""  # thermal, cache or unclear (analysis.attribution); "" without an onset
    onset_why: str = ""
    host_stalls: tuple[int, ...] = ()  # falls judged the host's: their first second into the job
    onset_drive_s: float | None = None  # the simulated drive's own time of the onset: onset_s less the plant's lag
    host_lost_s: float = 0.0  # the writing time the host stalls before the onset lost (throttle.Throttle)

    @property
    def throttled(self) -> bool:
        return self.onset_s is not None

    def describe_stalls(self) -> str:
        """ "host stalls at 12, 33 s" (empty without any), and what those before the onset cost."""
        if not self.host_stalls:
            return ""
        plural = "s" if len(self.host_stalls) > 1 else ""
        said = f"host stall{plural} at {', '.join(map(str, self.host_stalls))} s"
        if self.host_lost_s < LOST_SAID_S:
            return said
        before = " before the onset" if self.onset_s is not None else ""  # no onset: the whole job's
        return f"{said} ({self.host_lost_s:.1f} s of writing lost{before})"

    def fields(self, scale: float) -> dict[str, float | int | bool]:
        """The run_summary fields (docs/influx-schema.md); types fixed, as InfluxDB keeps a field's type."""
        out: dict[str, float | int | bool] = {"seconds": int(self.seconds), "bw_scale": float(scale)}
        if self.plateau_bps is not None and self.depth_pct is not None:
            out.update(plateau_bw_bps=float(self.plateau_bps), depth_pct=float(self.depth_pct))
            out["throttled"] = self.throttled
        if self.onset_s is not None:
            out["onset_s"] = float(self.onset_s)
        if self.onset_at_s is not None:
            out["onset_at_s"] = float(self.onset_at_s)
        if self.onset_drive_s is not None:
            out["onset_drive_s"] = float(self.onset_drive_s)
        if self.plateau_bps is not None:
            out["onset_cause"] = self.onset_cause  # empty without an onset: a rewrite clears the runner's
            out["host_stalls"] = len(self.host_stalls)
            out["host_stall_s"] = ",".join(map(str, self.host_stalls))  # empty: none (a rewrite clears it)
            out["host_lost_s"] = round(float(self.host_lost_s), 2)
        return out


DIRECTIONS = {0: "read", 1: "write", 2: "trim"}


def logs_from_fio(bw: Iterable[LogPoint], iops: Iterable[LogPoint] = (), lat: Iterable[LogPoint] = ()) -> list[JobLog]:
    """fio's bandwidth (KiB/s), IOPS and latency (ns) log points of numbered jobs as job logs in bytes/s,
    each entry in its window as the recording joins them (db.schema.fio_windows)."""
    iops, lat = list(iops), list(lat)
    grouped: dict[tuple[int, int], list[tuple[int, dict[str, float]]]] = {}
    for (job, ddir, ms), row in sorted(fio_windows({"bw": list(bw), "iops": iops, "lat": lat}).items()):
        if "bw_bps" in row:
            grouped.setdefault((job, ddir), []).append((ms, row))
    return [
        JobLog(
            job,
            DIRECTIONS.get(ddir, "other"),
            tuple(ms for ms, _ in rows),
            tuple(row["bw_bps"] for _, row in rows),
            tuple(row.get("iops", 0.0) for _, row in rows) if iops else (),
            tuple(row.get("lat_mean_ns", 0.0) for _, row in rows) if lat else (),
        )
        for (job, ddir), rows in sorted(grouped.items())
    ]


def positions_by_start(first_ms: dict[str, int]) -> dict[str, int]:
    """Jobs known only by name (as InfluxDB stores them): their position is their order in time, since
    a workload's jobs run one after the other (stonewall)."""
    return {name: i for i, name in enumerate(sorted(first_ms, key=lambda n: first_ms[n]), start=1)}


def measured_job(logs: Iterable[JobLog]) -> list[JobLog]:
    logs = list(logs)
    if not logs:
        return []
    last = max(log.position for log in logs)
    return [log for log in logs if log.position == last]


def job_series(logs: list[JobLog], iops: bool = False) -> tuple[int | None, list[float]]:
    """One job's throughput (or IOPS) per second, its directions added (a mixed job reads and writes)."""
    stamped = [log for log in logs if log.stamps_ms and (log.iops or not iops)]
    if not stamped:
        return None, []
    start = min(log.stamps_ms[0] for log in stamped) - 1000
    total: list[float] = []
    for log in stamped:
        series = per_second(log.stamps_ms, log.iops if iops else log.values, start_ms=start)
        total += [0.0] * (len(series) - len(total))
        for i, v in enumerate(series):
            total[i] += v
    return start, total


def latency_series(logs: list[JobLog], start_ms: int) -> list[float]:
    """One job's mean latency per second (ns), the mean of its directions that logged one; 0: none."""
    per_dir = [per_second(log.stamps_ms, log.lat_ns, start_ms=start_ms) for log in logs if log.lat_ns]
    out: list[float] = []
    for i in range(max((len(s) for s in per_dir), default=0)):
        values = [s[i] for s in per_dir if i < len(s) and s[i] > 0]
        out.append(sum(values) / len(values) if values else 0.0)
    return out


def throttle_summary(
    logs: Iterable[JobLog],
    scale: float = 1.0,
    reference_bps: float | None = None,
    counters: dict[str, Trace] | None = None,
) -> ThrottleSummary:
    """Never raises on odd data: a missing, short or all-zero series gives no onset and says why.

    counters: the run's drive_smart traces (the drive's account, the simulator's lateness): each fall
    is attributed (analysis.attribution) and a host stall is never the onset."""
    job = measured_job(logs)
    start, series = job_series(job)
    position = job[0].position if job else None
    if not series:
        return ThrottleSummary(position, None, 0, None, None, None, "no fio data")
    if len(series) < TAIL_S + 5:
        note = f"only {len(series)} s of throughput (onset and depth need {TAIL_S + 5} s)"
        return ThrottleSummary(position, start, len(series), None, None, None, note)
    reference = None if reference_bps is None else reference_bps * scale
    assert start is not None
    evidence = Evidence(counters or {}, start, latency_series(job, start))

    th = throttle_of(series, reference, stall_judge(series, evidence))
    if th.plateau <= 0:
        return ThrottleSummary(position, start, len(series), None, None, None, "no throughput at the job's start")
    cause = why = ""
    stalls = list(th.host_stalls)
    drive_s = None
    if th.onset_s is not None:
        drive_s = _drive_time(th.onset_s, start, evidence)
        onset = int(th.onset_s) - 1
        found = attribute(series, onset, th.plateau, evidence)
        cause, why = found.cause, found.why
        # the falls after the onset (the throttle deepening, or the host)
        for fall in find_falls(series, stall_judge(series, evidence, FALL)):
            if fall.at > onset + 1 and fall.host:
                stalls.append(fall.at + 1)
    return ThrottleSummary(
        position,
        start,
        len(series),
        th.plateau / scale,
        th.onset_s,
        th.depth_pct,
        "",
        onset_at_s=th.onset_at_s,
        onset_cause=cause,
        onset_why=why,
        host_stalls=tuple(stalls),
        onset_drive_s=drive_s,
        host_lost_s=th.host_lost_s,
    )


def _drive_time(onset_s: float, start_ms: int, evidence: Evidence) -> float | None:
    """A simulated run's onset in the drive's own time: the plant heats the drive in its time, and one that
    fell behind wall time on a busy machine (drive_smart sim_plant_late_ms) throttles it that much later in
    fio's. The drive is kept busy either way (its utilisation is capped at 1 per plant tick), so its own
    time of the onset does not move with the host's load. None without the plant's record."""
    at_onset = evidence.plant_lag_ms(start_ms + onset_s * 1000.0)
    at_start = evidence.plant_lag_ms(start_ms)
    if at_onset is None or at_start is None:
        return None
    return max(0.0, onset_s - max(0.0, at_onset - at_start) / 1000.0)
