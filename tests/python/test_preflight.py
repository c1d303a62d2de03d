"""The preflight against a lab's server (thermrig.db.server_preflight), on real servers: InfluxDB 2.x onboarded as
a lab admin would (write-only and read-only tokens, with or without the DBRP mapping) and InfluxDB 1.x with
authentication (a write-only and a read-only user, thermrig.lab.influx_users). Each wrong setting is named
in one line with its fix, and the checks write nothing: the bucket holds no measurement after them."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from campaign_helpers import CampaignFile, file_drive, thermrig
from influx2_server import Influx2, influx2_server

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.local_server import LocalInflux
from thermrig.db.query import influxql
from thermrig.db.server_preflight import Preflight, check
from thermrig.lab.influx_users import Credentials, provision


def failed(p: Preflight) -> dict[str, str]:
    """The failed checks' lines by check; every one a single line."""
    lines = {c.name: c.line for c in p.checks if not c.ok}
    assert all("\n" not in line for line in lines.values())
    return lines


def measurements(settings: InfluxSettings) -> list[object]:
    return [row for s in influxql(settings, "SHOW MEASUREMENTS") for row in s.values]


# --- 2.x ------------------------------------------------------------------------------------------------


@pytest.fixture
def lab2(tmp_path: Path) -> Iterator[Influx2]:
    """A lab's 2.x as the issue met it: bucket ssd-thermal, InfluxQL database thermrig, no mapping."""
    with influx2_server(tmp_path, bucket="ssd-thermal", database="thermrig", mapping=False) as server:
        yield server


def test_a_2x_server_set_up_right_passes_every_check(tmp_path: Path) -> None:
    with influx2_server(tmp_path, bucket="ssd-thermal", database="thermrig") as server:
        p = check(server.settings())
        assert p.v2 and p.ok, p.checks
        assert [c.name for c in p.checks] == ["server", "write", "read", "mapping"]
        assert measurements(server.settings()) == []  # the write check wrote nothing


def test_2x_missing_mapping_named_with_the_exact_command(lab2: Influx2) -> None:
    p = check(lab2.settings())
    assert failed(p) == {
        "mapping": "no DBRP mapping takes InfluxQL database thermrig to bucket ssd-thermal: thermrig reads "
        "through InfluxQL and would find no data; map it: `influx v1 dbrp create --org thermrig --db thermrig "
        f"--rp autogen --bucket-id {lab2.bucket_id} --default`"
    }
    # the command's mapping, made through the API as `influx v1 dbrp create` makes it, passes the check
    lab2.api().call(
        "POST",
        "/api/v2/dbrps",
        {"orgID": lab2.org_id, "bucketID": lab2.bucket_id, "database": "thermrig", "retention_policy": "autogen"},
    )
    assert check(lab2.settings()).ok


def test_2x_bucket_named_like_the_database_needs_no_mapping(tmp_path: Path) -> None:
    with influx2_server(tmp_path, bucket="thermrig", database="thermrig", mapping=False) as server:
        p = check(server.settings())
        assert p.ok, p.checks
        assert "made by 2.x for a bucket named like it" in p.checks[-1].line


def test_2x_bad_token(lab2: Influx2) -> None:
    p = check(lab2.settings(token="not-a-token", database="ssd-thermal"))
    assert failed(p) == {
        "write": "the write token is not accepted (HTTP 401 unauthorized access): set a valid token "
        "(THERMRIG_INFLUX_TOKEN or [influx] token)"
    }


def test_2x_read_only_token_given_for_writing(lab2: Influx2) -> None:
    p = check(lab2.settings(token=lab2.read_token, database="ssd-thermal"))
    assert failed(p) == {
        "write": "the write token may not write to bucket ssd-thermal of org thermrig (HTTP 403 insufficient "
        "permissions for write): set THERMRIG_INFLUX_TOKEN to a token with write permission on it "
        "(`influx auth create --org thermrig --write-bucket BUCKET_ID`)"
    }


def test_2x_write_only_token_given_for_reading(lab2: Influx2) -> None:
    p = check(lab2.settings(read_token=lab2.write_token, database="ssd-thermal"))
    assert list(failed(p)) == ["read"]
    assert failed(p)["read"].startswith("the read token may not read bucket ssd-thermal (it does not see it)")


def test_2x_missing_bucket_and_org(lab2: Influx2) -> None:
    p = check(lab2.settings(bucket="ssd-thermals", database="ssd-thermal"))
    assert failed(p) == {
        "write": 'bucket ssd-thermals of org thermrig not found (HTTP 404 bucket "ssd-thermals" not found): '
        "create it (`influx bucket create --org thermrig --name ssd-thermals`) or set the bucket "
        "(THERMRIG_INFLUX_BUCKET)"
    }
    p = check(lab2.settings(org="-"))  # no org set: the 1.x default
    assert list(failed(p)) == ["write"] and failed(p)["write"].startswith("org - not found")


