"""The preflight: is the server a campaign records into ready for it, before any rig time is spent?
`thermrig db check` runs it alone; `thermrig run` runs it before the first run, on one rig and on a lab.

Checks, in order (a server that does not answer stops them):
- the server answers (/ping), as 1.x or as 2.x (which serves /api/v2/setup);
- the token may write to the bucket (1.x: the database and its retention policy): an empty write, which
  the server answers only after it checked the token, the org, the bucket or database, and the
  permission (1.x also the retention policy), and which writes nothing: no point is ever left behind,
  however far the checks got;
- 2.x: the read token may read the bucket (it finds it by name) and InfluxQL reads find their database:
  a DBRP mapping of the database to the bucket, or the one 2.x makes by itself for a bucket named like
  the database (`database` or `database/rp`);
- the read token's InfluxQL read of the database (SHOW MEASUREMENTS) is answered.

Each failure is one line naming its fix (for a missing mapping, the `influx v1 dbrp create` command with
the bucket's id)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import urllib3

from thermrig.db.influx_settings import InfluxSettings
from thermrig.errors import ThermrigError

TIMEOUT_S = 10.0
SETTINGS_HINT = "THERMRIG_INFLUX_* or the [influx] table of config.toml"


class PreflightFailed(ThermrigError, RuntimeError):
    """The server is not ready: the message holds one line per failed check."""


@dataclass(frozen=True)
class Check:
    name: str  # server, write, read, mapping
    ok: bool
    line: str  # what was found, or what failed and its fix


@dataclass
class Preflight:
    settings: InfluxSettings
    version: str = ""  # the server's, as its /ping says ("" if it did not answer)
    v2: bool = False  # it serves the 2.x API (/api/v2/setup): tokens, orgs, buckets and DBRP mappings
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    @property
    def failures(self) -> list[str]:
        return [c.line for c in self.checks if not c.ok]

    def add(self, name: str, ok: bool, line: str) -> bool:
        self.checks.append(Check(name, ok, line))
        return ok

    def raise_unless_ok(self) -> None:
        if not self.ok:
            raise PreflightFailed(
                f"InfluxDB at {self.settings.url} is not ready for the campaign (nothing was written):\n"
                + "\n".join(f"  {line}" for line in self.failures)
            )


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any  # JSON, or the text
    headers: dict[str, str]

    @property
    def message(self) -> str:
        """The server's own words: 2.x's "message", 1.x's "error", or the text."""
        if isinstance(self.body, dict):
            text = self.body.get("message") or self.body.get("error")
            if not text:
                text = next((r["error"] for r in self.body.get("results", []) if "error" in r), "")
            return str(text or "").strip()
        return str(self.body).strip()[:200]


class _Http:
    def __init__(self, url: str) -> None:
        self.url = url
        self.pool = urllib3.PoolManager(timeout=TIMEOUT_S, retries=False)

    def __call__(self, method: str, path: str, token: str | None = None, body: bytes = b"", **fields: str) -> Answer:
        headers = {"Authorization": f"Token {token}"} if token is not None else {}
        if method == "POST" and path == "/query":
            r = self.pool.request(method, self.url + path, fields=fields, headers=headers)
        else:
            query = urlencode(fields)
            r = self.pool.request(method, f"{self.url}{path}?{query}", body=body, headers=headers)
        try:
            parsed: Any = json.loads(r.data) if r.data else {}
        except ValueError:
            parsed = r.data.decode(errors="replace")
        return Answer(r.status, parsed, {k.lower(): v for k, v in r.headers.items()})


