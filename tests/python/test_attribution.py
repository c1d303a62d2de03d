"""Whose fall it is (docs/analysis.md): a fall the drive's account saw is thermal; one it did not see,
with the host stalled (the simulator late, fio's latency flat, the level back within seconds), is the
host's and never the onset; the rest is cache (or unclear without the drive's account). And one time:
a run's worst lag of the plant, the virtual drive and fio against the bound."""

from __future__ import annotations

import numpy as np
import pytest

from thermrig.analysis.attribution import Evidence, attribute
from thermrig.analysis.drop_cause import run_drops
from thermrig.analysis.lag import BOUND_MS, fio_lag_ms, run_lag
from thermrig.analysis.run_data import RunData
from thermrig.analysis.throttle_summary import JobLog, throttle_summary
from thermrig.analysis.trace import Trace

START_MS = 1_700_000_000_000  # the job's start; its second i ends at START_MS + 1000 (i + 1)


def _job(values: list[float], lat_ns: list[float] | None = None) -> JobLog:
    stamps = tuple(START_MS + 1000 * (i + 1) for i in range(len(values)))
    return JobLog(1, "write", stamps, tuple(values), lat_ns=tuple(lat_ns or ()))


def _trace(values: list[float]) -> Trace:
    """A drive_smart field sampled once a second over the job, at each second's middle."""
    return Trace(START_MS + 500.0 + 1000.0 * np.arange(len(values)), np.asarray(values, dtype=float))


def _account(n: int, throttles_at: int | None) -> dict[str, Trace]:
    """The drive's power state and TMT1 count: 0 until the throttle, 1 from it (never, with None)."""
    state = [0.0 if throttles_at is None or i < throttles_at else 1.0 for i in range(n)]
    return {"power_state": _trace(state), "tmt1_count": _trace([2.0 + s for s in state])}


# 60 s of writes at 100; the drive throttles to 40 at 40 s; the host starved fio for 5 s at 12 s.
SERIES = [100.0] * 12 + [45.0] * 5 + [100.0] * 23 + [40.0] * 20


def test_a_host_stall_before_the_throttle_is_passed_over_and_the_thermal_onset_kept() -> None:
    blind = throttle_summary([_job(SERIES)])  # fio's throughput alone reads the stall as the onset
    assert blind.onset_s == 13.0 and blind.onset_cause == "unclear"
    th = throttle_summary([_job(SERIES)], counters=_account(len(SERIES), 40))
    assert th.onset_s == 41.0 and th.onset_cause == "thermal" and "power_state 0->1" in th.onset_why
    assert th.host_lost_s == pytest.approx(5 * 0.55)  # five seconds at 45 of 100
    assert th.host_stalls == (13,)
    assert th.describe_stalls() == "host stall at 13 s (2.8 s of writing lost before the onset)"
    fields = th.fields(1.0)
    assert fields["onset_cause"] == "thermal" and fields["host_stalls"] == 1 and fields["host_stall_s"] == "13"
    assert fields["host_lost_s"] == pytest.approx(2.75)
    calm = throttle_summary([_job(SERIES[:40])], counters=_account(40, None))  # the same stall, no throttle after
    assert calm.onset_s is None and calm.describe_stalls() == "host stall at 13 s (2.8 s of writing lost)"
    assert th.depth_pct == pytest.approx(blind.depth_pct)  # the depth does not move


def test_a_fall_is_the_hosts_while_the_drives_server_was_late_enough_to_lose_it() -> None:
    # 20 s of writes at 100, then 40 for good; the drive's account never moves (no throttle it saw).
    series = [100.0] * 20 + [40.0] * 40
    quiet = throttle_summary([_job(series)], counters=_account(len(series), None))
    assert quiet.onset_s == 21.0 and quiet.onset_cause == "cache"  # the drive slowed on its own

    def late(ms: float, whose: str = "sim_drive_late_ms") -> dict[str, Trace]:
        values = [0.0] * len(series)
        values[20] = ms  # the worst reply as the fall began
        return {**_account(len(series), None), whose: _trace(values)}

    found = attribute(series, 20, 100.0, Evidence(late(700.0), START_MS))
    assert found.cause == "host" and "drive 700 ms late" in found.why  # 0.7 s lost: 60 % of the second
    # 300 ms late cannot lose 60 % of a second: the fall is the drive's own (a cache running out under a
    # busy machine); nor does a plant seconds late take throughput away (its figures only come late)
    assert attribute(series, 20, 100.0, Evidence(late(300.0), START_MS)).cause == "cache"
    assert attribute(series, 20, 100.0, Evidence(late(9000.0, "sim_plant_late_ms"), START_MS)).cause == "cache"
    # the seconds around the late reply are the host's; the fall still there once the server was on
    # time again is the drive's
    stalled = throttle_summary([_job(series)], counters=late(700.0))
    assert stalled.host_stalls == (21,) and stalled.onset_s == 25.0 and stalled.onset_cause == "cache"
    # the drive's account moving at the same fall outweighs the lateness: the drive throttled
    moved = {**_account(len(series), 20), "sim_drive_late_ms": late(700.0)["sim_drive_late_ms"]}
    assert attribute(series, 20, 100.0, Evidence(moved, START_MS)).cause == "thermal"


