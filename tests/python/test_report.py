"""`thermrig report` on the recorded campaign, looked at as a person would: headless Chromium opens the
HTML, a check in the page reports broken images, script errors and empty tables, and a screenshot is
taken. And a campaign whose run failed half-way: a report that says what is missing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from influx_servers import RECORDED_ON_BOTH
from recorded_campaign import Recorded

from thermrig.analysis.fio_log import LogPoint
from thermrig.analysis.run_data import RunData, Trace
from thermrig.analysis.summary_store import write_lines
from thermrig.db.schema import RunTags, event_line, fio_interval_lines
from thermrig.report.plots import rig_seconds

pytestmark = pytest.mark.timeout(1500)  # the first test of a session may wait for the recording
CHROMIUM = "/usr/bin/chromium"
CHECK = """<script>
window.__errors = [];
window.addEventListener("error", e => window.__errors.push(String(e.message || e.type)), true);
window.addEventListener("load", () => {
  const bad = [...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.alt);
  const empty = [...document.querySelectorAll("table")]
    .filter(t => t.tBodies[0].rows.length === 0 || t.querySelector("td[colspan]")).map(t => t.dataset.table);
  document.body.setAttribute("data-check", JSON.stringify({images: document.images.length, bad, empty,
    tables: document.querySelectorAll("table").length, errors: window.__errors}));
});
</script>"""


def chromium(url: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
    ]
    return subprocess.run([CHROMIUM, *flags, *args, url], capture_output=True, text=True, timeout=120)


def thermrig(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "thermrig.cli", *args], env=env, capture_output=True, text=True)


@RECORDED_ON_BOTH
def test_the_report_opens_in_chromium_with_every_image_and_table(recorded_campaign: Recorded, tmp_path: Path) -> None:
    out = tmp_path / "report"
    r = thermrig("report", recorded_campaign.name, "--out", str(out), env=recorded_campaign.env)
    assert r.returncode == 0, r.stderr
    page = (out / "report.html").read_text()
    assert 'src="http' not in page and "<script" not in page  # self-contained, no script of its own
    for name in ("onset_depth", "runs", "sensor_ranking", "effects", "consistency"):
        rows = json.loads((out / f"{name}.json").read_text())["rows"]
        assert rows and (out / f"{name}.csv").read_text().count("\n") == len(rows) + 1
    onset_depth = json.loads((out / "onset_depth.json").read_text())["rows"]
    assert {row["slot"] for row in onset_depth} == {"top", "underside"}
    cells = [row[p] for row in onset_depth for p in ("single_gpu_load", "dual_gpu_load")]
    assert all(re.fullmatch(r"[-+]\d+ % after \d+ s|no throttle \([+-]\d+ %\)", cell) for cell in cells), cells
    assert any(cell.endswith(" s") for cell in cells)
    for png in ("throughput.png", "controller.png", "throughput_vs_controller.png", "sensor_ranking.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    checked = tmp_path / "checked.html"
    checked.write_text(page.replace("</head>", CHECK + "</head>", 1))
    dom = chromium(checked.as_uri(), tmp_path / "profile1", "--virtual-time-budget=10000", "--dump-dom")
    found = re.search(r'data-check="([^"]*)"', dom.stdout)
    assert found, dom.stderr[-2000:]
    check = json.loads(found.group(1).replace("&quot;", '"'))
    drops = json.loads((out / "drop_causes.json").read_text())["rows"]  # the runs throttle: their drops, classified
    assert drops and all(row["cause"] in ("cache", "thermal", "host", "unclear") for row in drops)
    assert check == {"images": 5, "bad": [], "empty": [], "tables": 6, "errors": []}
    shot = tmp_path / "report.png"
    chromium((out / "report.html").as_uri(), tmp_path / "profile2", "--window-size=1200,2400", f"--screenshot={shot}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


@RECORDED_ON_BOTH
def test_a_run_that_failed_half_way_is_reported_as_missing(recorded_campaign: Recorded, tmp_path: Path) -> None:
    rec = recorded_campaign
    t0 = 1_700_000_000_000
    good = RunTags(rig="r", run="half-1", campaign="half", slot="top", profile="p")
    failed = RunTags(rig="r", run="half-2", campaign="half", slot="bottom", profile="p")
    lines = []
    for tags, seconds, status in ((good, 60, "ok"), (failed, 12, "failed")):
        start = t0 if tags is good else t0 + 600_000
        bw = [LogPoint(start + 1000 * (i + 1), 1000 if i < 30 else 500, 1, 1) for i in range(seconds)]
        lines += [
            event_line("run_start", start * 1_000_000, tags),
            event_line("phase", start * 1_000_000, tags, "workload"),
        ]
        lines += fio_interval_lines({"bw": bw}, {1: "w"}, tags)
        lines.append(event_line("run_stop", (start + 70_000) * 1_000_000, tags, status))
    write_lines(rec.settings, lines)
    out = tmp_path / "half"
    r = thermrig("report", "half", "--out", str(out), env=rec.env)
    assert r.returncode == 0, r.stderr
    assert "missing: run half-2: only 12 s of throughput" in r.stdout and "the run ended failed" in r.stdout
    assert "missing: no data for the figure: Controller thermocouple" in r.stdout  # no rig telemetry here
    page = (out / "report.html").read_text()
    assert "Missing from the data" in page and "half-2" in page
    none = thermrig("report", "never-recorded", "--out", str(tmp_path / "x"), env=rec.env)
    assert none.returncode == 1 and "no runs of campaign 'never-recorded'" in none.stderr


def test_time_axes_are_in_rig_time_across_an_accelerated_stretch() -> None:
    """Recorded at 1 s intervals: 10 s at 20x (200 s of the rig's life), then 30 s at 1x, with a reset
    (uptime from zero) 5 s into the 1x stretch. The axis reads the rig's seconds, the reset's jump at
    recorded speed."""
    t = 1_700_000_000_000 + 1000.0 * np.arange(41)
    uptime = np.concatenate([20_000.0 * np.arange(11), 200_000 + 1000.0 * np.arange(1, 6), 1000.0 * np.arange(25)])
    data = RunData("r", {}, uptime=Trace(t, uptime))
    job_start = t[10]  # the workload starts as the simulation drops to 1x
    seconds = rig_seconds(data, t, job_start)
    assert seconds[0] == pytest.approx(-200.0) and seconds[5] == pytest.approx(-100.0)
    assert seconds[10] == pytest.approx(0.0) and seconds[15] == pytest.approx(5.0)
    assert seconds[16] == pytest.approx(6.0) and seconds[40] == pytest.approx(30.0)  # past the reset: 1 s a second
    assert np.all(np.diff(seconds) > 0)
    plain = rig_seconds(RunData("r", {}), t, job_start)  # no uptime recorded: recorded time
    assert plain[0] == pytest.approx(-10.0)
