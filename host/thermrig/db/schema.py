"""The InfluxDB schema (docs/influx-schema.md): measurements, tags, fields, nanosecond timestamps.
Lines are built with the official client's Point, so escaping is the client's."""

from __future__ import annotations

import bisect
import re
from dataclasses import asdict, dataclass
from functools import cached_property

from influxdb_client import Point, WritePrecision

from thermrig.errors import ThermrigError
from thermrig.link.rig_link import LinkEvent
from thermrig.protocol.messages import Telemetry

TELEMETRY = "rig_telemetry"
ACTUATORS = "rig_actuators"
FAULTS = "rig_faults"
EVENTS = "run_events"
FIO_LIVE = "fio_live"
FIO_INTERVAL = "fio_interval"
DRIVE = "drive_smart"
SUMMARY = "run_summary"
JOB_SUMMARY = "job_summary"  # a lab's fio file: one point per job (tag job)
DRIVE_THERMAL = "drive_thermal"  # the drive's thermal configuration (nvme id-ctrl, HCTM) as a run starts

EVENT_KINDS = {"run_start", "run_stop", "link_lost", "link_restored", "mcu_reset", "gap", "rig_fault", "phase"}
_TAG_VALUE = re.compile(r"[A-Za-z0-9_.:+-]{1,64}")


class SchemaError(ThermrigError, ValueError):
    pass


@dataclass(frozen=True)
class RunTags:
    """What every point of a run is filtered by. Values are short identifiers: no free text, so the
    series count stays bounded (one set of series per run)."""

    rig: str
    run: str
    campaign: str = "adhoc"
    slot: str | None = None
    heatsink: str | None = None
    airflow: str | None = None
    profile: str | None = None
    workload: str | None = None
    drive_model: str | None = None
    hctm: str | None = None  # a campaign's hctm factor: "off" or "TMT1-TMT2" (°C)
    place: str | None = None  # a lab's runs (thermrig.lab): the labgrid place, its test PC, the rig's firmware
    test_pc: str | None = None
    firmware: str | None = None

    def __post_init__(self) -> None:
        for key, value in asdict(self).items():
            if value is not None and not _TAG_VALUE.fullmatch(value):
                raise SchemaError(f"tag {key}={value!r}: use 1-64 letters, digits or _ . : + -")

    @cached_property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        return tuple((k, v) for k, v in asdict(self).items() if v is not None)

    def apply(self, point: Point) -> Point:
        for key, value in self.pairs:
            point.tag(key, value)
        return point


def telemetry_lines(tel: Telemetry, utc_ns: int, tags: RunTags) -> list[str]:
    """Three points per telemetry frame, all at the sample's UTC (from the rig's uptime). The sensor
    fields are the rig's channels, named by its HELLO map (Channel.field: drive_ctrl_c, fan0_rpm...)."""
    sensors = tags.apply(Point(TELEMETRY))
    for ch in tel.channels.channels:
        reading = tel.readings[ch.key]
        sensors.field(ch.field, reading.value).field(ch.status_field, int(reading.status))
    sensors.field("uptime_ms", tel.uptime_ms).field("seq", tel.seq)
    actuators = tags.apply(Point(ACTUATORS))
    actuators.field("heater_pct", tel.heater_pct).field("air_target_c", tel.air_target_c)
    actuators.field("heat_enabled", tel.heat_enabled).field("heat_limit_pct", tel.heat_limit_pct)
    for key, pct in tel.fan_pct.items():
        actuators.field(f"{key}_pct", pct)
    faults = tags.apply(Point(FAULTS))
    faults.field("faults", int(tel.faults)).field("safe_state", tel.safe_state).field("rx_errors", tel.rx_errors)
    faults.field("fault_names", ",".join(f.name or "" for f in type(tel.faults) if f in tel.faults))
    return [p.time(utc_ns, WritePrecision.NS).to_line_protocol() for p in (sensors, actuators, faults)]


def event_line(kind: str, utc_ns: int, tags: RunTags, detail: str = "", start_ns: int | None = None) -> str:
    if kind not in EVENT_KINDS:
        raise SchemaError(f"event kind {kind!r} is not one of {sorted(EVENT_KINDS)}")
    point = tags.apply(Point(EVENTS)).tag("kind", kind).field("detail", detail)
    if start_ns is not None:
        point.field("gap_start_ns", start_ns).field("duration_s", (utc_ns - start_ns) / 1e9)
    return point.time(utc_ns, WritePrecision.NS).to_line_protocol()


def gap_line(start_ns: int, end_ns: int, uptime_start_ms: int, uptime_end_ms: int, why: str, tags: RunTags) -> str:
    """A gap in a recording: from the last frame recorded before it to the first after (their recorded
    times and the rig's uptimes). A rig that reset counts its uptime from zero again."""
    reset = uptime_end_ms < uptime_start_ms
    rig_s = "" if reset else f", {(uptime_end_ms - uptime_start_ms) / 1000:.2f} s of rig time"
    detail = f"{why}: no telemetry recorded for {(end_ns - start_ns) / 1e9:.2f} s{rig_s}"
    point = tags.apply(Point(EVENTS)).tag("kind", "gap").field("detail", detail)
    point.field("gap_start_ns", start_ns).field("duration_s", (end_ns - start_ns) / 1e9)
    point.field("uptime_start_ms", uptime_start_ms).field("uptime_end_ms", uptime_end_ms)
    return point.time(end_ns, WritePrecision.NS).to_line_protocol()


