"""One central InfluxDB 1.8 with authentication for a lab: an admin, a write-only user for the rigs'
agents and a read-only one for Grafana, on the campaign database (docs/lab.md). Idempotent: users that
exist get their password set again and their grants made exact. InfluxDB 2.x and 3.x use tokens instead
(docs/lab.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

import urllib3

from thermrig.lab.errors import LabError


@dataclass(frozen=True)
class Credentials:
    user: str
    password: str = field(repr=False)

    @property
    def token(self) -> str:
        """What thermrig's InfluxDB settings take as token on 1.8: "user:password"."""
        return f"{self.user}:{self.password}"


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


class InfluxAdmin:
    """InfluxQL administration through the HTTP API of one server."""

    def __init__(self, url: str, admin: Credentials, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.admin = admin
        self.http = urllib3.PoolManager(timeout=timeout, retries=False)

    def query(self, q: str, auth: bool = True) -> list[dict]:
        headers = urllib3.make_headers(basic_auth=f"{self.admin.user}:{self.admin.password}") if auth else {}
        try:
            r = self.http.request("POST", f"{self.url}/query", fields={"q": q}, headers=headers)
        except urllib3.exceptions.HTTPError as exc:
            raise LabError(f"InfluxDB at {self.url} does not answer: {exc}") from exc
        body = r.json() if r.data else {}
        error = body.get("error") or next((s["error"] for s in body.get("results", []) if "error" in s), None)
        if r.status != 200 or error:
            verb = q.split()[0] + " " + q.split()[1] if len(q.split()) > 1 else q
            raise LabError(f"InfluxDB at {self.url}: {verb}: {error or f'HTTP {r.status}'}")
        return list(body.get("results", []))

    def users(self) -> dict[str, bool]:
        """user -> admin, as the server lists them."""
        results = self.query("SHOW USERS")
        series = results[0].get("series", []) if results else []
        return {row[0]: bool(row[1]) for s in series for row in s.get("values", [])}

    def ensure_admin(self) -> None:
        """The first admin, created without credentials while the server has no user; else the admin's
        credentials checked (a wrong password is one line)."""
        try:
            self.query("SHOW USERS", auth=False)
        except LabError as exc:
            if "create admin user first" not in str(exc):
                self.users()
                return
        else:  # auth is off on this server, or it has users: the admin must be one of them
            if self.users():
                return
        q = f"CREATE USER {_ident(self.admin.user)} WITH PASSWORD {_literal(self.admin.password)} WITH ALL PRIVILEGES"
        self.query(q, auth=False)

    def ensure_user(self, who: Credentials, database: str, privilege: str) -> None:
        """The user with this password and exactly this privilege (READ or WRITE) on the database."""
        user = _ident(who.user)
        if who.user in self.users():
            self.query(f"SET PASSWORD FOR {user} = {_literal(who.password)}")
            self.query(f"REVOKE ALL ON {_ident(database)} FROM {user}")
        else:
            self.query(f"CREATE USER {user} WITH PASSWORD {_literal(who.password)}")
        self.query(f"GRANT {privilege} ON {_ident(database)} TO {user}")


def provision(url: str, database: str, admin: Credentials, agent: Credentials, grafana: Credentials) -> None:
    """The admin, the database, the agents' write-only user and Grafana's read-only one."""
    influx = InfluxAdmin(url, admin)
    influx.ensure_admin()
    influx.query(f"CREATE DATABASE {_ident(database)}")
    influx.ensure_user(agent, database, "WRITE")
    influx.ensure_user(grafana, database, "READ")
