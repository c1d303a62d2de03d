"""Two dashboards over thermrig's InfluxDB (docs/influx-schema.md, InfluxQL): a live run (temperatures,
throughput, the drive's own sensors, actuators, events) and a campaign overview (run summaries, the
onset table, factor effects, the sensor ranking). Variables: $campaign, then $run within it."""

from __future__ import annotations

import json
from dataclasses import dataclass

from grafana_foundation_sdk.builders import dashboard, table, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder

from thermrig.db.schema import (
    ACTUATORS,
    CAMPAIGN_EFFECT,
    CAMPAIGN_SUMMARY,
    DRIVE,
    EVENTS,
    FIO_INTERVAL,
    FIO_LIVE,
    SENSOR_RANK,
    SUMMARY,
    TELEMETRY,
)
from thermrig.grafana.influxql import DATASOURCE, InfluxQueryBuilder

RUN = '"run" =~ /^$run$/'
CAMPAIGN = '"campaign" =~ /^$campaign$/'
PER_INTERVAL = "GROUP BY time($__interval) fill(none)"


@dataclass(frozen=True)
class Panel:
    title: str
    kind: str  # timeseries or table
    queries: tuple[str, ...]
    unit: str = ""
    width: int = 12


LIVE_RUN = (
    Panel(
        "Rig temperatures",
        "timeseries",
        (
            f'SELECT mean("drive_ctrl_c") AS "controller", mean("drive_nand_c") AS "NAND", mean("heatsink_c") AS '
            f'"heatsink", mean("chassis_air_c") AS "chassis air", mean("ambient_c") AS "ambient" FROM "{TELEMETRY}" '
            f"WHERE {RUN} AND $timeFilter {PER_INTERVAL}",
        ),
        "celsius",
    ),
    Panel(
        "Throughput (fio, live)",
        "timeseries",
        (
            f'SELECT mean("read_bps") AS "read", mean("write_bps") AS "write" FROM "{FIO_LIVE}" '
            f"WHERE {RUN} AND $timeFilter {PER_INTERVAL}",
        ),
        "Bps",
    ),
    Panel(
        "The drive's own sensors (smart-log)",
        "timeseries",
        (
            f'SELECT mean("composite_c") AS "composite" FROM "{DRIVE}" WHERE {RUN} AND $timeFilter {PER_INTERVAL}',
            f'SELECT max("tmt1_count") AS "TMT1 transitions", max("tmt2_count") AS "TMT2 transitions" '
            f'FROM "{DRIVE}" WHERE {RUN} AND $timeFilter {PER_INTERVAL}',
        ),
    ),
    Panel(
        "Heater and fans",
        "timeseries",
        (
            f'SELECT mean("heater_pct") AS "heater", mean("fan0_pct") AS "fan 0", mean("fan1_pct") AS "fan 1" '
            f'FROM "{ACTUATORS}" WHERE {RUN} AND $timeFilter {PER_INTERVAL}',
        ),
        "percent",
    ),
    Panel(
        "Phases and events",
        "table",
        (f'SELECT "kind", "detail" FROM "{EVENTS}" WHERE {RUN} AND $timeFilter',),
        width=24,
    ),
)

