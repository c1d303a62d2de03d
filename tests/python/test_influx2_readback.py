"""A campaign whose summaries cannot be read back after its runs (on a lab's 2.x, the DBRP mapping that
InfluxQL reads need is deleted after the preflight passed): it names the query's own error, not "points
not yet in InfluxDB" (they are all in), exits 1, and `thermrig analyze` completes the summaries once the
mapping is back."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from campaign_helpers import CampaignFile, file_drive, manifests, start_run, thermrig
from influx2_server import influx2_server
from test_campaign_outage import Output

from thermrig.db.query import influxql


@pytest.mark.timeout(900)
def test_summaries_not_read_back_say_why_and_are_completed_later(isolated_env: dict[str, str], tmp_path: Path) -> None:
    with influx2_server(tmp_path, bucket="ssd-thermal", database="thermrig") as server:
        env = {
            **isolated_env,
            "THERMRIG_INFLUX_URL": server.url,
            "THERMRIG_INFLUX_ORG": server.org,
            "THERMRIG_INFLUX_BUCKET": "ssd-thermal",
            "THERMRIG_INFLUX_DATABASE": "thermrig",
            "THERMRIG_INFLUX_TOKEN": server.write_token,
            "THERMRIG_INFLUX_READ_TOKEN": server.read_token,
            "COLUMNS": "300",
        }
        path = CampaignFile("unread", file_drive(tmp_path, "32m")).write(tmp_path)
        out = tmp_path / "runs"
        proc = start_run(path, out, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        output = Output(proc)
        output.wait_for("campaign unread:", "data to")  # the preflight passed; no run has ended yet
        [mapping] = server.api().call("GET", "/api/v2/dbrps", orgID=server.org_id, db="thermrig")["content"]
        server.api().call("DELETE", f"/api/v2/dbrps/{mapping['id']}", orgID=server.org_id)
        said = output.rest()
        assert proc.wait(timeout=60) == 1, said
        assert "its summaries not read back" in said, said
        assert "database not found: thermrig" in said, said  # the query's own error
        assert "once its points are all in InfluxDB" not in said
        assert "`thermrig analyze unread` completes them" in said
        [(run_id, manifest)] = manifests(out).items()
        assert manifest["status"] == "ok" and manifest["analysed"] is False

        still = thermrig("db", "drain", env=env)  # the server not fixed yet: said again, nothing completed
        assert "still cannot be read back from InfluxDB: database not found: thermrig" in still.stdout, still.stdout

        server.api().call("POST", "/api/v2/dbrps", {**mapping, "orgID": server.org_id})
        r = thermrig("analyze", "unread", env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"wrote the full summaries of {run_id}" in r.stderr
        assert manifests(out)[run_id]["analysed"] is True
        summary = influxql(server.settings(), f"SELECT analysed FROM run_summary WHERE run = '{run_id}'")
        assert [row[1] for s in summary for row in s.values] == [True]
