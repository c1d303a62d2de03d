"""A local InfluxDB 2.x (`thermrig db up --server 2`): influxd 2.x on loopback, its data under the user's
data directory, onboarded as a lab admin would onboard a server: an org, a bucket, an operator token (all
access, kept in tokens.json with mode 0600 and never printed), a write-only token for the agents, a
read-only one for the analysts, and the DBRP mapping InfluxQL reads need (database -> bucket).

Its port is kept across restarts when still free, as the 1.x server's is (local_server.py). Tests start
private ones in temp folders with another bucket name, or without the mapping (a lab's server as it may be).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import urllib3

from thermrig.db.influx_settings import DEFAULT_DATABASE, InfluxSettings
from thermrig.db.local_server import InfluxServerError, LocalInflux, _port_free, free_port
from thermrig.settings import data_dir, find_tool

DEFAULT_ORG = "thermrig"
RETENTION_POLICY = "autogen"  # the retention policy InfluxQL names the bucket with
OPERATOR = "thermrig-operator"


def influxd2_binary() -> Path:
    return find_tool("influxd2")


@dataclass(frozen=True)
class Onboarding:
    """What onboarding made: names, ids and the three tokens (tokens.json, mode 0600)."""

    org: str
    org_id: str
    bucket: str
    bucket_id: str
    database: str
    operator_token: str
    write_token: str
    read_token: str

    def save(self, path: Path) -> None:
        """Written to a new file created with mode 0600, then moved over the old one: the tokens are
        never readable by others, not even for a moment."""
        tmp = path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(asdict(self), fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> Onboarding | None:
        try:
            return cls(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None


class Api:
    """The 2.x HTTP API with one token."""

    def __init__(self, url: str, token: str = "", timeout: float = 10.0) -> None:
        self.url = url
        self.token = token
        self.http = urllib3.PoolManager(timeout=timeout, retries=False)

    def call(self, method: str, path: str, body: dict[str, Any] | None = None, **fields: str) -> Any:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        query = urlencode(fields)
        r = self.http.request(
            method,
            f"{self.url}{path}" + (f"?{query}" if query else ""),
            body=None if body is None else json.dumps(body).encode(),
            headers=headers,
        )
        data = json.loads(r.data) if r.data else {}
        if r.status >= 300:
            raise InfluxServerError(f"{method} {path}: HTTP {r.status} {data.get('message', r.data[:200])}")
        return data


def bucket_permission(action: str, org_id: str, bucket_id: str) -> dict[str, Any]:
    return {"action": action, "resource": {"type": "buckets", "id": bucket_id, "orgID": org_id}}


@dataclass
class LocalInflux2(LocalInflux):
    """root holds influxd.bolt, influxd.sqlite, engine/, influxd.log, state.json and tokens.json."""

    org: str = DEFAULT_ORG
    bucket: str = DEFAULT_DATABASE
    database: str = DEFAULT_DATABASE
    mapping: bool = True  # False: no DBRP mapping made (InfluxQL then finds only a bucket named like it)
    retention_s: int = 0  # the bucket's retention (0: forever)

    @classmethod
    def default(cls) -> LocalInflux2:
        return cls(data_dir() / "influxdb2")

    @property
    def tokens_file(self) -> Path:
        return self.root / "tokens.json"

    def onboarding(self) -> Onboarding:
        found = Onboarding.load(self.tokens_file)
        if found is None:
            raise InfluxServerError(f"{self.tokens_file} is missing: `thermrig db up --server 2` onboards the server")
        return found

    def settings(self) -> InfluxSettings:
        """The local user's settings: the write token writes, the read token reads."""
        o = self.onboarding()
        return InfluxSettings(
            url=self.url,
            bucket=o.bucket,
            database=o.database,
            org=o.org,
            token=o.write_token,
            read_token=o.read_token,
            source="local server 2.x",
        )

    def operator(self) -> Api:
        """The API with the operator token (for administration: tokens, buckets, mappings)."""
        return Api(self.url, self.onboarding().operator_token)

    def up(self, http_port: int | None = None, auth: bool = True) -> str:
        """Start influxd 2.x unless it runs, onboard it the first time; return the URL. (auth: always on
        in 2.x; the parameter is the 1.x server's.)"""
        if self.state() is not None:
            return self.url
        binary = influxd2_binary()
        if not binary.exists():
            raise InfluxServerError(
                f"{binary} not found: run `make setup` (it builds influxd 2.x), or set THERMRIG_INFLUXD2"
            )
        self.root.mkdir(parents=True, exist_ok=True)
        previous = self._previous_port()
        port = http_port or (previous if previous and _port_free(previous) else free_port())
        log = (self.root / "influxd.log").open("ab")
        # influxd 2.x also reads INFLUXD_* variables and a config file in its working directory: neither
        # of the user's may change where this server keeps its data or listens.
        env = {k: v for k, v in os.environ.items() if not k.startswith("INFLUXD_")}
        proc = subprocess.Popen(
            [
                str(binary),
                "run",
                f"--bolt-path={self.root / 'influxd.bolt'}",
                f"--sqlite-path={self.root / 'influxd.sqlite'}",
                f"--engine-path={self.root / 'engine'}",
                f"--http-bind-address=127.0.0.1:{port}",
                "--reporting-disabled",
                "--log-level=warn",
            ],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            cwd=self.root,
            env=env,
            start_new_session=True,  # survives the command that started it; `db down` stops it
        )
        self.state_file.write_text(json.dumps({"pid": proc.pid, "http_port": port, "server": 2}))
        url = f"http://127.0.0.1:{port}"
        self._wait_ready(url, proc)
        if Api(url).call("GET", "/api/v2/setup").get("allowed"):
            self._onboard(url)
        elif Onboarding.load(self.tokens_file) is None:
            raise InfluxServerError(
                f"the InfluxDB 2.x in {self.root} was onboarded without thermrig's tokens ({self.tokens_file} "
                "is missing): stop it (`thermrig db down`) and move the folder away to start afresh"
            )
        return url

    def _onboard(self, url: str) -> None:
        setup = Api(url).call(
            "POST",
            "/api/v2/setup",
            {
                "username": OPERATOR,
                "password": secrets.token_urlsafe(24),  # never used again: the operator token administers
                "org": self.org,
                "bucket": self.bucket,
                "retentionPeriodSeconds": self.retention_s,
            },
        )
        org_id, bucket_id = setup["org"]["id"], setup["bucket"]["id"]
        api = Api(url, setup["auth"]["token"])
        tokens = {}
        for action, who in (("write", "agents"), ("read", "analysts")):
            made = api.call(
                "POST",
                "/api/v2/authorizations",
                {
                    "orgID": org_id,
                    "description": f"thermrig {who}: {action} bucket {self.bucket}",
                    "permissions": [bucket_permission(action, org_id, bucket_id)],
                },
            )
            tokens[action] = made["token"]
        if self.mapping:
            mapping = {
                "orgID": org_id,
                "bucketID": bucket_id,
                "database": self.database,
                "retention_policy": RETENTION_POLICY,
                "default": True,
            }
            api.call("POST", "/api/v2/dbrps", mapping)
        Onboarding(
            self.org,
            org_id,
            self.bucket,
            bucket_id,
            self.database,
            setup["auth"]["token"],
            tokens["write"],
            tokens["read"],
        ).save(self.tokens_file)