def test_fios_flat_latency_calls_a_fall_the_hosts_even_without_the_drives_account() -> None:
    # Queue depth fixed: a drive that slows answers each I/O later; a starved fio issues fewer at the same
    # latency. Here fio is starved at 10 s (latency flat), and the drive slows at 30 s (latency x2.5).
    series = [100.0] * 10 + [50.0] * 4 + [100.0] * 16 + [40.0] * 30
    lat = [1000.0] * 30 + [2500.0] * 30
    th = throttle_summary([_job(series, lat)])
    assert th.onset_s == 31.0 and th.onset_cause == "unclear" and th.host_stalls == (11,)
    # without fio's latency and the drive's account nothing tells the stall from a throttle
    assert throttle_summary([_job(series)]).onset_s == 11.0


def test_a_drop_is_the_hosts_when_the_level_comes_back_and_the_drive_saw_nothing() -> None:
    series = [100.0] * 10 + [30.0] * 5 + [100.0] * 20 + [40.0] * 25
    data = RunData("r1", {"workload": "w", "slot": "top"}, jobs=[_job(series)], counters=_account(len(series), 35))
    drops = {d.at_s: d for d in run_drops(data)}
    assert set(drops) == {10, 35}
    assert drops[10].host and "back at the level" in drops[10].host
    assert not drops[35].host and drops[35].drive_events


def test_a_host_stall_in_a_drops_first_second_does_not_make_the_drop_the_hosts() -> None:
    """A busy machine starved fio in the very second the cache ran out (a loaded clean clone's run: fio's
    count fell with its latency flat, then the level stayed down with the latency 2.5 x): the stall is the
    host's, the drop after it is the drive's own."""
    series = [100.0] * 10 + [55.0] + [40.0] * 30
    lat = [1000.0] * 11 + [2500.0] * 30
    counters = _account(len(series), None)  # recorded, never moving: no throttle
    evidence = Evidence(counters, START_MS, lat)
    assert attribute(series, 10, 100.0, evidence).cause == "host"  # the stalled second itself
    data = RunData("r1", {"workload": "w", "slot": "top"}, jobs=[_job(series, lat)], counters=counters)
    (drop,) = run_drops(data)
    assert drop.at_s == 10 and not drop.host, drop
    th = throttle_summary([_job(series, lat)], counters=counters)
    assert th.onset_s == 12.0 and th.onset_cause == "cache" and th.host_stalls == (11,)
    # a stall in every second of the fall stays the host's: fio starved for good, its latency flat
    starved = RunData("r2", data.tags, jobs=[_job(series, [1000.0] * len(series))], counters=counters)
    (drop,) = run_drops(starved)
    assert "latency flat" in drop.host, drop


def test_the_worst_lag_of_plant_drive_and_fio_is_marked_past_the_bound() -> None:
    stamps = [START_MS + 1000 * (i + 1) for i in range(40)]
    stamps[20:] = [t + 700 for t in stamps[20:]]  # one window of fio's log ran 1.7 s: fio was late
    job = JobLog(1, "write", tuple(stamps), (100.0,) * 40)
    assert fio_lag_ms([job]) == pytest.approx(700.0)
    counters = {"sim_plant_late_ms": _trace([5.0] * 40), "sim_drive_late_ms": _trace([0.2] * 39 + [80.0])}
    lag = run_lag(RunData("r", {}, jobs=[job], counters=counters))
    assert lag is not None and lag.source == "fio" and lag.worst_ms == pytest.approx(700.0)
    assert lag.over_bound and lag.fields()["lag_over_bound"] is True and f"{BOUND_MS:.0f} ms bound" in lag.describe()
    on_time = JobLog(1, "write", tuple(START_MS + 1000 * (i + 1) for i in range(40)), (100.0,) * 40)
    lag = run_lag(RunData("r", {}, jobs=[on_time], counters=counters))
    assert lag is not None and lag.source == "drive" and lag.worst_ms == pytest.approx(80.0) and not lag.over_bound
    assert run_lag(RunData("r", {})) is None


