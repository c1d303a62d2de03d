"""The Grafana dashboards: the committed files are what the code generates (test_grafana_panels.py runs
every panel's query as Grafana does, on influxd 1.x and InfluxDB 2.x)."""

from __future__ import annotations

from pathlib import Path

from thermrig.grafana.provisioning import files


def test_the_committed_dashboards_are_the_generated_ones() -> None:
    folder = Path(__file__).resolve().parents[2] / "docs" / "grafana"
    generated = files()
    committed = {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*") if p.is_file()}
    assert committed == generated, "run `thermrig grafana` (or make grafana) and commit docs/grafana"
