"""The InfluxDB servers a pipeline test runs on: the embedded default (influxd 1.x, no authentication) and
InfluxDB 2.x as a lab sets it up (influx2_server.py: a write-only and a read-only token, a bucket named
unlike the database, which InfluxQL reaches through the DBRP mapping). A test runs on both with
`@ON_BOTH` (conftest's influx_server fixture, parametrized); on 1.x only by default. A campaign recorded
once is copied into the other server point for point (copy_points), so the read side of a long real-time
recording runs on both without recording twice."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from influx2_server import influx2_server
from influxdb_client import Point, WritePrecision

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.local_server import LocalInflux
from thermrig.db.query import influxql
from thermrig.db.spool import Spool
from thermrig.db.writer import SpoolWriter, WriteProblem

SERVERS = ("1.x", "2.x")
DEFAULT = "1.x"
ON_BOTH = pytest.mark.parametrize("influx_server", SERVERS, indirect=True)
RECORDED_ON_BOTH = pytest.mark.parametrize("recorded_campaign", SERVERS, indirect=True)


BUCKET_2X = "ssd-thermal"  # as a lab may name it: not the database's name, so InfluxQL needs the mapping


@contextmanager
def running(version: str, folder: Path) -> Iterator[LocalInflux]:
    """The server of that version with its data in folder, started (2.x: onboarded, its tokens and the
    DBRP mapping made), stopped at the end."""
    if version == "2.x":
        with influx2_server(folder, bucket=BUCKET_2X) as two:
            yield two.server
        return
    server = LocalInflux(folder / "influxdb")
    server.up()
    try:
        yield server
    finally:
        server.down()


def env_for(settings: InfluxSettings) -> dict[str, str]:
    """What a `thermrig` child records and reads with on this server (thermrig.db.influx_settings)."""
    env = {"THERMRIG_INFLUX_URL": settings.url, "THERMRIG_INFLUX_BUCKET": settings.bucket}
    if settings.org != "-":  # 2.x: the org, the tokens, the database InfluxQL reads (the DBRP mapping's)
        env |= {
            "THERMRIG_INFLUX_ORG": settings.org,
            "THERMRIG_INFLUX_TOKEN": settings.token,
            "THERMRIG_INFLUX_READ_TOKEN": settings.read_token,
            "THERMRIG_INFLUX_DATABASE": settings.database,
        }
    return env


_TYPES = {"float": float, "integer": int, "string": str, "boolean": bool}


def copy_points(source: InfluxSettings, target: InfluxSettings, spool_folder: Path) -> int:
    """Every point of source's database into target, field types kept, through thermrig's own spool and
    writer; returns how many points."""
    measurements = [row[0] for s in influxql(source, "SHOW MEASUREMENTS") for row in s.values]
    spool = Spool.for_run("copied", spool_folder)
    points = 0
    for m in measurements:
        types = {row[0]: _TYPES[row[1]] for s in influxql(source, f'SHOW FIELD KEYS FROM "{m}"') for row in s.values}
        lines = []
        for s in influxql(source, f'SELECT * FROM "{m}" GROUP BY *'):
            for row in s.values:
                point = Point(m).time(int(row[0]), WritePrecision.NS)  # type: ignore[arg-type]
                for k, v in s.tags.items():
                    if v:
                        point = point.tag(k, v)
                for name, value in zip(s.columns[1:], row[1:], strict=True):
                    if value is not None:
                        point = point.field(name, types[name](value))
                lines.append(point.to_line_protocol())
        spool.append(lines)
        points += len(lines)
    problems: list[WriteProblem] = []
    assert SpoolWriter(spool, target, on_error=problems.append).close(flush_timeout=120), problems[-1:]
    assert not problems, problems[:3]
    return points
