"""The throttle definitions on synthetic traces with a known onset and depth, the one throttle summary
on multi-job workloads (fill then write, a mixed sweep), and the same on the real fio's logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from thermrig.analysis.sweep import sweep_curve
from thermrig.analysis.synthetic import cases
from thermrig.analysis.throttle import throttle_of
from thermrig.analysis.throttle_summary import JobLog, logs_from_fio, positions_by_start, throttle_summary
from thermrig.drive.under_test import LocalDrive
from thermrig.fio.runner import run_fio
from thermrig.fio.workloads import Workload, job_file


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.name)
def test_onset_and_depth_on_synthetic_traces(case) -> None:  # type: ignore[no-untyped-def]
    th = throttle_of(case.series, case.reference)
    if case.onset_s is None:
        assert th.onset_s is None
    else:
        assert th.onset_s is not None and abs(th.onset_s - case.onset_s) <= 1.0
    assert th.depth_pct == pytest.approx(case.depth_pct, abs=1.5)


def test_throttled_from_the_first_second_has_no_plateau_of_its_own_to_leave() -> None:
    [case] = [c for c in cases() if c.name.startswith("throttled from")]
    alone = throttle_of(case.series)  # its own early seconds are already throttled: nothing to leave
    assert alone.onset_s is None and abs(alone.depth_pct) < 5


def _job(position: int, direction: str, start_ms: int, values: list[float]) -> JobLog:
    return JobLog(position, direction, tuple(start_ms + 1000 * (i + 1) for i in range(len(values))), tuple(values))


def test_a_series_starting_at_zero_or_all_zero_gives_no_onset_and_says_why() -> None:
    zero = throttle_summary([_job(1, "write", 0, [0.0] * 60)])
    assert zero.onset_s is None and zero.depth_pct is None and "no throughput" in zero.note
    short = throttle_summary([_job(1, "write", 0, [5.0] * 10)])
    assert short.onset_s is None and "only 10 s" in short.note
    assert throttle_summary([]).note == "no fio data"
    late = throttle_summary([_job(1, "write", 0, [0.0, 0.0] + [100.0] * 30 + [50.0] * 40)])
    assert late.onset_s == 33.0 and late.depth_pct == pytest.approx(50.0)


def test_fill_then_write_is_summarised_on_the_write_whatever_the_names() -> None:
    fill = _job(1, "write", 0, [200.0] * 40)
    write = _job(2, "write", 41_000, [100.0] * 20 + [40.0] * 40)
    th = throttle_summary([write, fill], scale=0.5)
    assert th.position == 2 and th.onset_s == 21.0 and th.depth_pct == pytest.approx(60.0)
    assert th.plateau_bps == pytest.approx(200.0)  # 100 on the wire at half scale
    assert th.fields(0.5) == {
        "seconds": 60,
        "bw_scale": 0.5,
        "plateau_bw_bps": 200.0,
        "depth_pct": pytest.approx(60.0),
        "throttled": True,
        "onset_s": 21.0,
        "onset_at_s": 20.0,  # the step at the 20th second's end
        "onset_cause": "unclear",  # no drive account given: the drive's part is not known
        "host_stalls": 0,
        "host_stall_s": "",
        "host_lost_s": 0.0,
    }
    # InfluxDB keeps jobs by name: the position is their order in time, "randwrite-fill" > "randwrite"
    assert positions_by_start({"randwrite": 41_000, "randwrite-fill": 0}) == {"randwrite-fill": 1, "randwrite": 2}
    sweep = {f"mixed-read{p}": i * 60_000 for i, p in enumerate((100, 90, 50, 10, 0))}
    assert max(positions_by_start(sweep).items(), key=lambda kv: kv[1])[0] == "mixed-read0"


def test_a_mixed_sweep_adds_its_directions_and_gives_throughput_against_read_share() -> None:
    jobs = []
    for position, read_pct in enumerate((100, 50, 0), start=1):
        start = position * 100_000
        total = [300.0] * 40 if read_pct else [300.0] * 10 + [120.0] * 30
        jobs.append(_job(position, "read", start, [v * read_pct / 100 for v in total]))
        jobs.append(_job(position, "write", start, [v * (100 - read_pct) / 100 for v in total]))
    th = throttle_summary(jobs)
    assert th.position == 3 and th.onset_s == 11.0 and th.depth_pct == pytest.approx(60.0)
    curve = sweep_curve(jobs, scale=0.1)
    assert [round(p.read_share_pct) for p in curve] == [100, 50, 0]
    assert curve[0].throughput_bps == pytest.approx(3000.0) and curve[2].throughput_bps < curve[1].throughput_bps
    fill_then_write = [_job(1, "write", 0, [1.0] * 5), _job(2, "write", 9000, [1.0] * 5)]
    assert sweep_curve(fill_then_write) == []  # no job reads and writes: not a sweep


def test_the_real_fios_logs_of_a_sweep_and_of_a_fill_then_write(tmp_path: Path) -> None:
    target = LocalDrive(str(tmp_path / "d.dat"), "32m")
    sweep = Workload("mix", "mixed_random_sweep", runtime_s=2, steps=(100, 50, 0), span="32m", iodepth=1).resolved()
    result = run_fio(job_file(sweep, target, str(tmp_path / "s" / "fio")), tmp_path / "s")
    logs = logs_from_fio(result.bw, result.iops)
    assert sorted({log.position for log in logs}) == [1, 2, 3]
    curve = sweep_curve(logs)
    assert curve[0].read_share_pct > 95 and 30 < curve[1].read_share_pct < 70
    assert curve[2].read_share_pct < 5
    fill = Workload("rw", "consistency", runtime_s=2, iodepth=4, span="16m").resolved()
    result = run_fio(job_file(fill, target, str(tmp_path / "c" / "fio")), tmp_path / "c")
    logs = logs_from_fio(result.bw, result.iops)
    th = throttle_summary(logs)
    assert th.position == 2 and "only" in th.note  # the random write, two seconds: too short to judge
    assert all(log.iops for log in logs)