def check(settings: InfluxSettings) -> Preflight:
    """Every check against the configured server; nothing is written to it."""
    result = Preflight(settings)
    http = _Http(settings.url)
    try:
        ping = http("GET", "/ping")
    except urllib3.exceptions.HTTPError as exc:
        why = "connection refused" if "refused" in str(exc).lower() else str(exc)[:160]
        result.add(
            "server",
            False,
            f"InfluxDB does not answer at {settings.url} ({why}): start it (`thermrig db up` for the local "
            f"one) or set its url ({SETTINGS_HINT})",
        )
        return result
    result.version = ping.headers.get("x-influxdb-version", "")
    if ping.status not in (200, 204):
        result.add("server", False, f"{settings.url}/ping answered HTTP {ping.status}: is this an InfluxDB server?")
        return result
    # A build says its version, or "unknown" / "dev": the 2.x API is told by its setup endpoint.
    result.v2 = http("GET", "/api/v2/setup").status == 200
    said = result.version if result.version not in ("", "unknown", "dev") else ("2.x" if result.v2 else "1.x")
    result.add("server", True, f"InfluxDB {said} answers at {settings.url}")
    try:
        wrote = _check_write(result, http)
        if result.v2:
            _check_bucket_and_mapping(result, http, wrote != 404)
        if result.v2 or wrote != 404:  # 1.x: a database that does not exist, said once
            _check_read(result, http)
    except urllib3.exceptions.HTTPError as exc:
        result.add("server", False, f"InfluxDB at {settings.url} stopped answering during the checks: {exc}")
    return result


def _bucket_words(p: Preflight) -> str:
    s = p.settings
    if p.v2:
        return f"bucket {s.bucket} of org {s.org}"
    db, _, rp = s.bucket.partition("/")
    return f"database {db}" + (f", retention policy {rp}" if rp else "")


def _check_write(p: Preflight, http: _Http) -> int:
    """The empty write: the server's verdict on the token, the org and bucket and the permission; its
    HTTP status."""
    s = p.settings
    a = http("POST", "/api/v2/write", s.token, b"", org=s.org, bucket=s.bucket, precision="ns")
    ok = a.status in (200, 204)
    p.add("write", ok, f"the token may write to {_bucket_words(p)}" if ok else _write_refused(p, a))
    return a.status


def _write_refused(p: Preflight, a: Answer) -> str:
    s = p.settings
    words = _bucket_words(p)
    db = s.bucket.split("/")[0]
    said = f"HTTP {a.status} {a.message}".strip()
    if a.status == 401:
        what = "token)" if p.v2 else 'token: "user:password" on 1.x)'
        return f"the write token is not accepted ({said}): set a valid token (THERMRIG_INFLUX_TOKEN or [influx] {what}"
    if a.status == 403:
        fix = (
            f"set THERMRIG_INFLUX_TOKEN to a token with write permission on it "
            f"(`influx auth create --org {s.org} --write-bucket BUCKET_ID`)"
            if p.v2
            else f'set THERMRIG_INFLUX_TOKEN to a user with WRITE on "{db}", or grant it '
            f'(as an admin: GRANT WRITE ON "{db}" TO "{s.token.split(":")[0]}")'
        )
        return f"the write token may not write to {words} ({said}): {fix}"
    if a.status == 404 and "organization" in a.message:
        return f"org {s.org} not found ({said}): set your org's name (THERMRIG_INFLUX_ORG or [influx] org)"
    if a.status == 404:
        fix = (
            f"create it (`influx bucket create --org {s.org} --name {s.bucket}`) or set the bucket "
            "(THERMRIG_INFLUX_BUCKET)"
            if p.v2
            else f'create it (as an admin: CREATE DATABASE "{db}") or set the bucket '
            '(THERMRIG_INFLUX_BUCKET, "database/retention-policy")'
        )
        return f"{words} not found ({said}): {fix}"
    if "retention policy not found" in a.message:
        return (
            f"{words}: no such retention policy ({said}): name one that exists "
            f'(THERMRIG_INFLUX_BUCKET={db}/autogen) or create it (CREATE RETENTION POLICY ... ON "{db}")'
        )
    return f"a write to {words} is refused ({said})"