def test_nothing_written_however_far_the_checks_got(lab2: Influx2) -> None:
    for settings in (
        lab2.settings(),
        lab2.settings(token=lab2.read_token),
        lab2.settings(token="bad"),
        lab2.settings(database="ssd-thermal"),
    ):
        check(settings)
    assert measurements(lab2.settings(database="ssd-thermal")) == []


# --- 1.x with authentication ----------------------------------------------------------------------------

ADMIN = Credentials("admin", "admin-pw")
AGENT = Credentials("agent", "agent-pw")
ANALYST = Credentials("analyst", "analyst-pw")


@pytest.fixture
def lab1(tmp_path: Path) -> Iterator[InfluxSettings]:
    """A lab's 1.x: authentication on, a write-only user for the agents and a read-only one for analysts."""
    server = LocalInflux(tmp_path / "influxdb")
    url = server.up(auth=True)
    try:
        provision(url, "thermrig", ADMIN, AGENT, ANALYST)
        yield InfluxSettings(url, "thermrig/autogen", "thermrig", token=AGENT.token, read_token=ANALYST.token)
    finally:
        server.down()


def test_1x_with_users_passes_and_names_each_wrong_setting(lab1: InfluxSettings) -> None:
    p = check(lab1)
    assert p.ok and not p.v2, p.checks
    assert failed(check(replace(lab1, token="agent:wrong"))) == {
        "write": "the write token is not accepted (HTTP 401 authorization failed): set a valid token "
        '(THERMRIG_INFLUX_TOKEN or [influx] token: "user:password" on 1.x)'
    }
    assert failed(check(replace(lab1, token=ANALYST.token))) == {
        "write": "the write token may not write to database thermrig, retention policy autogen (HTTP 403 "
        '"analyst" user is not authorized to write to database "thermrig"): set THERMRIG_INFLUX_TOKEN to a '
        'user with WRITE on "thermrig", or grant it (as an admin: GRANT WRITE ON "thermrig" TO "analyst")'
    }
    assert list(failed(check(replace(lab1, read_token=AGENT.token)))) == ["read"]
    assert failed(check(replace(lab1, bucket="thermrig/weekly")))["write"].startswith(
        "database thermrig, retention policy weekly: no such retention policy"
    )
    missing = failed(check(replace(lab1, bucket="ssd/autogen", database="ssd")))
    assert list(missing) == ["write"] and 'CREATE DATABASE "ssd"' in missing["write"]
    admin = replace(lab1, read_token=ADMIN.token)
    assert measurements(admin) == []  # nothing written by any of the checks


def test_a_server_that_does_not_answer() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # a port nobody listens on while it is held
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
        p = check(InfluxSettings(url, "thermrig/autogen", "thermrig"))
    assert failed(p) == {
        "server": f"InfluxDB does not answer at {url} (connection refused): start it (`thermrig db up` for the "
        "local one) or set its url (THERMRIG_INFLUX_* or the [influx] table of config.toml)"
    }


# --- the command and the campaign's start ---------------------------------------------------------------


def test_db_check_and_run_refuse_before_any_rig_time(
    lab2: Influx2, isolated_env: dict[str, str], tmp_path: Path
) -> None:
    """The issue's server (bucket ssd-thermal, database thermrig, no mapping): `thermrig db check` and
    `thermrig run` name the missing mapping and exit 1; the campaign starts no run."""
    env = {
        **isolated_env,
        "THERMRIG_INFLUX_URL": lab2.url,
        "THERMRIG_INFLUX_ORG": lab2.org,
        "THERMRIG_INFLUX_BUCKET": "ssd-thermal",
        "THERMRIG_INFLUX_DATABASE": "thermrig",
        "THERMRIG_INFLUX_TOKEN": lab2.write_token,
        "THERMRIG_INFLUX_READ_TOKEN": lab2.read_token,
        "COLUMNS": "300",
    }
    r = thermrig("db", "check", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"--bucket-id {lab2.bucket_id} --default`" in r.stdout
    assert "ok the token may write to bucket ssd-thermal of org thermrig" in r.stdout
    path = CampaignFile("refused", file_drive(tmp_path, "16m")).write(tmp_path)
    r = thermrig("run", str(path), "--no-prompt", "--out", str(tmp_path / "runs"), env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "is not ready for the campaign (nothing was written)" in r.stderr
    assert f"--bucket-id {lab2.bucket_id} --default`" in r.stderr
    assert not list((tmp_path / "runs").glob("*/manifest.json"))
    assert measurements(lab2.settings(database="ssd-thermal")) == []
