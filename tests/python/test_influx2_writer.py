"""What an InfluxDB 2.x server does that 1.x does not, met by the spool and its writer on the real 2.x
server, with nothing lost: a token revoked mid-run (401), a write-only token used to read (403), the bucket
deleted mid-campaign (404), points older than the bucket's retention (a partial write, 422), the server
restarted mid-run. The writer is driven directly (Spooled.drain: a run's points appended, then drained with
a timeout), so each case takes seconds."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from influx2_server import Influx2, influx2_server

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.local_server import LocalInflux
from thermrig.db.local_server2 import bucket_permission
from thermrig.db.query import QueryError, influxql
from thermrig.db.spool import Spool
from thermrig.db.writer import SpoolWriter, WriteProblem

HOUR_NS = 3600 * 10**9


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Influx2]:
    with influx2_server(tmp_path, bucket="ssd-thermal", retention_s=24 * 3600) as s:
        yield s


def points(run: str, first: int, count: int, at_ns: int | None = None) -> list[str]:
    """count points of measurement t2x, one per ms from at_ns (default: now), field i = first, first+1, ..."""
    start = at_ns if at_ns is not None else time.time_ns() - count * 10**6
    return [f"t2x,run={run} i={first + k}i {start + k * 10**6}" for k in range(count)]


def stored(settings: InfluxSettings, run: str, measurement: str = "t2x") -> list[int]:
    """The i fields InfluxDB holds for the run, read with the settings' read token (a server's settings():
    the analysts')."""
    found = influxql(settings, f"SELECT i FROM {measurement} WHERE run = '{run}'")
    return sorted(int(row[1]) for s in found for row in s.values)  # type: ignore[call-overload]


def new_write_token(server: Influx2, bucket_id: str | None = None) -> tuple[str, str]:
    """A new write-only token for the bucket: (its authorization's id, the token)."""
    made = server.api().call(
        "POST",
        "/api/v2/authorizations",
        {
            "orgID": server.org_id,
            "description": "a test's agent",
            "permissions": [bucket_permission("write", server.org_id, bucket_id or server.bucket_id)],
        },
    )
    return made["id"], made["token"]


def writer(spool: Spool, settings: InfluxSettings, problems: list[WriteProblem]) -> SpoolWriter:
    return SpoolWriter(spool, settings, on_error=problems.append)


@dataclass
class Spooled:
    """A run's spool and the writer that drains it to InfluxDB, with the problems the writer reported."""

    spool: Spool
    writer: SpoolWriter
    problems: list[WriteProblem]

    def drain(self, *batches: list[str], timeout: float) -> bool:
        """The batches appended to the spool (the run's points as they come), then drained for up to timeout
        s: True once the spool is empty, False if the server had not taken them all by then."""
        for batch in batches:
            self.spool.append(batch)
        return self.writer.drain(timeout=timeout)


def spooled(run: str, folder: Path, settings: InfluxSettings) -> Spooled:
    """The run's spool in folder, its writer sending with settings."""
    spool = Spool.for_run(run, folder)
    problems: list[WriteProblem] = []
    return Spooled(spool, writer(spool, settings, problems), problems)


def test_a_token_revoked_mid_run_keeps_the_points_until_a_new_one(server: Influx2, tmp_path: Path) -> None:
    auth_id, token = new_write_token(server)
    run = spooled("revoked", tmp_path, server.settings(token=token))
    assert run.drain(points("revoked", 0, 50), timeout=30) and not run.problems
    server.api().call("DELETE", f"/api/v2/authorizations/{auth_id}")  # the admin revokes it mid-run
    assert not run.drain(points("revoked", 50, 50), timeout=1.0)  # the run goes on into the spool
    assert run.spool.pending_bytes() > 0
    assert {p.message for p in run.problems} == {
        f"InfluxDB at {server.url} refuses the token (HTTP 401 unauthorized access): the points stay in the "
        "spool and `thermrig db drain` sends them once a valid token is set"
    }
    assert all(p.kept for p in run.problems)
    assert run.writer.close(flush_timeout=0.5) is False
    fresh = writer(run.spool, server.settings(), [])  # a new token given: everything lands
    assert fresh.close(flush_timeout=30)
    assert stored(server.settings(), "revoked") == list(range(100))


