"""A private InfluxDB 2.x for a test: started in a temp folder on a free loopback port, onboarded as a lab
admin onboards one (org, bucket, operator / write-only / read-only tokens, optionally the DBRP mapping), and
stopped when the test is done.

    with influx2_server(tmp_path) as server:
        server.settings()  # InfluxSettings: the write token writes, the read token reads
        server.url, server.org, server.bucket, server.bucket_id, server.database
        server.operator_token, server.write_token, server.read_token
        server.api()  # the 2.x HTTP API with the operator token (tokens, buckets, mappings)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pytest

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.local_server2 import Api, LocalInflux2, Onboarding, influxd2_binary


@dataclass(frozen=True)
class Influx2(Onboarding):
    """What onboarding made (names, ids, the three tokens), with the server and its URL."""

    server: LocalInflux2
    url: str

    def settings(self, **changes: str) -> InfluxSettings:
        """The settings an agent and an analyst use (write token, read token); changes: fields replaced,
        e.g. token=..., read_token=..., bucket=..., database=..."""
        return replace(self.server.settings(), **changes)

    def api(self) -> Api:
        return Api(self.url, self.operator_token)


@contextmanager
def influx2_server(
    folder: Path,
    bucket: str = "thermrig",
    database: str = "thermrig",
    mapping: bool = True,
    retention_s: int = 0,
    org: str = "thermrig",
) -> Iterator[Influx2]:
    """An onboarded influxd 2.x in folder/influxdb2; mapping False: no DBRP mapping (InfluxQL then finds
    the database only when the bucket is named like it); retention_s: the bucket's retention (0: forever)."""
    if not influxd2_binary().exists():
        pytest.fail(f"{influxd2_binary()} is missing: run `make setup` (it builds influxd 2.x)")
    server = LocalInflux2(folder / "influxdb2", org, bucket, database, mapping, retention_s)
    url = server.up()
    try:
        yield Influx2(**asdict(server.onboarding()), server=server, url=url)
    finally:
        server.down()