CAMPAIGN_OVERVIEW = (
    Panel(
        "Run summaries",
        "table",
        (
            'SELECT last("onset_s") AS "onset s", last("depth_pct") AS "depth %", last("plateau_bw_bps") AS '
            '"plateau B/s", last("onset_drive_ctrl_c") AS "controller at onset", last("recovery_s") AS "recovery s" '
            f'FROM "{SUMMARY}" WHERE {CAMPAIGN} GROUP BY "run", "slot", "heatsink", "profile", "workload"',
        ),
        width=24,
    ),
    Panel(
        "Onset and depth per cell (mean of repeats)",
        "table",
        (
            f'SELECT last("n") AS "runs", last("mean") AS "mean", last("sd") AS "sd" FROM "{CAMPAIGN_SUMMARY}" '
            f'WHERE {CAMPAIGN} GROUP BY "metric", "slot", "heatsink", "profile", "workload"',
        ),
    ),
    Panel(
        "Factor effects (difference of means, Welch 95 % CI)",
        "table",
        (
            'SELECT last("difference") AS "difference", last("ci_low") AS "CI low", last("ci_high") AS "CI high" '
            f'FROM "{CAMPAIGN_EFFECT}" WHERE {CAMPAIGN} GROUP BY "metric", "factor", "level", "reference"',
        ),
    ),
    Panel(
        "Which sensor predicts throttling",
        "table",
        (
            'SELECT last("rank") AS "rank", last("median_c") AS "at onset °C", last("spread_c") AS "spread °C", '
            f'last("follows") AS "follows the drive" FROM "{SENSOR_RANK}" WHERE {CAMPAIGN} GROUP BY "sensor"',
        ),
    ),
    Panel(
        "Throughput per second, every run",
        "timeseries",
        (
            f'SELECT mean("bw_bps") FROM "{FIO_INTERVAL}" WHERE {CAMPAIGN} AND $timeFilter '
            'GROUP BY time(1s), "run" fill(none)',
        ),
        "Bps",
    ),
    Panel(
        "Controller thermocouple, every run",
        "timeseries",
        (
            f'SELECT mean("drive_ctrl_c") FROM "{TELEMETRY}" WHERE {CAMPAIGN} AND $timeFilter '
            'GROUP BY time($__interval), "run" fill(none)',
        ),
        "celsius",
    ),
)


def _tag_variable(key: str, where: str = "") -> dashboard.QueryVariable:
    """A dashboard variable whose values are the tag key's values in the events (WHERE: narrowed)."""
    query = f'SHOW TAG VALUES FROM "{EVENTS}" WITH KEY = "{key}"' + (f" WHERE {where}" if where else "")
    return dashboard.QueryVariable(key).label(key).datasource(DATASOURCE).query(query)


def _variables(board: dashboard.Dashboard, with_run: bool) -> dashboard.Dashboard:
    board = board.with_variable(_tag_variable("campaign"))
    if with_run:
        board = board.with_variable(_tag_variable("run", where=CAMPAIGN))
    return board


def _panel(p: Panel) -> timeseries.Panel | table.Panel:
    built: timeseries.Panel | table.Panel = timeseries.Panel() if p.kind == "timeseries" else table.Panel()
    built = built.title(p.title).datasource(DATASOURCE).span(p.width).height(8)
    if p.unit:
        built = built.unit(p.unit)
    for i, q in enumerate(p.queries):
        built = built.with_target(
            InfluxQueryBuilder(chr(ord("A") + i), q, "time_series" if p.kind == "timeseries" else "table")
        )
    return built


def build(uid: str, title: str, panels: tuple[Panel, ...], with_run: bool, refresh: str | None) -> dict[str, object]:
    board = dashboard.Dashboard(title).uid(uid).tags(["thermrig"]).time("now-1h", "now").timezone("utc")
    if refresh:
        board = board.refresh(refresh)
    board = _variables(board, with_run)
    for p in panels:
        board = board.with_panel(_panel(p))
    return json.loads(json.dumps(board.build(), cls=JSONEncoder))


DASHBOARDS = {
    "thermrig-live-run.json": ("thermrig-live-run", "thermrig: live run", LIVE_RUN, True, "5s"),
    "thermrig-campaign.json": ("thermrig-campaign", "thermrig: campaign overview", CAMPAIGN_OVERVIEW, False, None),
}


def dashboards() -> dict[str, dict[str, object]]:
    return {name: build(*args) for name, args in DASHBOARDS.items()}


def panels() -> dict[str, tuple[Panel, ...]]:
    return {name: args[2] for name, args in DASHBOARDS.items()}
