"""A campaign's runs read back from InfluxDB (InfluxQL over /query), as RunData for the analysis: run
events give the runs, their factors, phases and end; fio_interval the jobs (their position: their order
in time); rig_telemetry and drive_smart every temperature at 1 s; run_summary what is already stored."""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np

from thermrig.analysis.attribution import ACCOUNT, LATENESS, WRITTEN_UNITS
from thermrig.analysis.run_data import FACTORS, LAB_TAGS, Gap, RunData, Trace
from thermrig.analysis.throttle_summary import JobLog, positions_by_start
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.query import QueryError, Series, influxql
from thermrig.db.schema import DRIVE, EVENTS, FIO_INTERVAL, SUMMARY, TELEMETRY

BUCKET_MS = 1000  # the analysis reads every sensor as GROUP BY time(1s) means
# the drive's account, its own count of writes, the simulator's lateness
COUNTER_FIELDS = (*ACCOUNT, "ocp_throttle_status", WRITTEN_UNITS, *LATENESS)
TAGS = ("rig", "campaign", *FACTORS, *LAB_TAGS)
UPTIME = "uptime_ms"  # rig_telemetry: the rig's own clock, for axes in rig time


class NoData(QueryError):
    """Nothing recorded for what was asked: a clear line for the user, not a traceback."""


def quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _group(*tags: str) -> str:
    return ", ".join(f'"{t}"' for t in tags)


def campaign_runs(settings: InfluxSettings, campaign: str, only_run: str | None = None) -> list[RunData]:
    """Every run of the campaign (or only one) with its events, fio jobs and stored summary, in run order."""
    where = f'"campaign" = {quote(campaign)}'
    if only_run is not None:
        where += f' AND "run" = {quote(only_run)}'
    events = influxql(
        settings,
        f"SELECT detail, gap_start_ns FROM {EVENTS} WHERE {where} GROUP BY {_group('run', 'kind', *TAGS)}",
        epoch="ms",
    )
    if not events:
        what = f"run {only_run!r} of campaign {campaign!r}" if only_run else f"runs of campaign {campaign!r}"
        raise NoData(f"no {what} in InfluxDB ({settings.url}, database {settings.database})")
    runs: dict[str, RunData] = {}
    starts: dict[str, int] = {}
    for s in events:
        run = s.tags.get("run", "")
        data = runs.setdefault(run, RunData(run, {k: v for k, v in s.tags.items() if v and k not in ("kind",)}))
        kind = s.tags.get("kind")
        for t, detail, *rest in s.values:
            if kind == "gap" and rest and rest[0] is not None:
                data.gaps.append(Gap(int(rest[0]) / 1e6, float(t), str(detail or "")))
            elif kind == "run_start":
                starts[run] = min(starts.get(run, int(t)), int(t))
                data.phases["start"] = starts[run]
            elif kind == "run_stop":
                data.status, data.end_ms = str(detail), int(t)
            elif kind == "phase" and detail:
                data.phases.setdefault(str(detail).split()[0], int(t))
    for data in runs.values():
        data.gaps.sort(key=lambda g: g.start_ms)
    _add_jobs(settings, where, runs)
    _add_stored(settings, where, runs)
    return sorted(runs.values(), key=lambda d: (starts.get(d.run, 0), d.run))


def _add_jobs(settings: InfluxSettings, where: str, runs: dict[str, RunData]) -> None:
    group = _group("run", "job", "rw")
    q = f"SELECT bw_bps, iops, lat_mean_ns FROM {FIO_INTERVAL} WHERE {where} GROUP BY {group}"
    fio = influxql(settings, q, epoch="ms")
    by_run: dict[str, list[Series]] = defaultdict(list)
    for s in fio:
        if s.values:
            by_run[s.tags.get("run", "")].append(s)
    for run, series in by_run.items():
        first: dict[str, int] = {}
        for s in series:
            name = s.tags.get("job", "")
            first[name] = min(first.get(name, int(s.values[0][0])), int(s.values[0][0]))
        position = positions_by_start(first)
        data = runs.get(run)
        if data is None:
            continue
        for s in series:
            rows = [v for v in s.values if v[1] is not None]
            data.jobs.append(
                JobLog(
                    position[s.tags.get("job", "")],
                    s.tags.get("rw", "write"),
                    tuple(int(v[0]) for v in rows),
                    tuple(float(v[1]) for v in rows),
                    tuple(float(v[2] or 0.0) for v in rows) if any(v[2] is not None for v in rows) else (),
                    tuple(float(v[3] or 0.0) for v in rows) if any(v[3] is not None for v in rows) else (),
                )
            )