def _check_bucket_and_mapping(p: Preflight, http: _Http, bucket_exists: bool) -> None:
    """2.x: the read token finds the bucket (so it may read it), and a DBRP mapping takes InfluxQL's
    database to it."""
    s = p.settings
    a = http("GET", "/api/v2/buckets", s.query_token, org=s.org, name=s.bucket)
    token = "read token" if s.read_token else "token (no read token set: it reads too)"
    if a.status == 401:
        p.add("read", False, f"the {token} is not accepted (HTTP 401 {a.message}): set THERMRIG_INFLUX_READ_TOKEN")
        return
    buckets = a.body.get("buckets", []) if a.status == 200 and isinstance(a.body, dict) else []
    if not buckets:
        if bucket_exists:
            p.add(
                "read",
                False,
                f"the {token} may not read bucket {s.bucket} (it does not see it): set "
                f"THERMRIG_INFLUX_READ_TOKEN to a token with read permission on it "
                f"(`influx auth create --org {s.org} --read-bucket BUCKET_ID`)",
            )
        return  # a bucket that does not exist: the write check said so
    bucket = buckets[0]
    p.add("read", True, f"the {token} may read bucket {s.bucket} (id {bucket['id']})")
    m = http("GET", "/api/v2/dbrps", s.query_token, orgID=bucket["orgID"], db=s.database)
    mappings = m.body.get("content", []) if m.status == 200 and isinstance(m.body, dict) else []
    ours = [x for x in mappings if x.get("bucketID") == bucket["id"]]
    default = next((x for x in mappings if x.get("default")), None)
    create = (
        f"`influx v1 dbrp create --org {s.org} --db {s.database} --rp autogen --bucket-id {bucket['id']} --default`"
    )
    if ours and (default is None or default in ours):
        kind = "made by 2.x for a bucket named like it" if ours[0].get("virtual") else "a DBRP mapping"
        p.add("mapping", True, f"InfluxQL database {s.database} reads bucket {s.bucket} ({kind})")
    elif default is not None:
        p.add(
            "mapping",
            False,
            f"InfluxQL database {s.database} reads another bucket (id {default.get('bucketID')}), not "
            f"{s.bucket} (id {bucket['id']}): set THERMRIG_INFLUX_DATABASE to the database mapped to "
            f"{s.bucket}, or map it (`influx v1 dbrp update` of that mapping, or {create} after deleting it)",
        )
    else:
        p.add(
            "mapping",
            False,
            f"no DBRP mapping takes InfluxQL database {s.database} to bucket {s.bucket}: thermrig reads "
            f"through InfluxQL and would find no data; map it: {create}",
        )


def _check_read(p: Preflight, http: _Http) -> None:
    """The InfluxQL read itself, with the read token (on 2.x after the mapping: its error then adds
    nothing to a failed check before it)."""
    s = p.settings
    if p.v2 and any(not c.ok for c in p.checks if c.name in ("read", "mapping")):
        return
    a = http("POST", "/query", s.query_token, db=s.database, q="SHOW MEASUREMENTS LIMIT 1")
    token = "read token" if s.read_token else "token (no read token set: it reads too)"
    if a.status == 200 and not a.message:
        if not p.v2:
            p.add("read", True, f"the {token} may read database {s.database}")
        return
    said = f"HTTP {a.status} {a.message}".strip()
    if a.status == 401:
        p.add("read", False, f"the {token} is not accepted ({said}): set THERMRIG_INFLUX_READ_TOKEN")
    elif a.status == 403 or "not authorized" in a.message:
        fix = (
            f'set THERMRIG_INFLUX_READ_TOKEN to a user with READ on "{s.database}", or grant it '
            f'(as an admin: GRANT READ ON "{s.database}" TO "{s.query_token.split(":")[0]}")'
            if not p.v2
            else f"set THERMRIG_INFLUX_READ_TOKEN to a token that may read bucket {s.bucket}"
        )
        p.add("read", False, f"the {token} may not read database {s.database} ({said}): {fix}")
    elif "database not found" in a.message:
        p.add(
            "read",
            False,
            f"InfluxQL finds no database {s.database} ({said}): set THERMRIG_INFLUX_DATABASE to the "
            "database the points are written to",
        )
    else:
        p.add("read", False, f"an InfluxQL read of database {s.database} fails ({said})")


def require_ready(settings: InfluxSettings) -> None:
    """At a campaign's start: PreflightFailed (one line per failure and its fix) unless every check holds."""
    check(settings).raise_unless_ok()
