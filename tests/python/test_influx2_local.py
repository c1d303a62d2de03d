"""A user's local InfluxDB 2.x (`thermrig db up --server 2`): onboarded with an org, a bucket, the
operator token kept with mode 0600 and never printed, a write-only and a read-only token printed for the
agents and the analysts; a campaign records into it and `thermrig throttle` reads it back; `db down` stops
it and `db up` starts it again on its port, with its data and tokens."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from campaign_helpers import CampaignFile, file_drive, manifests, thermrig

from thermrig.db.local_server2 import LocalInflux2
from thermrig.db.query import influxql
from thermrig.db.server_preflight import check


@pytest.fixture
def user_env(isolated_env: dict[str, str], tmp_path: Path) -> Iterator[dict[str, str]]:
    """The user's environment (its own data dir, no server configured); the local 2.x stopped at the end."""
    yield {**isolated_env, "COLUMNS": "200"}
    LocalInflux2(tmp_path / "data" / "thermrig" / "influxdb2").down()


@pytest.mark.timeout(900)
def test_db_up_server_2_records_a_campaign_that_throttle_reads_back(user_env: dict[str, str], tmp_path: Path) -> None:
    up = thermrig("db", "up", "--server", "2", env=user_env)
    assert up.returncode == 0, up.stdout + up.stderr
    root = tmp_path / "data" / "thermrig" / "influxdb2"
    tokens = json.loads((root / "tokens.json").read_text())
    assert stat.S_IMODE(os.stat(root / "tokens.json").st_mode) == 0o600
    assert tokens["operator_token"] not in up.stdout + up.stderr
    local = LocalInflux2(root)
    url = local.url
    for line in (
        f"THERMRIG_INFLUX_URL={url}",
        "THERMRIG_INFLUX_ORG=thermrig",
        "THERMRIG_INFLUX_BUCKET=thermrig",
        "THERMRIG_INFLUX_DATABASE=thermrig",
        f"THERMRIG_INFLUX_TOKEN={tokens['write_token']}",
        f"THERMRIG_INFLUX_READ_TOKEN={tokens['read_token']}",
        f'token = "{tokens["write_token"]}"',
    ):
        assert f"  {line}\n" in up.stdout, up.stdout
    # the agents' token only writes, the analysts' only reads
    settings = local.settings()
    assert check(settings).ok
    assert not check(replace(settings, token=tokens["read_token"])).ok
    assert not check(replace(settings, read_token=tokens["write_token"])).ok

    status = thermrig("db", "status", env=user_env)
    assert f"local InfluxDB 2.x running at {url}" in status.stdout, status.stdout

    path = CampaignFile("local2", file_drive(tmp_path, "32m")).write(tmp_path)
    out = tmp_path / "runs"
    run = thermrig("run", str(path), "--no-prompt", "--out", str(out), env=user_env, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "every summary complete" in run.stdout
    [(run_id, manifest)] = manifests(out).items()
    assert manifest["status"] == "ok" and manifest["analysed"] is True
    table = thermrig("throttle", "local2", "--runs-from", str(out), env=user_env)
    assert table.returncode == 0, table.stdout + table.stderr  # exit 1: "no fio data" (nothing read back)
    [row] = [line for line in table.stdout.splitlines() if "single_gpu_load" in line]
    assert "top" in row and " sw " in row and "(incomplete)" not in row

    down = thermrig("db", "down", env=user_env)
    assert "InfluxDB 2.x stopped" in down.stdout
    again = thermrig("db", "up", env=user_env)  # no flag: the server chosen before, same port, same data
    assert again.returncode == 0, again.stdout + again.stderr
    assert local.url == url
    assert json.loads((root / "tokens.json").read_text()) == tokens
    frames = influxql(local.settings(), f"SELECT count(uptime_ms) FROM rig_telemetry WHERE run = '{run_id}'")
    assert frames and frames[0].values[0][1] > 0