def link_event_line(event: LinkEvent, tags: RunTags) -> str:
    start = round(event.start_utc * 1e9) if event.start_utc is not None else None
    return event_line(event.kind, round(event.utc * 1e9), tags, event.detail, start)


def fio_live_line(
    ms: int, read_bps: float, write_bps: float, read_iops: float, write_iops: float, tags: RunTags
) -> str:
    point = tags.apply(Point(FIO_LIVE)).field("read_bps", read_bps).field("write_bps", write_bps)
    point.field("read_iops", read_iops).field("write_iops", write_iops).field("bw_bps", read_bps + write_bps)
    return point.field("iops", read_iops + write_iops).time(ms * 1_000_000, WritePrecision.NS).to_line_protocol()


FIO_WINDOW_MS = 1000  # fio's log_avg_msec (fio/workloads.py): each log has one entry per job, direction and window
_FIO_FIELDS = {"bw": "bw_bps", "iops": "iops", "lat": "lat_mean_ns"}


def fio_windows(logs: dict[str, list]) -> dict[tuple[int, int, int], dict[str, float]]:
    """fio's per-second logs ("bw" KiB/s, "iops", "lat" ns) merged per job, direction and window:
    (job, ddir, ms) -> bw_bps (bytes/s), iops, lat_mean_ns. Each log stamps its window's end itself: on a
    quiet host the stamps agree, on a busy one the latency log's fall milliseconds to tens of milliseconds
    after the bandwidth log's, so each entry joins the bandwidth entry of its job and direction nearest in
    time, within half a window (else it is a window of its own)."""
    anchors: dict[tuple[int, int], list[int]] = {}
    for p in logs.get("bw", []):
        anchors.setdefault((p.job, p.ddir), []).append(p.timestamp_ms)
    for stamps in anchors.values():
        stamps.sort()
    rows: dict[tuple[int, int, int], dict[str, float]] = {}
    for kind, points in logs.items():
        name = _FIO_FIELDS.get(kind, "lat_mean_ns")
        for p in points:
            ms = p.timestamp_ms if kind == "bw" else _window_of(anchors.get((p.job, p.ddir), []), p.timestamp_ms)
            row = rows.setdefault((p.job, p.ddir, ms), {})
            if name in row:  # two entries of one log in a window (fio's last, partial one): its own
                row = rows.setdefault((p.job, p.ddir, p.timestamp_ms), {})
            row[name] = p.value * 1024.0 if kind == "bw" else float(p.value)
    return rows


def fio_interval_lines(logs: dict[str, list], job_names: dict[int, str], tags: RunTags) -> list[str]:
    """fio's per-second logs as fio_interval points, one per job, direction and window (fio_windows)."""
    rows = fio_windows(logs)
    lines = []
    for (job, ddir, ms), fields in sorted(rows.items()):
        point = tags.apply(Point(FIO_INTERVAL)).tag("job", job_names.get(job, f"job{job}"))
        point.tag("rw", {0: "read", 1: "write", 2: "trim"}.get(ddir, "other"))
        for key, value in fields.items():
            point.field(key, value)
        lines.append(point.time(ms * 1_000_000, WritePrecision.NS).to_line_protocol())
    return lines


def _window_of(stamps: list[int], ms: int) -> int:
    """The bandwidth entry's stamp nearest ms within half a window; ms itself when there is none."""
    i = bisect.bisect_left(stamps, ms)
    near = min(stamps[max(0, i - 1) : i + 1], key=lambda t: abs(t - ms), default=None)
    return near if near is not None and abs(near - ms) <= FIO_WINDOW_MS / 2 else ms


def drive_line(fields: dict[str, float | int], utc_ns: int, tags: RunTags) -> str:
    point = tags.apply(Point(DRIVE))
    for key, value in fields.items():
        point.field(key, value)
    return point.time(utc_ns, WritePrecision.NS).to_line_protocol()


def drive_thermal_line(fields: dict[str, float | int | bool | str], utc_ns: int, tags: RunTags) -> str:
    point = tags.apply(Point(DRIVE_THERMAL))
    for key, value in fields.items():
        point.field(key, value)
    return point.time(utc_ns, WritePrecision.NS).to_line_protocol()


def summary_line(fields: dict[str, float | int | str], utc_ns: int, tags: RunTags) -> str:
    point = tags.apply(Point(SUMMARY))
    for key, value in fields.items():
        point.field(key, value)
    return point.time(utc_ns, WritePrecision.NS).to_line_protocol()


def job_summary_line(job: str, fields: dict[str, float | int | bool], utc_ns: int, tags: RunTags) -> str:
    point = tags.apply(Point(JOB_SUMMARY)).tag("job", job)
    for key, value in fields.items():
        point.field(key, value)
    return point.time(utc_ns, WritePrecision.NS).to_line_protocol()


# Written by the analysis (docs/analysis.md): a campaign's cells, factor effects and sensor ranking.
CAMPAIGN_SUMMARY = "campaign_summary"
CAMPAIGN_EFFECT = "campaign_effect"
SENSOR_RANK = "sensor_rank"


def tagged_line(
    measurement: str, tags: dict[str, str], fields: dict[str, float | int | str | bool], utc_ns: int
) -> str:
    """A point with tags of its own (checked like a run's: short identifiers only)."""
    for key, value in tags.items():
        if not _TAG_VALUE.fullmatch(value):
            raise SchemaError(f"tag {key}={value!r}: use 1-64 letters, digits or _ . : + -")
    point = Point(measurement)
    for key, value in sorted(tags.items()):
        point.tag(key, value)
    for key, value in fields.items():
        point.field(key, value)
    return point.time(utc_ns, WritePrecision.NS).to_line_protocol()
