"""`thermrig lab influx-users`: the lab InfluxDB's users (docs/lab.md)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from thermrig.cli.user_errors import user_errors


@user_errors
def influx_users(
    url: Annotated[str, typer.Option("--url", help="The central InfluxDB 1.8 (auth-enabled = true).")],
    database: Annotated[str, typer.Option("--database", help="The campaigns' database.")] = "thermrig",
    admin: Annotated[str, typer.Option("--admin", help="The admin user (created if the server has none).")] = "admin",
    agent: Annotated[str, typer.Option("--agent", help="The rigs' agents' user: write only.")] = "agent",
    grafana: Annotated[str, typer.Option("--grafana", help="Grafana's user: read only.")] = "grafana",
) -> None:
    """Make the lab's InfluxDB 1.8 users: an admin, a write-only agent user, a read-only Grafana user.

    Passwords come from THERMRIG_LAB_ADMIN_PASSWORD, THERMRIG_LAB_AGENT_PASSWORD and
    THERMRIG_LAB_GRAFANA_PASSWORD, or are asked. Run it again to change a password. Agents then use the
    token agent:PASSWORD (the influx table of config.toml); docs/lab.md has 2.x and 3.x tokens."""
    from thermrig.lab.influx_users import Credentials, provision

    def secret(role: str) -> str:
        return os.environ.get(f"THERMRIG_LAB_{role.upper()}_PASSWORD") or typer.prompt(
            f"{role} password", hide_input=True
        )

    creds = {role: Credentials(user, secret(role)) for role, user in (("admin", admin), ("agent", agent),
                                                                       ("grafana", grafana))}  # fmt: skip
    provision(url, database, creds["admin"], creds["agent"], creds["grafana"])
    typer.echo(f"{url} database {database}: {agent} writes, {grafana} reads, {admin} administers")
