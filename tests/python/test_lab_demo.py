"""`thermrig lab demo`: a lab on this machine (a real labgrid coordinator and exporters, ser2net, simulated
rigs, their test PCs' fio servers and sshd) runs a short campaign over its places while its status is
shown, prints what to try against it, and leaves no process behind, at its end or after Ctrl-C."""

from __future__ import annotations

import dataclasses
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from interruptible import with_default_sigint
from waiting import wait_for

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.local_server import LocalInflux
from thermrig.db.local_server2 import LocalInflux2
from thermrig.db.query import QueryError, influxql

pytestmark = pytest.mark.timeout(900)
CMD = [sys.executable, "-m", "thermrig.cli", "lab", "demo"]


def left_behind(folder: Path) -> list[str]:
    """Processes whose command line names the lab's folder (exporters, sshd, fio servers, ser2net...)."""
    out = subprocess.run(["pgrep", "-af", str(folder)], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


@pytest.mark.parametrize("lab_server", ["1", "2"], ids=["influxdb-1.x", "influxdb-2.x"])
def test_the_lab_demo_runs_a_campaign_over_its_places_and_stops_everything(
    isolated_env: dict[str, str], influx_env: dict[str, str], tmp_path: Path, lab_server: str
) -> None:
    """Its results in the lab's own InfluxDB (authentication on: 1.x with users, or 2.x with tokens), read
    with the analysts' read-only credentials it prints: the server started again on the kept folder after
    the demo stopped it."""
    folder = tmp_path / "lab"
    options = ["--places", "3", "--runs", "6", "--runtime", "2", "--influx-server", lab_server]
    res = subprocess.run(
        [*CMD, *options, "--folder", str(folder)],
        capture_output=True,
        text=True,
        env={**influx_env, "COLUMNS": "200"},
        timeout=840,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    address = re.search(r"coordinator at (127\.0\.0\.1:\d+)", res.stdout)
    assert address, res.stdout
    assert f"labgrid-client -x {address.group(1)} places" in res.stdout  # what to try, printed
    assert "campaign lab-demo ended (ok)" in res.stdout
    assert left_behind(folder) == []
    said = re.search(r"((?:THERMRIG_INFLUX_\w+=\S+ )+)thermrig throttle lab-demo", res.stdout)
    assert said, res.stdout
    printed = dict(pair.split("=", 1) for pair in said.group(1).split())
    server = LocalInflux2(folder / "influxdb") if lab_server == "2" else LocalInflux(folder / "influxdb")
    url = server.up(auth=True)
    try:
        reader = printed["THERMRIG_INFLUX_TOKEN"]  # the analysts' read-only credentials, nothing else
        if lab_server == "2":
            assert reader == server.onboarding().read_token  # type: ignore[attr-defined]
        else:
            assert reader.startswith("analyst:")
        assert printed["THERMRIG_INFLUX_URL"] == url  # the server came back where the printed line points
        bucket = printed.get("THERMRIG_INFLUX_BUCKET", "thermrig/autogen")
        analyst = InfluxSettings(url, bucket, "thermrig", printed.get("THERMRIG_INFLUX_ORG", "-"), token=reader)
        q = 'SELECT count(*) FROM run_summary WHERE "campaign" = \'lab-demo\' GROUP BY "place"'
        rows = influxql(analyst, q)
        with pytest.raises(QueryError):  # without credentials
            influxql(dataclasses.replace(analyst, token=""), q)
        table = subprocess.run(
            [sys.executable, "-m", "thermrig.cli", "throttle", "lab-demo"],
            env={**isolated_env, **printed},  # as a shell with nothing else set runs it
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert table.returncode == 0, table.stdout + table.stderr  # the printed line reads the runs back
    finally:
        server.down()
    places = {r.tags.get("place") for r in rows}
    assert len(places) >= 2, rows  # the runs were shared out over the lab


def test_ctrl_c_stops_the_lab_demo_and_every_process_it_started(influx_env: dict[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "lab"
    proc = subprocess.Popen(
        with_default_sigint([*CMD, "--places", "2", "--runs", "20", "--folder", str(folder)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**influx_env, "COLUMNS": "200"},
    )
    seen: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:  # until the lab is up and the commands to try are printed
        seen.append(line)
        if "labgrid-client -x" in line:
            break
    assert any("labgrid-client -x" in line for line in seen), "".join(seen)
    assert wait_for(lambda: bool(left_behind(folder)), 30)  # the lab's processes are there
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=180)
    assert proc.returncode == 130, "".join(seen) + rest
    assert "stopping the campaign, then the lab" in rest
    assert wait_for(lambda: left_behind(folder) == [], 30), left_behind(folder)
