"""A user's local InfluxDB survives the upgrade of the embedded default: points an earlier release's
`thermrig db up` (influxd 1.8.10) recorded are there and queryable once the current default runs on the
same data folder. Both servers are real, built by `make setup`."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import urllib3

from thermrig.db.local_server import EMBEDDED_VERSION, LocalInflux
from thermrig.db.query import influxql
from thermrig.db.spool import Spool
from thermrig.db.writer import SpoolWriter
from thermrig.settings import find_tool

REPO = Path(__file__).resolve().parents[2]
EARLIER_VERSION = "1.8.10"  # the embedded default of thermrig's earlier releases

# One run's points as a campaign records them: telemetry each second, an event; nanosecond stamps
T0 = 1_764_000_000_000_000_000
TELEMETRY = [(T0 + i * 1_000_000_000, 40.0 + i * 0.5, 1800 - i * 100) for i in range(6)]
LINES = [
    f"rig_telemetry,run=upgrade-01,campaign=slots,slot=top drive_temp_c={temp},throughput_mbps={mbps}i {ns}"
    for ns, temp, mbps in TELEMETRY
] + [f'run_events,run=upgrade-01,campaign=slots kind="phase",detail="soak" {T0 + 4_000_000_000}']


def _server_version(server: LocalInflux) -> str:
    r = urllib3.PoolManager(timeout=5.0).request("GET", f"{server.url}/ping")
    return str(r.headers.get("X-Influxdb-Version", ""))


def _binary(tool: str) -> Path:
    binary = find_tool(tool)
    if not binary.exists():
        pytest.fail(f"{binary} is missing: run `make setup` (make test does)")
    return binary


def _module_version(binary: Path) -> str:
    """The influxdb module version `go install` built into a binary (its /ping says "unknown")."""
    info = subprocess.run(["go", "version", "-m", str(binary)], capture_output=True, text=True, check=True).stdout
    found = re.search(r"^\s*mod\s+github.com/influxdata/influxdb\s+v(\S+)", info, re.MULTILINE)
    return found.group(1) if found else ""


def _record(server: LocalInflux, spool_folder: Path) -> None:
    spool = Spool.for_run("upgrade-01", spool_folder)
    spool.append(LINES)
    writer = SpoolWriter(spool, server.settings())
    try:
        assert writer.drain(timeout=30.0), "the earlier server did not take the points"
    finally:
        writer.client.close()


def test_points_of_the_earlier_default_are_read_by_the_current_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "influxdb"  # what `thermrig db up` keeps under ~/.local/share/thermrig/influxdb
    earlier_binary, current_binary = _binary("influxd-1.8.10"), _binary("influxd")
    assert _module_version(earlier_binary) == EARLIER_VERSION

    monkeypatch.setenv("THERMRIG_INFLUXD", str(earlier_binary))
    earlier = LocalInflux(root)
    earlier.up()
    try:
        _record(earlier, tmp_path / "spool")
    finally:
        earlier.down()  # as `thermrig db down` stops it: its last points still in the write-ahead log

    monkeypatch.setenv("THERMRIG_INFLUXD", str(current_binary))
    current = LocalInflux(root)
    current.up()
    try:
        assert _server_version(current) == EMBEDDED_VERSION
        settings = current.settings()
        telemetry = influxql(
            settings, "SELECT drive_temp_c, throughput_mbps FROM rig_telemetry WHERE run = 'upgrade-01'"
        )
        assert [row for s in telemetry for row in s.values] == [[ns, temp, mbps] for ns, temp, mbps in TELEMETRY]
        events = influxql(settings, "SELECT kind, detail FROM run_events WHERE campaign = 'slots'")
        assert [row for s in events for row in s.values] == [[T0 + 4_000_000_000, "phase", "soak"]]
        # and the upgraded server records beside the old points
        late = T0 + 60_000_000_000
        spool = Spool.for_run("upgrade-02", tmp_path / "spool")
        spool.append([f"rig_telemetry,run=upgrade-02,campaign=slots,slot=top drive_temp_c=39.5 {late}"])
        writer = SpoolWriter(spool, settings)
        try:
            assert writer.drain(timeout=30.0)
        finally:
            writer.client.close()
        runs = influxql(settings, 'SHOW TAG VALUES FROM rig_telemetry WITH KEY = "run"', epoch="")
        assert [row[1] for s in runs for row in s.values] == ["upgrade-01", "upgrade-02"]
    finally:
        current.down()


def test_the_setup_builds_the_embedded_default() -> None:
    """scripts/setup_influxd.sh builds the version local_server.py says is the default."""
    setup = (REPO / "scripts" / "setup_influxd.sh").read_text()
    assert f"version={EMBEDDED_VERSION}\n" in setup
