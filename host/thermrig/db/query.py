"""InfluxQL over the v1-compatible /query endpoint, which InfluxDB 1.8, 2.x (with a DBRP mapping) and
3.x all serve; results as rows for a table, CSV or JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass

import urllib3

from thermrig.db.influx_settings import InfluxSettings
from thermrig.errors import ThermrigError


class QueryError(ThermrigError, RuntimeError):
    pass


@dataclass(frozen=True)
class Series:
    name: str
    tags: dict[str, str]
    columns: list[str]
    values: list[list[object]]


def influxql(settings: InfluxSettings, q: str, database: str | None = None, epoch: str = "ns") -> list[Series]:
    """Run one or more InfluxQL statements; return every series of every result."""
    http = urllib3.PoolManager(timeout=urllib3.Timeout(connect=5.0, read=60.0), retries=False)
    fields = {"db": database or settings.database, "q": q}
    if epoch:
        fields["epoch"] = epoch
    try:
        r = http.request(
            "POST",
            f"{settings.url}/query",
            fields=fields,
            headers={"Authorization": f"Token {settings.query_token}"},
        )
    except urllib3.exceptions.HTTPError as exc:
        raise QueryError(f"cannot reach InfluxDB at {settings.url}: {exc}") from exc
    try:
        body = json.loads(r.data)
    except ValueError as exc:
        raise QueryError(f"HTTP {r.status} from {settings.url}/query: {r.data[:200]!r}") from exc
    said = str(body.get("error") or body.get("message") or "") if isinstance(body, dict) else ""
    if r.status in (401, 403):  # 1.x says "error", 2.x "message": either way, which token to fix
        raise QueryError(
            f"InfluxDB at {settings.url} refuses the read (HTTP {r.status} {said}): the token queries use "
            f"(THERMRIG_INFLUX_READ_TOKEN, else THERMRIG_INFLUX_TOKEN) may not read database {fields['db']}"
        )
    if r.status != 200 or "error" in body:
        raise QueryError(said or f"HTTP {r.status}")
    out = []
    for result in body.get("results", []):
        if "error" in result:
            raise QueryError(_explained(str(result["error"]), fields["db"]))
        for s in result.get("series", []):
            out.append(Series(s["name"], s.get("tags", {}), s["columns"], s.get("values", [])))
    return out


def _explained(error: str, database: str) -> str:
    """The server's words, and for a database InfluxQL does not find, the two causes 2.x gives no other
    sign of: a token that may not read the bucket (2.x answers a write-only token so) or no DBRP mapping."""
    if not error.startswith("database not found"):
        return error
    return (
        f"{error} (on 2.x: the token queries use, THERMRIG_INFLUX_READ_TOKEN else THERMRIG_INFLUX_TOKEN, may not "
        f"read the bucket, or no DBRP mapping takes database {database} to it; `thermrig db check` says which)"
    )
