"""fio's per-second logs recorded as one fio_interval point per window, on fio's own logs of a loaded run
(fio_logs/loaded_*: a 14 s sequential write on the virtual drive beside the suite's other workers), where
the latency log stamps its windows up to 36 ms after the bandwidth log does."""

from __future__ import annotations

from pathlib import Path

from thermrig.analysis.throttle_summary import logs_from_fio
from thermrig.db.schema import RunTags, fio_interval_lines
from thermrig.fio.runner import read_log

LOGS = Path(__file__).parent / "fio_logs"


def _fields(line: str) -> tuple[dict[str, float], int]:
    _, fields, stamp = line.rsplit(" ", 2)
    out = {}
    for kv in fields.split(","):
        key, value = kv.split("=")
        out[key] = float(value.rstrip("i"))
    return out, int(stamp)


def test_each_window_of_a_loaded_run_is_one_point_with_its_latency() -> None:
    logs = {kind: read_log(LOGS / f"loaded_{kind}.1.log") for kind in ("bw", "iops", "lat")}
    lat = [p.value for p in logs["lat"]]
    late = [la.timestamp_ms - b.timestamp_ms for b, la in zip(logs["bw"], logs["lat"][:14], strict=True)]
    assert sum(d > 0 for d in late) >= 8 and max(late) == 36  # the latency log's stamps after the bandwidth's
    lines = fio_interval_lines(logs, {1: "sw"}, RunTags(rig="rig1", run="r", campaign="c"))
    points = [_fields(line) for line in lines]
    windows = [(f, t) for f, t in points if "bw_bps" in f]
    assert len(windows) == len(logs["bw"]) == 14
    assert [t // 1_000_000 for _, t in windows] == [p.timestamp_ms for p in logs["bw"]]  # at the bandwidth's stamps
    assert [f["lat_mean_ns"] for f, _ in windows] == lat[:14] and all("iops" in f for f, _ in windows)
    # fio's last, partial window is in the latency log only, 168 ms after the last full one: a point of its own
    [(rest, stamp)] = [(f, t) for f, t in points if "bw_bps" not in f]
    assert rest == {"lat_mean_ns": lat[14]} and stamp // 1_000_000 == logs["lat"][14].timestamp_ms


def test_the_run_end_analysis_reads_the_same_windows() -> None:
    """The summary written as a run ends reads fio's logs as they come (not from InfluxDB): the same join."""
    logs = {kind: read_log(LOGS / f"loaded_{kind}.1.log") for kind in ("bw", "iops", "lat")}
    (job,) = logs_from_fio(logs["bw"], logs["iops"], logs["lat"])
    assert job.stamps_ms == tuple(p.timestamp_ms for p in logs["bw"])
    assert list(job.lat_ns) == [p.value for p in logs["lat"][:14]] and all(v > 0 for v in job.iops)
