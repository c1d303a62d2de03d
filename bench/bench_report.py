"""Analysis and report: onset/depth error on the synthetic set (max), and the time to analyse and report
a campaign of 16 hour-long runs at 1 s resolution synthesised into a private influxd (goal < 10 s), with
the report's size."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
from common import figure
from influxdb_client import Point, WritePrecision

from thermrig.analysis.summary_store import store_campaign, write_lines
from thermrig.analysis.synthetic import cases
from thermrig.analysis.throttle import throttle_of
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.local_server import LocalInflux
from thermrig.db.schema import RunTags, event_line
from thermrig.report.build import write_report

RUNS = 16
SECONDS = 3600
CAMPAIGN = "bench-report"


def synthetic_errors() -> None:
    onset_err = depth_err = 0.0
    for c in cases():
        th = throttle_of(c.series, c.reference)
        if c.onset_s is not None and th.onset_s is not None:
            onset_err = max(onset_err, abs(th.onset_s - c.onset_s))
        elif (c.onset_s is None) != (th.onset_s is None):
            onset_err = float("inf")
        depth_err = max(depth_err, abs(th.depth_pct - c.depth_pct))
    figure(f"onset error, max over {len(cases())} synthetic traces", f"{onset_err:.1f} s", "(tests: <= 1 s)")
    figure("depth error, max over the same", f"{depth_err:.2f} pp", "(tests: <= 1.5 pp)")


def run_lines(i: int, t0_ms: int) -> list[str]:
    """One hour-long run: phases, fio's per-second bandwidth throttling at a run-dependent onset, the rig's
    temperatures and the drive's composite sensor at 1 Hz."""
    slot, profile = ("top", "bottom", "upright", "underside")[i % 4], ("single_gpu_load", "dual_gpu_load")[i // 8]
    tags = RunTags(rig="bench", run=f"{CAMPAIGN}-{i:03d}", campaign=CAMPAIGN, slot=slot, profile=profile, workload="w")
    onset = 20 + 10 * (i % 4) + (i // 8) * 5
    rng = np.random.default_rng(i)
    t = np.arange(SECONDS)
    bw = np.where(t < onset - 1, 1.5e9, 0.9e9) * (1 + rng.normal(0, 0.01, SECONDS))
    ctrl = 50 + np.minimum(t, onset) * 21.0 / onset + rng.normal(0, 0.1, SECONDS)
    lines = [event_line("run_start", t0_ms * 10**6, tags), event_line("phase", t0_ms * 10**6, tags, "baseline")]
    lines.append(event_line("phase", (t0_ms + 10_000) * 10**6, tags, "workload w"))
    start = t0_ms + 10_000
    for k in range(SECONDS):
        ns = (start + 1000 * (k + 1)) * 10**6
        fio = tags.apply(Point("fio_interval")).tag("job", "w").tag("rw", "write")
        lines.append(
            fio.field("bw_bps", float(bw[k]))
            .field("iops", float(bw[k]) / 131072)
            .time(ns, WritePrecision.NS)
            .to_line_protocol()
        )
        rig = (
            tags.apply(Point("rig_telemetry"))
            .field("drive_ctrl_c", float(ctrl[k]))
            .field("drive_nand_c", float(ctrl[k] - 6))
        )
        rig.field("chassis_air_c", 40.0).field("ambient_c", 22.0).field("uptime_ms", k * 1000)
        lines.append(rig.time(ns, WritePrecision.NS).to_line_protocol())
        smart = tags.apply(Point("drive_smart")).field("composite_c", float(round(ctrl[k] - 6 + (i % 4))))
        lines.append(smart.field("tmt1_count", int(k >= onset)).time(ns, WritePrecision.NS).to_line_protocol())
    end = start + 1000 * (SECONDS + 1)
    lines += [
        event_line("phase", end * 10**6, tags, "cooldown"),
        event_line("run_stop", (end + 1000) * 10**6, tags, "ok"),
    ]
    return lines


def synthesise(settings: InfluxSettings) -> int:
    t0 = 1_700_000_000_000
    count = 0
    for i in range(RUNS):
        lines = run_lines(i, t0 + i * (SECONDS + 60) * 1000)
        for k in range(0, len(lines), 20_000):
            write_lines(settings, lines[k : k + 20_000])
        count += len(lines)
    return count


def main() -> None:
    synthetic_errors()
    with tempfile.TemporaryDirectory() as tmp:
        server = LocalInflux(Path(tmp) / "influxdb")
        server.up()
        try:
            settings = server.settings()
            points = synthesise(settings)
            figure(f"synthesised: {RUNS} runs x {SECONDS} s", f"{points:,} points")
            start = time.monotonic()
            store_campaign(settings, CAMPAIGN)
            figure("thermrig analyze: read, analyse, write summaries", f"{time.monotonic() - start:.1f} s")
            start = time.monotonic()
            report = write_report(settings, CAMPAIGN, Path(tmp) / "report")
            figure("thermrig report: read, analyse, plot, write", f"{time.monotonic() - start:.1f} s", "(goal < 10 s)")
            total = sum(p.stat().st_size for p in report.files)
            figure("report.html (figures embedded)", f"{report.html.stat().st_size / 1e6:.2f} MB")
            figure(f"every file of the report ({len(report.files)})", f"{total / 1e6:.2f} MB")
        finally:
            server.down()


if __name__ == "__main__":
    main()
