"""The simulated lab's InfluxDB as a lab runs its central one, with authentication on: influxd 1.x with an
admin, the agents' write-only user and the analysts' read-only one (thermrig.lab.influx_users), or
InfluxDB 2.x onboarded with an operator token, the agents' write-only token and the analysts' read-only
one (thermrig.db.local_server2). A campaign host writes its points as the agents do and reads its
results back as the analysts do: two credentials, each used only for what it needs."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from thermrig.db.influx_settings import DEFAULT_DATABASE, InfluxSettings
from thermrig.db.local_server import LocalInflux
from thermrig.db.local_server2 import LocalInflux2
from thermrig.lab.influx_users import Credentials, provision


@dataclass(frozen=True)
class ApiToken:
    """A 2.x API token and who holds it (`user`: the name the demo shows)."""

    user: str
    token: str = field(repr=False)


@dataclass(frozen=True)
class LabInflux:
    url: str
    admin: Credentials | ApiToken
    agent: Credentials | ApiToken  # write only
    analyst: Credentials | ApiToken  # read only
    bucket: str = f"{DEFAULT_DATABASE}/autogen"  # 2.x: the bucket, which InfluxQL reads as DEFAULT_DATABASE
    org: str = "-"  # 2.x: the organization

    @property
    def settings(self) -> InfluxSettings:
        """A campaign host's: it writes as the agents do and reads back as the analysts do."""
        return InfluxSettings(
            url=self.url,
            bucket=self.bucket,
            database=DEFAULT_DATABASE,
            org=self.org,
            token=self.agent.token,
            read_token=self.analyst.token,
            source="the lab's InfluxDB",
        )

    def env(self) -> dict[str, str]:
        """The environment a `thermrig` child records with on this server (db/influx_settings.py)."""
        s = self.settings
        return {
            "THERMRIG_INFLUX_URL": s.url,
            "THERMRIG_INFLUX_BUCKET": s.bucket,
            "THERMRIG_INFLUX_TOKEN": s.token,
            "THERMRIG_INFLUX_READ_TOKEN": s.read_token,
        } | ({"THERMRIG_INFLUX_ORG": s.org, "THERMRIG_INFLUX_DATABASE": s.database} if s.org != "-" else {})

    def reader_env(self) -> str:
        """The variables an analyst reads the results with, as a shell line's prefix (the read credentials)."""
        s = self.settings
        pairs = {"THERMRIG_INFLUX_URL": s.url}
        if s.org != "-":
            pairs |= {"THERMRIG_INFLUX_ORG": s.org, "THERMRIG_INFLUX_BUCKET": s.bucket}
        return " ".join(f"{k}={v}" for k, v in (pairs | {"THERMRIG_INFLUX_TOKEN": s.read_token}).items()) + " "


@contextmanager
def lab_influx(folder: Path, server: int = 1) -> Iterator[LabInflux]:
    """The lab's InfluxDB on a free loopback port with its data in folder, authentication on, stopped at
    the end. server 1: influxd 1.x with the lab's users made (passwords drawn here); 2: InfluxDB 2.x,
    onboarded (its tokens kept in folder/tokens.json, mode 0600)."""
    if server == 2:
        two = LocalInflux2(folder)
        url = two.up()
        try:
            o = two.onboarding()
            yield LabInflux(
                url,
                ApiToken("operator", o.operator_token),
                ApiToken("the agents' token", o.write_token),
                ApiToken("the analysts' token", o.read_token),
                bucket=o.bucket,
                org=o.org,
            )
        finally:
            two.down()
        return
    one = LocalInflux(folder)
    url = one.up(auth=True)
    try:
        admin, agent, analyst = (Credentials(who, secrets.token_urlsafe(12)) for who in ("admin", "agent", "analyst"))
        provision(url, DEFAULT_DATABASE, admin, agent, analyst)
        yield LabInflux(url, admin, agent, analyst)
    finally:
        one.down()
