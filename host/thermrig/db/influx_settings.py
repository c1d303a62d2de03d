"""Where the data goes: a configured server (environment or config file, never argv) or the local one.

Environment: THERMRIG_INFLUX_URL, THERMRIG_INFLUX_TOKEN, THERMRIG_INFLUX_READ_TOKEN, THERMRIG_INFLUX_ORG,
THERMRIG_INFLUX_BUCKET, THERMRIG_INFLUX_DATABASE (for InfluxQL; default: the bucket's name before any "/").
Config file (~/.config/thermrig/config.toml): an [influx] table with url, token, read_token, org, bucket,
database. The token writes; the read token, when set, is the one queries use (a write-only user for the
points, a read-only one for reading them back); without it the token does both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from thermrig.settings import config_file, config_table, environment

DEFAULT_DATABASE = "thermrig"
LOCAL_TOKEN = "user:pass"  # InfluxDB 1.8 compat: "username:password"; auth is off on the local server


@dataclass(frozen=True)
class InfluxSettings:
    url: str
    bucket: str  # v2 bucket, or "database/retention-policy" on 1.8
    database: str  # InfluxQL database (2.x: the DBRP mapping's database)
    org: str = "-"
    token: str = field(default=LOCAL_TOKEN, repr=False)  # writes; never printed, never logged
    source: str = "local server"
    read_token: str = field(default="", repr=False)  # queries, when set (else the token); never printed

    @property
    def query_token(self) -> str:
        """The credentials a query goes with: the read token if there is one, else the token."""
        return self.read_token or self.token

    def describe(self) -> str:
        return f"{self.url} bucket {self.bucket} ({self.source})"


def configured() -> InfluxSettings | None:
    """A remote server from the environment or the config file, if one is configured."""
    keys = ("url", "token", "read_token", "org", "bucket", "database")
    env = {k: environment(f"THERMRIG_INFLUX_{k.upper()}") for k in keys}
    source = "environment"
    if not env["url"]:
        table, r = config_table("influx", "an [influx] table with url, token, org, bucket")
        if r is None or not table.get("url"):
            return None
        env = {k: r.get(table, "influx", k, str, "a string", None) for k in keys}
        source = str(config_file())
    bucket = env["bucket"] or f"{DEFAULT_DATABASE}/autogen"
    return InfluxSettings(
        url=str(env["url"]).rstrip("/"),
        bucket=bucket,
        database=env["database"] or bucket.split("/")[0],
        org=env["org"] or "-",
        token=env["token"] or LOCAL_TOKEN,
        source=source,
        read_token=env["read_token"] or "",
    )
