"""Every stream into InfluxDB, durably: against a real influxd 1.8.10 on a free loopback port."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from campaign_helpers import THERMRIG, thermrig
from influx_servers import ON_BOTH
from waiting import wait_for

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.local_server import LocalInflux
from thermrig.db.query import influxql
from thermrig.db.recorder import Recorder
from thermrig.db.schema import RunTags, SchemaError, event_line, telemetry_lines
from thermrig.db.spool import Spool
from thermrig.db.writer import SpoolWriter, WriteProblem
from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

TAGS = RunTags(rig="rigA", run="r1", campaign="c1", slot="top", heatsink="none", profile="dual_gpu_load")


def count(settings: InfluxSettings, measurement: str, run: str, field: str = "uptime_ms") -> int:
    series = influxql(settings, f"SELECT count({field}) FROM {measurement} WHERE run='{run}'")
    return int(series[0].values[0][1]) if series else 0


@ON_BOTH
def test_schema_round_trip_with_tags_fields_and_exact_ns(
    influx: InfluxSettings, link: RigLink, sim: SimulatedRig, tmp_path: Path
) -> None:
    sim.advance(0.3)
    tel = link.next_telemetry()
    ns = 1_763_771_234_123_456_789  # sub-microsecond digits must survive
    spool = Spool.for_run("r1", tmp_path)
    spool.append([*telemetry_lines(tel, ns, TAGS), event_line("phase", ns + 1, TAGS, "equilibrium reached")])
    writer = SpoolWriter(spool, influx)
    assert writer.close() and spool.pending_bytes() == 0
    [s] = influxql(influx, "SELECT * FROM rig_telemetry WHERE run='r1'")
    row = dict(zip(s.columns, s.values[0], strict=True))
    assert row["time"] == ns
    assert row["chassis_air_c"] == tel.temps["tc3"].value and row["ambient_rh_pct"] == tel.humidity.value
    assert row["uptime_ms"] == tel.uptime_ms and row["chassis_air_status"] == 0
    assert (row["rig"], row["campaign"], row["slot"], row["profile"]) == ("rigA", "c1", "top", "dual_gpu_load")
    [a] = influxql(influx, "SELECT heater_pct, heat_enabled FROM rig_actuators WHERE run='r1'")
    assert a.values[0][1:] == [tel.heater_pct, tel.heat_enabled]
    [e] = influxql(influx, "SELECT detail FROM run_events WHERE kind='phase'")
    assert e.values == [[ns + 1, "equilibrium reached"]]
    tag_keys = {v[0] for v in influxql(influx, "SHOW TAG KEYS FROM rig_telemetry")[0].values}
    assert tag_keys == {"rig", "run", "campaign", "slot", "heatsink", "profile"}


def test_tag_values_are_bounded_identifiers() -> None:
    with pytest.raises(SchemaError, match="run="):
        RunTags(rig="rigA", run="my run with spaces")
    with pytest.raises(SchemaError, match="event kind"):
        event_line("coffee_break", 1, TAGS)


@ON_BOTH
def test_replaying_a_spool_is_idempotent(influx: InfluxSettings, tmp_path: Path) -> None:
    spool = Spool.for_run("r1", tmp_path)
    spool.append([event_line("phase", 1_700_000_000_000_000_000 + i, TAGS, f"p{i}") for i in range(500)])
    SpoolWriter(spool, influx, batch_lines=64).close()
    spool.mark_sent(0)  # as if the acknowledgements had been lost
    SpoolWriter(spool, influx).close()
    assert count(influx, "run_events", "r1", "detail") == 500


def test_a_torn_last_line_from_a_crash_is_dropped(tmp_path: Path) -> None:
    spool = Spool.for_run("r1", tmp_path)
    spool.append(["m f=1 1", "m f=2 2"])
    with spool.path.open("ab") as fh:
        fh.write(b"m f=3")  # the process died mid-write
    reopened = Spool.for_run("r1", tmp_path)
    assert reopened.read_batch(0, 10) == (["m f=1 1", "m f=2 2"], 16)


@ON_BOTH
def test_outage_mid_stream_every_point_arrives_exactly_once(
    influx_server: LocalInflux, influx: InfluxSettings, link: RigLink, sim: SimulatedRig, tmp_path: Path
) -> None:
    problems: list[WriteProblem] = []
    spool = Spool.for_run("outage", tmp_path)
    tags = RunTags(rig="rigA", run="outage")
    writer = SpoolWriter(spool, influx, on_error=problems.append)
    recorder = Recorder(link, spool, tags)
    link.set(air=3500, heat=1, fan0=400)
    writer.start(interval=0.1)
    recorder.start()

    def run(seconds: int) -> None:
        for _ in range(seconds):
            link.ping()
            sim.advance(1.0)

    run(5)
    port = int(influx.url.rsplit(":", 1)[1])
    influx_server.down(kill=True)  # InfluxDB crashes mid-stream
    run(10)  # recording goes on into the spool
    assert wait_for(lambda: bool(problems), timeout=120)  # the client retries briefly before the writer hears of it
    assert problems and problems[-1].kept and "unavailable" in problems[-1].message
    assert spool.pending_bytes() > 0
    influx_server.up(http_port=port)
    run(5)
    assert wait_for(lambda: recorder.stats.frames >= 195, timeout=60)  # the last advance's frames, on the pty
    recorder.stop()
    assert writer.close(flush_timeout=30)
    frames = recorder.stats.frames
    assert frames >= 195
    for measurement in ("rig_telemetry", "rig_actuators", "rig_faults"):
        field = {"rig_telemetry": "uptime_ms", "rig_actuators": "heater_pct", "rig_faults": "faults"}[measurement]
        assert count(influx, measurement, "outage", field) == frames
    spooled = [line for line in spool.path.read_text().splitlines() if line.startswith("rig_telemetry")]
    stored = influxql(influx, "SELECT uptime_ms, chassis_air_c FROM rig_telemetry WHERE run='outage'")[0].values
    uptimes = [row[1] for row in stored]
    assert len(set(uptimes)) == len(uptimes) == len(spooled)  # no duplicates, none missing
    # Every 100 ms of rig time, from the first frame to the last, once.
    assert sorted(uptimes) == list(range(min(uptimes), min(uptimes) + 100 * frames, 100))


@ON_BOTH
def test_agent_crash_then_drain_loses_nothing(
    influx_server: LocalInflux, influx: InfluxSettings, influx_env: dict[str, str], tmp_path: Path
) -> None:
    with SimulatedRig(SimConfig(pacing=Pacing.accelerated(5))) as sim:
        agent = subprocess.Popen(
            [*THERMRIG, "rig", "record", "--port", sim.port, "--run", "crash1"],
            env=influx_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        spool = Spool(tmp_path / "data" / "thermrig" / "spool" / "crash1.lp")
        assert wait_for(lambda: spool.size() >= 20_000, timeout=180), "the agent spooled under 20 kB"
        port = int(influx.url.rsplit(":", 1)[1])
        influx_server.down()  # an outage first, so the spool holds unsent points...
        unsent = spool.pending_bytes()
        # it goes on recording, unsent
        assert wait_for(lambda: spool.pending_bytes() >= unsent + 20_000, timeout=180), "nothing spooled unsent"
        agent.send_signal(signal.SIGKILL)  # ...then the agent dies without a chance to flush
        agent.wait()
    assert spool.pending_bytes() > 0
    lines = spool.path.read_text().splitlines()
    influx_server.up(http_port=port)
    r = thermrig("db", "drain", env=influx_env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert spool.pending_bytes() == 0
    spooled_frames = sum(line.startswith("rig_telemetry") for line in lines)
    assert count(influx, "rig_telemetry", "crash1") == spooled_frames > 50
    r = thermrig("db", "drain", env=influx_env)
    assert "spool empty" in r.stdout


@ON_BOTH
def test_the_query_cookbook_runs_on_a_recorded_run(
    influx: InfluxSettings, link: RigLink, sim: SimulatedRig, tmp_path: Path
) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "influx-schema.md").read_text()
    blocks = [b.split("```", 1)[0] for b in doc.split("```sql\n")[1:]]
    run = "run-20261122T091500Z"
    tags = RunTags(rig="rigA", run=run, campaign="slots-vs-airflow", slot="top", heatsink="none", profile="p1")
    spool = Spool.for_run(run, tmp_path)
    recorder = Recorder(link, spool, tags)
    link.set(air=3000, heat=1)
    recorder.start()
    for _ in range(12):
        link.ping()
        sim.advance(1.0)
    sim.faults.inject("tc-open", channel=2)
    sim.advance(0.5)
    assert wait_for(lambda: bool(link.latest and link.latest.faults), timeout=60)  # the faulted frames, on the pty
    recorder.stop()
    assert SpoolWriter(spool, influx).close()
    ran = 0
    for block in blocks:
        if "fio_" in block:
            continue  # written by the campaign runner
        if "sensor_rank" in block or "campaign_" in block:
            continue  # written by a campaign's analysis: run on a recorded campaign in test_analysis_campaign.py
        series = influxql(influx, block)
        assert series, f"no rows for:\n{block}"
        ran += 1
    assert ran >= 5


def test_a_throttled_write_waits_for_retry_after_then_lands(influx: InfluxSettings, tmp_path: Path) -> None:
    """InfluxDB 2.x/Cloud answer 429 with Retry-After when throttling; 1.8 never does. A loopback proxy
    in front of the real influxd injects one such answer, then passes everything through."""
    import http.server
    import threading
    import urllib.request

    seen: list[float] = []

    class Throttle(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(time.monotonic())
            if len(seen) == 1:
                self.send_response(429)
                self.send_header("Retry-After", "1")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            req = urllib.request.Request(influx.url + self.path, data=body, method="POST", headers=dict(self.headers))
            with urllib.request.urlopen(req) as upstream:
                self.send_response(upstream.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Throttle)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        via_proxy = InfluxSettings(
            url=f"http://127.0.0.1:{proxy.server_port}", bucket=influx.bucket, database=influx.database
        )
        spool = Spool.for_run("throttled", tmp_path)
        spool.append([event_line("phase", 1_700_000_000_000_000_000, RunTags(rig="r", run="throttled"), "x")])
        assert SpoolWriter(spool, via_proxy).close(flush_timeout=20)
    finally:
        proxy.shutdown()
    assert len(seen) == 2 and seen[1] - seen[0] >= 1.0  # waited as the server asked, then wrote
    assert count(influx, "run_events", "throttled", "detail") == 1
