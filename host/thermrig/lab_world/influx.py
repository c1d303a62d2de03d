"""The simulated lab's InfluxDB as a lab runs its central one: influxd 1.8 with authentication on, an
admin, the agents' write-only user and the analysts' read-only one (thermrig.lab.influx_users). A campaign
host writes its points with the agents' user and reads its results back with the analysts' user: two
credentials, each used only for what it needs."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from thermrig.db.local_server import LocalInflux
from thermrig.db.settings import DEFAULT_DATABASE, InfluxSettings
from thermrig.lab.influx_users import Credentials, provision


@dataclass(frozen=True)
class LabInflux:
    url: str
    admin: Credentials
    agent: Credentials  # write only
    analyst: Credentials  # read only

    @property
    def settings(self) -> InfluxSettings:
        """A campaign host's: it writes as the agents do and reads back as the analysts do."""
        return InfluxSettings(
            url=self.url,
            bucket=f"{DEFAULT_DATABASE}/autogen",
            database=DEFAULT_DATABASE,
            token=self.agent.token,
            read_token=self.analyst.token,
            source="the lab's InfluxDB",
        )

    def env(self) -> dict[str, str]:
        """The environment a `thermrig` child records with on this server (db/settings.py)."""
        s = self.settings
        return {
            "THERMRIG_INFLUX_URL": s.url,
            "THERMRIG_INFLUX_BUCKET": s.bucket,
            "THERMRIG_INFLUX_TOKEN": s.token,
            "THERMRIG_INFLUX_READ_TOKEN": s.read_token,
        }


@contextmanager
def lab_influx(folder: Path) -> Iterator[LabInflux]:
    """influxd on a free loopback port with its data in folder, authentication on and the lab's users made
    (passwords drawn here); stopped at the end."""
    server = LocalInflux(folder)
    url = server.up(auth=True)
    try:
        influx = LabInflux(
            url,
            Credentials("admin", secrets.token_urlsafe(12)),
            Credentials("agent", secrets.token_urlsafe(12)),
            Credentials("analyst", secrets.token_urlsafe(12)),
        )
        provision(url, DEFAULT_DATABASE, influx.admin, influx.agent, influx.analyst)
        yield influx
    finally:
        server.down()
