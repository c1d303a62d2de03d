"""Every panel of the committed Grafana dashboards, as Grafana runs it on a campaign recorded for real
(recorded_campaign.py), on influxd 1.x and on InfluxDB 2.x (the campaign copied into it: InfluxQL through
the DBRP mapping, the read-only token in the Authorization header, as docs/grafana.md sets the data source
up): the variables' own queries offer the campaign and its runs, each panel's query with those values and
the campaign's time range filled in as Grafana fills them (grafana_fill.py) returns the columns it plots,
each with data, and the series it draws (one per run where it groups by run)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from grafana_fill import Variable, fill
from influx_servers import RECORDED_ON_BOTH
from recorded_campaign import Recorded

from thermrig.analysis.summary_store import store_campaign
from thermrig.db.query import Series, influxql

pytestmark = [pytest.mark.timeout(1500), RECORDED_ON_BOTH]  # the first test may wait for the recording
GRAFANA = Path(__file__).resolve().parents[2] / "docs" / "grafana"
SCREEN_PX = 1920  # a dashboard this wide: a panel of w grid columns (of 24) plots w / 24 of it
# Columns this campaign leaves empty, and why: every other column a panel shows must have data.
EMPTY_HERE = {
    "recovery s": "its cool-down stops 3 °C above the baseline, short of the 2 °C recovery",
    "sd": "one run per cell: no repeats, so no spread",
    "CI low": "one run per cell: Welch's interval needs two runs of a cell on either side",
    "CI high": "one run per cell: Welch's interval needs two runs of a cell on either side",
}


def datasource_database() -> str:
    [source] = yaml.safe_load((GRAFANA / "provisioning" / "datasources" / "thermrig.yaml").read_text())["datasources"]
    return str(source["jsonData"]["dbName"])


def query(rec: Recorded, q: str) -> list[Series]:
    """As the provisioned data source asks: its database, epoch milliseconds, the reader's credentials."""
    return influxql(rec.settings, q, database=datasource_database(), epoch="ms")


def selected(q: str) -> list[str]:
    """The columns a SELECT returns after time: each selector's alias, or its function's name."""
    selectors = re.match(r"SELECT (.*?) FROM ", q, re.S)
    assert selectors, q
    names = []
    for item in re.split(r",\s*(?![^()]*\))", selectors.group(1)):
        alias = re.search(r'\bAS "([^"]+)"$', item.strip())
        function = re.match(r"(\w+)\(", item.strip())
        names.append(alias.group(1) if alias else function.group(1) if function else item.strip().strip('"'))
    return names


def grouped_tags(q: str) -> list[str]:
    group = re.search(r"GROUP BY (.*?)(?: fill\(\w+\))?$", q)
    return [] if not group else re.findall(r'"(\w+)"', group.group(1))


def variables_as_grafana_offers(rec: Recorded, board: dict) -> list[Variable]:
    """Each variable's query run with the ones before it filled in; the campaign chosen, then the first
    run Grafana selects by default: the runs offered are the campaign's."""
    chosen: list[Variable] = []
    for var in board["templating"]["list"]:
        assert not var["multi"] and not var["includeAll"], f"{var['name']}: single-valued, as filled here"
        offered = [str(row[1]) for s in query(rec, fill(var["query"], chosen, 0, 1, 1)) for row in s.values]
        if var["name"] == "campaign":
            assert rec.name in offered, offered
            chosen.append(Variable("campaign", (rec.name,)))
        else:
            assert var["name"] == "run", var["name"]
            assert set(offered) == campaign_runs(rec), offered
            chosen.append(Variable("run", (offered[0],)))
    return chosen


def campaign_runs(rec: Recorded) -> set[str]:
    return {p.parent.name for p in rec.folder.glob("*/manifest.json")}


def campaign_span_ms(rec: Recorded) -> tuple[int, int]:
    where = f"\"campaign\" = '{rec.name}'"
    [first] = query(rec, f"SELECT first(detail) FROM run_events WHERE {where}")
    [last] = query(rec, f"SELECT last(detail) FROM run_events WHERE {where}")
    return int(first.values[0][0]), int(last.values[0][0])


def test_every_panel_returns_what_it_shows_as_grafana_asks(recorded_campaign: Recorded) -> None:
    rec = recorded_campaign
    store_campaign(rec.settings, rec.name)  # the campaign overview shows the analysis' summaries
    from_ms, to_ms = campaign_span_ms(rec)
    runs = campaign_runs(rec)
    asked = 0
    for path in sorted((GRAFANA / "dashboards").glob("*.json")):
        board = json.loads(path.read_text())
        variables = variables_as_grafana_offers(rec, board)
        for panel in board["panels"]:
            width_px = round(panel["gridPos"]["w"] / 24 * SCREEN_PX)
            for target in panel["targets"]:
                q = fill(target["query"], variables, from_ms, to_ms, width_px)
                assert not re.search(r"\$\w|\[\[", q), f"left unfilled: {q}"
                where = f"{path.name} / {panel['title']}: {q}"
                result = query(rec, q)
                assert result and all(s.values for s in result), f"no data: {where}"
                columns = ["time", *selected(q)]
                for s in result:
                    assert s.columns == columns, (where, s.columns)
                filled = {c for s in result for i, c in enumerate(s.columns) if any(r[i] is not None for r in s.values)}
                empty = set(columns) - filled - set(EMPTY_HERE)
                assert not empty, f"{sorted(empty)} empty: {where}"  # every line or column the panel shows
                tags = grouped_tags(q)
                assert all(set(s.tags) == set(tags) for s in result), (where, [s.tags for s in result])
                if "run" in tags:  # one series for every run of the campaign
                    assert {s.tags["run"] for s in result} == runs, where
                asked += 1
    assert asked >= 12