def test_a_write_only_token_used_to_read(server: Influx2) -> None:
    """2.x answers an InfluxQL read with a write-only token as if the database did not exist: the error
    says so and names both causes and the command that tells them apart; a bad token is refused (401)."""
    with pytest.raises(QueryError) as refused:
        influxql(server.settings(read_token=server.write_token), "SELECT * FROM t2x")
    assert str(refused.value) == (
        "database not found: thermrig (on 2.x: the token queries use, THERMRIG_INFLUX_READ_TOKEN else "
        "THERMRIG_INFLUX_TOKEN, may not read the bucket, or no DBRP mapping takes database thermrig to it; "
        "`thermrig db check` says which)"
    )
    with pytest.raises(QueryError) as refused:
        influxql(server.settings(read_token="not-a-token"), "SELECT * FROM t2x")
    assert str(refused.value) == (
        f"InfluxDB at {server.url} refuses the read (HTTP 401 Unauthorized): the token queries use "
        "(THERMRIG_INFLUX_READ_TOKEN, else THERMRIG_INFLUX_TOKEN) may not read database thermrig"
    )


def test_the_bucket_deleted_mid_campaign(server: Influx2, tmp_path: Path) -> None:
    run = spooled("deleted", tmp_path, server.settings())
    assert run.drain(points("deleted", 0, 20), timeout=30)
    server.api().call("DELETE", f"/api/v2/buckets/{server.bucket_id}")
    assert not run.drain(points("deleted", 20, 30), timeout=1.0)
    assert {p.message for p in run.problems} == {
        f'InfluxDB at {server.url}: bucket ssd-thermal not found (HTTP 404 bucket "ssd-thermal" not found): '
        "the points stay in the spool and `thermrig db drain` sends them once it exists"
    }
    run.writer.close(flush_timeout=0.1)
    # the admin makes the bucket again (a new id: a new mapping and a new token for it)
    bucket = server.api().call("POST", "/api/v2/buckets", {"orgID": server.org_id, "name": "ssd-thermal"})
    server.api().call(
        "POST",
        "/api/v2/dbrps",
        {"orgID": server.org_id, "bucketID": bucket["id"], "database": "thermrig", "retention_policy": "autogen"},
    )
    _, token = new_write_token(server, bucket["id"])
    assert writer(run.spool, server.settings(token=token), []).close(flush_timeout=30)
    operator = server.settings(read_token=server.operator_token)
    assert stored(operator, "deleted") == list(range(20, 50))


def test_points_older_than_the_retention_are_reported_with_their_count(server: Influx2, tmp_path: Path) -> None:
    run = spooled("old", tmp_path, server.settings())
    too_old = points("old", 0, 7, at_ns=time.time_ns() - 48 * HOUR_NS)  # a day past the retention
    assert run.drain(too_old, points("old", 7, 13), timeout=30)  # answered once, not retried forever
    assert run.spool.pending_bytes() == 0
    problems = run.problems
    assert len(problems) == 1 and not problems[0].kept
    assert problems[0].message.startswith("InfluxDB dropped 7 of 20 points (older than the bucket's retention")
    assert "dropped=7" in problems[0].message
    assert run.writer.points_written == 13
    assert stored(server.settings(), "old") == list(range(7, 20))


def test_the_server_restarted_mid_run(server: Influx2, tmp_path: Path) -> None:
    run = spooled("restart", tmp_path, server.settings())
    assert run.drain(points("restart", 0, 30), timeout=30)
    url = server.url
    server.server.down()
    assert not run.drain(points("restart", 30, 30), timeout=1.0)
    problems = run.problems
    assert problems and all(p.kept for p in problems)
    assert problems[-1].message == f"InfluxDB at {url} unavailable: connection refused"
    assert server.server.up() == url  # the same port, the same data and tokens
    assert run.writer.close(flush_timeout=30)
    assert stored(server.settings(), "restart") == list(range(60))


def test_points_older_than_the_retention_on_1x(influx_server: LocalInflux, tmp_path: Path) -> None:
    """1.x answers the same partial write with 400: reported with the count the same way."""
    settings = replace(influx_server.settings(), bucket="thermrig/day")
    influxql(settings, 'CREATE RETENTION POLICY "day" ON "thermrig" DURATION 24h REPLICATION 1')
    run = spooled("old1", tmp_path, settings)
    assert run.drain(points("old1", 0, 4, at_ns=time.time_ns() - 48 * HOUR_NS), points("old1", 4, 6), timeout=30)
    problems = run.problems
    assert len(problems) == 1 and not problems[0].kept
    assert problems[0].message.startswith("InfluxDB dropped 4 of 10 points (older than the bucket's retention")
    assert run.writer.points_written == 6
    assert stored(settings, "old1", "day.t2x") == list(range(4, 10))