def test_a_simulated_onset_in_the_drives_own_time_takes_off_what_the_plant_lost() -> None:
    # The plant fell behind wall time at 100 ms a second from the job's start: the drive that throttles
    # after 36 s of its own time does so at 40 s of fio's.
    series = [100.0] * 39 + [40.0] * 30
    lag = _trace([100.0 * i for i in range(len(series))])
    th = throttle_summary([_job(series)], counters={**_account(len(series), 39), "sim_plant_late_ms": lag})
    assert th.onset_s == 40.0 and th.onset_cause == "thermal"
    assert th.onset_drive_s == pytest.approx(36.05, abs=0.1) and th.fields(1.0)["onset_drive_s"] == th.onset_drive_s
    assert throttle_summary([_job(series)], counters=_account(len(series), 39)).onset_drive_s is None  # a real drive


def test_a_host_stall_in_the_plateaus_seconds_does_not_make_the_plateau() -> None:
    # fio starved for the job's seconds 2-4: fio's throughput alone reads a plateau of 30 and a negative depth
    series = [100.0, 30.0, 30.0, 30.0] + [100.0] * 30 + [40.0] * 30
    blind = throttle_summary([_job(series)])
    assert blind.plateau_bps == 30.0 and blind.depth_pct is not None and blind.depth_pct < 0
    th = throttle_summary([_job(series)], counters=_account(len(series), 34))
    assert th.plateau_bps == 100.0 and th.depth_pct == pytest.approx(60.0)
    assert th.onset_s == 35.0 and th.onset_cause == "thermal" and th.host_stalls == (2,)


def test_the_catch_up_after_a_stall_in_the_plateaus_seconds_does_not_make_the_plateau() -> None:
    # fio at its own rate limit (57.7) starved in second 4, then catching up, as fio's rate limit does,
    # for three seconds: the plateau is the rate, not the catch-up, and the onset is the drive's at 35 s
    series = [57.7, 57.7, 57.6, 26.3, 75.1, 69.6, 70.0] + [57.7] * 27 + [30.0] * 30
    th = throttle_summary([_job(series)], counters=_account(len(series), 34))
    assert th.plateau_bps == pytest.approx(57.7, abs=0.2)
    assert th.onset_s == 35.0 and th.onset_cause == "thermal" and th.host_stalls == (4,)


def test_a_plateau_of_stalls_and_catch_ups_is_fios_own_rate() -> None:
    """A loaded clean clone's run (fio at its rate limit, 55 MiB/s = 57.7 MB/s, on the throttling virtual
    drive, two CPU-bound processes beside it): fio starved in seconds 3 and 5 by the drive's own account,
    catching up in the seconds around them. Its seconds 2-4 read 67.0 as the plateau, which put every
    second at fio's own rate under the line, and the drive's first power state step (which takes nothing
    from 57.7) made a thermal onset at 9 s, 3 s before the cap fell under what fio moved."""
    series = [48.5, 67.0, 43.5, 71.9, 36.6, 57.0, 76.9, 60.3, 44.5, 48.4, 55.8, 57.8, 54.3, 49.9, 45.7, 40.1]
    series += [26.0, 26.5, 29.0, 25.2, 21.8, 18.6, 15.6, 12.8, 10.7] + [10.4] * 11
    state = [0.0] * 8 + [1.0] * 9 + [2.0] * 8 + [3.0] * 11
    starved = [0.0] * len(series)
    starved[2] = starved[4] = 600.0  # ms the drive had nothing in flight
    counters = {"power_state": _trace(state), "tmt1_count": _trace(state), "sim_drive_starved_ms": _trace(starved)}
    blind = throttle_summary([_job(series)])
    assert blind.plateau_bps == 67.0
    th = throttle_summary([_job(series)], counters=counters)
    assert th.plateau_bps == pytest.approx(57.7, rel=0.03)  # the seconds neither stalled nor catching up
    assert th.host_stalls == (3, 5) and th.onset_s == 14.0 and th.onset_cause == "thermal", th

    # a drive that left its level in the window's seconds is no catch-up: the plateau stays its own
    early = [100.0, 100.0, 30.0, 100.0, 100.0] + [40.0] * 40
    counters = {"power_state": _trace([0.0] * len(early)), "sim_drive_starved_ms": _trace([0, 0, 900] + [0] * 42)}
    th = throttle_summary([_job(early)], counters=counters)
    assert th.plateau_bps == 100.0 and th.host_stalls == (3,) and th.onset_s == 6.0, th
