"""One central InfluxDB 1.8 with authentication on (a local influxd started here): the admin, the agents'
write-only user and Grafana's read-only one, made by `thermrig lab influx-users`; points written through
thermrig's own spool and writer carry the rig, place, test PC and firmware."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import urllib3
from waiting import wait_for

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.local_server import CONFIG, free_port, influxd_binary
from thermrig.db.query import QueryError, influxql
from thermrig.db.spool import Spool
from thermrig.db.writer import SpoolWriter, WriteProblem
from thermrig.lab.acquired import HeldPlace
from thermrig.lab.client import Endpoint
from thermrig.lab.influx_users import Credentials, InfluxAdmin, provision
from thermrig.lab_world.world import Proc

pytestmark = pytest.mark.timeout(180)

ADMIN = Credentials("labadmin", "adm'n pass")
AGENT = Credentials("agent", "w-only")
GRAFANA = Credentials("grafana", "r-only")


@pytest.fixture
def secured_influx(tmp_path: Path) -> Iterator[str]:
    """influxd 1.8 on loopback with auth-enabled = true and no user yet."""
    binary = influxd_binary()
    if not binary.exists():
        pytest.fail(f"{binary} not found: run `make setup`")
    port = free_port()
    text = CONFIG.format(root=tmp_path / "influx", http_port=port, rpc_port=free_port(), auth="true")
    assert "auth-enabled = true" in text
    (tmp_path / "influxd.toml").write_text(text)
    proc = Proc.start([str(binary), "run", "-config", str(tmp_path / "influxd.toml")], tmp_path)
    url = f"http://127.0.0.1:{port}"
    http = urllib3.PoolManager(timeout=1.0, retries=False)

    def ready() -> bool:
        try:
            return http.request("GET", f"{url}/ping").status == 204
        except urllib3.exceptions.HTTPError:
            return False

    try:
        assert wait_for(ready, 60), proc.output()
        yield url
    finally:
        proc.stop()


def settings(url: str, who: Credentials) -> InfluxSettings:
    return InfluxSettings(url=url, bucket="lab/autogen", database="lab", token=who.token, source="test")


def place() -> HeldPlace:
    return HeldPlace(
        "127.0.0.1:1", "rig-a", "vm/tester", {"firmware": "0_3_1"}, Endpoint("127.0.0.1", 4000),
        Endpoint("testpc-a", 8765), Endpoint("testpc-a", 22, "tester"), rig="bench-a",
    )  # fmt: skip


def write(url: str, who: Credentials, tmp_path: Path, line: str) -> list[WriteProblem]:
    problems: list[WriteProblem] = []
    spool = Spool.for_run(f"r{len(list(tmp_path.glob('spool/*.lp')))}", tmp_path / "spool")
    spool.append([line])
    writer = SpoolWriter(spool, settings(url, who), on_error=problems.append)
    try:
        writer.drain(timeout=5)
    finally:
        writer.close(flush_timeout=0)
    return problems


def test_agents_write_only_grafana_reads_only_anonymous_nothing(secured_influx: str, tmp_path: Path) -> None:
    url = secured_influx
    env = dict(os.environ)
    for role, who in (("ADMIN", ADMIN), ("AGENT", AGENT), ("GRAFANA", GRAFANA)):
        env[f"THERMRIG_LAB_{role}_PASSWORD"] = who.password
    cmd = [sys.executable, "-m", "thermrig.cli", "lab", "influx-users", "--url", url, "--database", "lab",
           "--admin", ADMIN.user, "--agent", AGENT.user, "--grafana", GRAFANA.user]  # fmt: skip
    for _ in range(2):  # idempotent
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert ADMIN.password not in done.stdout + done.stderr
    assert InfluxAdmin(url, ADMIN).users() == {ADMIN.user: True, AGENT.user: False, GRAFANA.user: False}

    tags = ",".join(f"{k}={v}" for k, v in place().point_tags("0.3.1").items())
    assert tags == "rig=bench-a,place=rig-a,test_pc=testpc-a,firmware=0.3.1"
    assert write(url, AGENT, tmp_path, f"rig_telemetry,{tags} chassis_air_c=31.5 1700000000000000000") == []

    rows = influxql(settings(url, GRAFANA), "SELECT * FROM rig_telemetry")
    assert rows[0].values[0][rows[0].columns.index("chassis_air_c")] == 31.5
    for key, value in (("rig", "bench-a"), ("place", "rig-a"), ("test_pc", "testpc-a"), ("firmware", "0.3.1")):
        assert rows[0].values[0][rows[0].columns.index(key)] == value

    with pytest.raises(QueryError, match="not authorized"):
        influxql(settings(url, AGENT), "SELECT * FROM rig_telemetry")  # the agent cannot read
    refused = write(url, GRAFANA, tmp_path, "rig_telemetry,place=rig-b chassis_air_c=1 1700000001000000000")
    assert refused and refused[0].kept  # Grafana cannot write: the point stays spooled
    fields = {"db": "lab", "q": "SHOW MEASUREMENTS"}
    anonymous = urllib3.PoolManager().request("POST", f"{url}/query", fields=fields)
    assert anonymous.status == 401
    assert len(influxql(settings(url, GRAFANA), "SELECT * FROM rig_telemetry")[0].values) == 1


def test_a_wrong_admin_password_is_one_line(secured_influx: str) -> None:
    provision(secured_influx, "lab", ADMIN, AGENT, GRAFANA)
    with pytest.raises(Exception) as err:
        provision(secured_influx, "lab", Credentials(ADMIN.user, "wrong"), AGENT, GRAFANA)
    assert "authorization failed" in str(err.value) and "\n" not in str(err.value)
