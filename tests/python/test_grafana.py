"""The Grafana dashboards: the committed files are what the code generates, and every panel's query,
its variables filled in as Grafana would, returns data from the real influxd on the recorded campaign."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from recorded_campaign import Recorded

from thermrig.analysis.summary_store import store_campaign
from thermrig.db.query import influxql
from thermrig.grafana.dashboards import panels
from thermrig.grafana.provisioning import files

pytestmark = pytest.mark.timeout(1500)  # the first test of a session may wait for the recording


def test_the_committed_dashboards_are_the_generated_ones() -> None:
    folder = Path(__file__).resolve().parents[2] / "docs" / "grafana"
    generated = files()
    committed = {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*") if p.is_file()}
    assert committed == generated, "run `thermrig grafana` (or make grafana) and commit docs/grafana"


def test_every_panel_query_returns_data_on_a_recorded_campaign(recorded_campaign: Recorded) -> None:
    rec = recorded_campaign
    store_campaign(rec.settings, rec.name)  # the campaign overview shows the analysis' summaries
    where = f"campaign = '{rec.name}'"
    [first] = influxql(rec.settings, f"SELECT first(detail) FROM run_events WHERE {where}", epoch="ms")
    [last] = influxql(rec.settings, f"SELECT last(detail) FROM run_events WHERE {where}", epoch="ms")
    runs = influxql(
        rec.settings, f'SHOW TAG VALUES FROM "run_events" WITH KEY = "run" WHERE "campaign" = \'{rec.name}\''
    )
    run = runs[0].values[-1][1]  # what the $run variable's own query offers
    time_filter = f"time >= {first.values[0][0]}ms and time <= {last.values[0][0]}ms"  # the campaign's span
    asked = 0
    for board, board_panels in panels().items():
        for panel in board_panels:
            for query in panel.queries:
                q = (
                    query.replace("$campaign", re.escape(rec.name))
                    .replace("$run", re.escape(run))
                    .replace("$timeFilter", time_filter)
                    .replace("$__interval", "1s")
                )
                result = influxql(rec.settings, q, epoch="ms")
                assert any(s.values for s in result), f"{board} / {panel.title}: no data for {q}"
                asked += 1
    assert asked == sum(len(p.queries) for ps in panels().values() for p in ps) >= 12