def _add_stored(settings: InfluxSettings, where: str, runs: dict[str, RunData]) -> None:
    for s in influxql(settings, f'SELECT * FROM {SUMMARY} WHERE {where} GROUP BY "run"', epoch="ns"):
        data = runs.get(s.tags.get("run", ""))
        if data is None or not s.values:
            continue
        row = dict(zip(s.columns, s.values[-1], strict=True))
        data.stored = {k: v for k, v in row.items() if v is not None and k != "time" and k not in TAGS}
        data.summary_ns = int(row["time"])  # the summary is rewritten at its own time: one point per run
        data.end_ms = data.end_ms or data.summary_ns // 1_000_000
        data.scale = float(row.get("bw_scale") or 1.0)


def _all_fields(settings: InfluxSettings, measurement: str) -> dict[str, str]:
    """Field name -> type (float, integer, boolean, string) of a measurement."""
    return {str(v[0]): str(v[1]) for s in influxql(settings, f'SHOW FIELD KEYS FROM "{measurement}"') for v in s.values}


def load_campaign(settings: InfluxSettings, campaign: str, only_run: str | None = None) -> list[RunData]:
    """campaign_runs with every run's temperatures and drive counters added: 1 s means over the run's own
    window (a query per run and measurement: a window spanning the whole campaign would make InfluxDB
    walk every empty second between runs)."""
    runs = campaign_runs(settings, campaign, only_run)
    for measurement in (TELEMETRY, DRIVE):
        _add_measurement(settings, runs, measurement, temps=True)
    return runs


def add_counters(settings: InfluxSettings, runs: list[RunData]) -> list[RunData]:
    """The runs with their drive counters and the simulator's lateness added (drive_smart), no temperatures:
    what attributing each fall of the throughput needs (analysis.attribution)."""
    _add_measurement(settings, runs, DRIVE, temps=False)
    return runs


def _add_measurement(settings: InfluxSettings, runs: list[RunData], measurement: str, temps: bool) -> None:
    types = _all_fields(settings, measurement)
    fields = sorted(f for f, kind in types.items() if f.endswith("_c") and kind == "float") if temps else []
    fields += [f for f in (*COUNTER_FIELDS, UPTIME) if f in types]
    if fields:
        select = ", ".join(f'mean("{f}") AS "{f}"' for f in fields)
        for data in runs:
            start, end = run_window(data)
            where = f'"run" = {quote(data.run)} AND time >= {start}ms AND time <= {end}ms'
            q = f"SELECT {select} FROM {measurement} WHERE {where} GROUP BY time({BUCKET_MS}ms) fill(none)"
            for s in influxql(settings, q, epoch="ms"):
                if s.values:
                    _add_series(data, measurement, s)


def _add_series(data: RunData, measurement: str, s: Series) -> None:
    """One run's 1 s means of a measurement: each field a trace; a sensor never reported gives none (an
    NVMe sensor the drive does not implement is absent, not zero). InfluxDB stamps a GROUP BY time(1s)
    mean at its second's start; the trace stamps it at the second's middle, the time it stands for (read
    at the start, a sensor heating 1 °C/s would be read half a degree ahead)."""
    table = np.array([[np.nan if x is None else float(x) for x in row] for row in s.values], dtype=float)
    for i, name in enumerate(s.columns[1:], start=1):
        keep = ~np.isnan(table[:, i])
        if not keep.any():
            continue
        trace = Trace(table[keep, 0] + BUCKET_MS / 2, table[keep, i])
        if name.endswith("_c"):
            data.temps[f"{measurement}.{name}"] = trace
        elif name == UPTIME:
            data.uptime = trace
        else:
            data.counters[name] = trace


def run_window(data: RunData) -> tuple[int, int]:
    """From the first phase (or the first job) to the run's end, with a second either side."""
    starts = [*data.phases.values(), *(log.stamps_ms[0] - 1000 for log in data.jobs if log.stamps_ms)]
    ends = [data.end_ms or time.time() * 1000, *(log.stamps_ms[-1] for log in data.jobs if log.stamps_ms)]
    return (min(starts) - 1000 if starts else 0), int(max(ends)) + 1000


def campaign_of(settings: InfluxSettings, name: str) -> tuple[str, str | None]:
    """NAME as a campaign, else as a run: (campaign, None) or (its campaign, run)."""
    for key in ("campaign", "run"):
        rows = influxql(settings, f'SHOW TAG VALUES FROM {EVENTS} WITH KEY = "campaign" WHERE "{key}" = {quote(name)}')
        campaigns = sorted({str(v[1]) for s in rows for v in s.values})
        if campaigns:
            return (name, None) if key == "campaign" else (campaigns[0], name)
    raise NoData(f"no campaign or run named {name!r} in InfluxDB ({settings.url}, database {settings.database})")
