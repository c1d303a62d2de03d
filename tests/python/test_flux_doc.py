"""docs/influx.md's Flux queries, read from the doc, run on InfluxDB 2.x over the campaign recorded for real
(recorded_campaign.py, copied into a private 2.x) with the analysts' read-only token: each gives what
InfluxQL reads from the same points (the run's per-second temperature and throughput, the summaries'
onsets) and what the campaign's own run folders say (its runs, their factors, how each ended)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from influxdb_client import InfluxDBClient
from recorded_campaign import RUNTIME_S, Recorded

from thermrig.db.query import influxql

pytestmark = [pytest.mark.timeout(1500), pytest.mark.parametrize("recorded_campaign", ["2.x"], indirect=True)]
DOC = Path(__file__).resolve().parents[2] / "docs" / "influx.md"
DOC_BUCKET, DOC_CAMPAIGN, DOC_RUN = '"ssd-thermal"', '"slots-vs-airflow"', '"slots-vs-airflow-20261122T091500-001"'


def doc_query(rec: Recorded, marker: str, run: str = "") -> str:
    """The doc's one Flux block holding marker, with this server's bucket, this campaign and run in it."""
    text = DOC.read_text()
    [block] = [b.split("```", 1)[0] for b in text.split("```flux\n")[1:] if marker in b]
    block = block.replace(DOC_RUN, f'"{run}"') if run else block
    return block.replace(DOC_BUCKET, f'"{rec.settings.bucket}"').replace(DOC_CAMPAIGN, f'"{rec.name}"')


def flux(rec: Recorded, query: str) -> list[dict[str, object]]:
    """Every row of every table the query returns."""
    s = rec.settings
    with InfluxDBClient(url=s.url, token=s.query_token, org=s.org, timeout=60_000) as client:
        tables = client.query_api().query(query)
    return [dict(record.values) for table in tables for record in table.records]


def manifests(rec: Recorded) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in rec.folder.glob("*/manifest.json")}


def per_second(rec: Recorded, run: str, measurement: str, field: str) -> dict[int, float]:
    """InfluxQL's mean per second of the run's field, by the window's end (ns), as Flux labels windows."""
    q = f"SELECT mean({field}) FROM {measurement} WHERE run = '{run}' GROUP BY time(1s) fill(none)"
    return {int(row[0]) + 1_000_000_000: float(row[1]) for s in influxql(rec.settings, q) for row in s.values}


def test_one_runs_temperature_and_throughput_side_by_side(recorded_campaign: Recorded) -> None:
    rec = recorded_campaign
    run = sorted(manifests(rec))[0]
    rows = flux(rec, doc_query(rec, "aggregateWindow", run))
    temps = per_second(rec, run, "rig_telemetry", "drive_ctrl_c")
    bws = per_second(rec, run, "fio_interval", "bw_bps")
    both = sorted(set(temps) & set(bws))
    assert len(both) >= RUNTIME_S - 2, both  # a row for every second the workload ran
    assert [int(r["_time"].timestamp() * 1e9) for r in rows] == both  # type: ignore[attr-defined]
    for row, t in zip(rows, both, strict=True):
        assert row["drive_ctrl_c"] == pytest.approx(temps[t], rel=1e-9)
        assert row["bw_bps"] == pytest.approx(bws[t], rel=1e-9)


def test_the_onset_table_of_a_campaign(recorded_campaign: Recorded) -> None:
    rec = recorded_campaign
    rows = flux(rec, doc_query(rec, '"run_summary"'))
    fields = ("onset_s", "depth_pct", "plateau_bw_bps", "onset_drive_ctrl_c")
    selectors = ", ".join(f"last({f}) AS {f}" for f in fields)
    q = f"SELECT {selectors} FROM run_summary WHERE campaign = '{rec.name}' GROUP BY run"
    expected = {
        s.tags["run"]: dict(zip(s.columns[1:], s.values[0][1:], strict=True)) for s in influxql(rec.settings, q)
    }
    runs = manifests(rec)
    assert [r["run"] for r in rows] == sorted(runs) == sorted(expected)
    for row in rows:
        run = str(row["run"])
        assert (row["slot"], row["profile"]) == (runs[run]["factors"]["slot"], runs[run]["factors"]["profile"])
        assert {f: row[f] for f in fields} == pytest.approx(expected[run], rel=1e-12)
        assert 0 < float(row["onset_s"]) < RUNTIME_S  # type: ignore[arg-type]


def test_a_campaigns_runs_in_the_order_they_ran(recorded_campaign: Recorded) -> None:
    rec = recorded_campaign
    rows = flux(rec, doc_query(rec, "reduce("))
    runs = manifests(rec)
    assert [r["run"] for r in rows] == sorted(runs, key=lambda r: runs[r]["index"]), rows
    for row in rows:
        manifest = runs[str(row["run"])]
        assert (row["slot"], row["profile"]) == (manifest["factors"]["slot"], manifest["factors"]["profile"])
        assert row["ended"] == manifest["status"] == "ok"
        assert RUNTIME_S < float(row["seconds"]) < 900, row  # type: ignore[arg-type]
        assert row["stop"] > row["start"]  # type: ignore[operator]
