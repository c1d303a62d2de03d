"""Chassis heat as a time series: a profile's trace (seconds, chassis air) read and checked, played on
the simulated rig as its air target (one SET each rig second), the workload started at a point of the
trace, and the tracking error in the run summary and InfluxDB."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from campaign_helpers import CampaignFile, file_drive, manifests, run_args, thermrig

from thermrig.analysis.trace_tracking import tracking_error
from thermrig.campaign.recorded_trace import recorded_trace
from thermrig.campaign.spec import CampaignError, load_campaign
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.query import influxql
from thermrig.hardware.chassis_trace import read_trace
from thermrig.hardware.profiles import ProfileError

WARMUP = Path(__file__).parents[2] / "examples" / "traces" / "furmark-single-gpu-warmup.csv"


def test_the_example_trace_and_interpolation(tmp_path: Path) -> None:
    trace = read_trace(WARMUP)
    assert trace.seconds[0] == 0 and trace.duration_s == 600
    assert trace.air_c[0] == pytest.approx(27.2) and trace.air_c[-1] == pytest.approx(36.43)
    path = tmp_path / "t.csv"
    path.write_text("# comment\nseconds,air_c\n0,30\n10,40\n")
    t = read_trace(path)
    assert (t.at(-5), t.at(0), t.at(2.5), t.at(10), t.at(99)) == (30, 30, 32.5, 40, 40)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0,30\n5,70\n", r"t.csv:2: air 70.0 °C: expected 0 to 65"),
        ("0,30\n5,31\n5,32\n", r"t.csv:3: seconds 5.0: expected rising seconds from 0"),
        ("2,30\n5,31\n", r"t.csv:1: seconds 2.0"),
        ("seconds,air_c\n0,30\nten,31\n", r"t.csv:3: 'ten,31': expected seconds,air_c"),
        ("0,30\n", r"at least two points"),
    ],
)
def test_a_bad_trace_is_refused_at_its_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(ProfileError, match=message):
        read_trace(path)


def test_tracking_error() -> None:
    out = tracking_error([0.0, 1.0, 2.0], [30.0, 31.0, 35.0], lambda t: 30.0 + t)
    assert out == {"trace_rms_c": pytest.approx((9 / 3) ** 0.5), "trace_max_c": 3.0, "trace_s": 2.0}
    assert tracking_error([], [], lambda t: 0.0) == {}


def _campaign(tmp_path: Path, profile: str) -> Path:
    text = CampaignFile("trace", file_drive(tmp_path, "64m")).text()
    text = text.replace('profile = ["single_gpu_load"]', 'profile = ["warm"]')
    path = tmp_path / "c.toml"
    path.write_text(text + "\n[profiles.warm]\n" + profile)
    return path


def test_a_traced_profile_in_a_campaign_file(tmp_path: Path) -> None:
    (tmp_path / "w.csv").write_text("0,28\n60,34\n")
    camp = load_campaign(_campaign(tmp_path, 'trace = "w.csv"\nworkload_at_s = 30\n'))
    warm = camp.profiles["warm"]
    assert warm.trace is not None and warm.workload_at_s == 30 and warm.air_c == 28  # equilibrium at the start
    with pytest.raises(CampaignError, match=r"\[profiles.warm\] trace: a trace is the air target"):
        load_campaign(_campaign(tmp_path, 'trace = "w.csv"\nair_c = 30\n'))
    with pytest.raises(CampaignError, match=r"\[profiles.warm\] workload_at_s: 90.0"):
        load_campaign(_campaign(tmp_path, 'trace = "w.csv"\nworkload_at_s = 90\n'))
    with pytest.raises(CampaignError, match=r"\[profiles.warm\] trace: .*nope.csv: cannot read"):
        load_campaign(_campaign(tmp_path, 'trace = "nope.csv"\n'))


@pytest.mark.timeout(600)
def test_the_rig_follows_the_trace_and_the_run_reports_the_tracking(
    tmp_path: Path, influx_env: dict[str, str], influx: InfluxSettings
) -> None:
    """A 6 °C rise over 90 s of rig time (10x), the write starting 40 s in: the air target the rig
    reports follows the trace, and the summary holds the tracking error over what was played."""
    (tmp_path / "w.csv").write_text("seconds,air_c\n0,28\n90,34\n")
    path = _campaign(tmp_path, 'trace = "w.csv"\nworkload_at_s = 40\n')
    out = tmp_path / "runs"
    r = thermrig(*run_args(path, out), env=influx_env, timeout=580)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (manifest,) = manifests(out).values()
    summary, played = manifest["workload_result"], manifest["trace"]
    assert summary["trace_s"] >= 40 and played["trace_s"] >= summary["trace_s"]
    assert 0 < summary["trace_rms_c"] <= summary["trace_max_c"] < 6  # followed, not left at the start
    where = "\"campaign\" = 'trace'"
    phases = influxql(influx, f"SELECT detail FROM run_events WHERE {where} AND \"kind\" = 'phase'")
    details = [v[1] for s in phases for v in s.values]
    assert details.index("trace warm to 40 s") + 1 == details.index("workload sw")
    targets = influxql(influx, f"SELECT air_target_c FROM rig_actuators WHERE {where}")
    air = [v[1] for s in targets for v in s.values if v[1]]  # 0: before the profile was set
    assert min(air) == pytest.approx(28, abs=0.01) and 30.5 < max(air) <= 34.01  # the trace's targets
    stored = influxql(influx, f"SELECT trace_rms_c, trace_max_c FROM run_summary WHERE {where}")
    assert stored[0].values[-1][1] == pytest.approx(summary["trace_rms_c"])


def test_a_recorded_run_as_a_trace_in_a_campaign_file(tmp_path: Path) -> None:
    camp = load_campaign(_campaign(tmp_path, 'trace = "influx:trace-20261123T190111-001"\nworkload_at_s = 30\n'))
    warm = camp.profiles["warm"]
    assert warm.recorded_run == "trace-20261123T190111-001" and warm.trace is None and warm.workload_at_s == 30
    with pytest.raises(CampaignError, match=r"\[profiles.warm\] trace: 'influx:a run\?'"):
        load_campaign(_campaign(tmp_path, 'trace = "influx:a run?"\n'))


@pytest.mark.timeout(900)
def test_the_chassis_air_of_a_recorded_run_played_as_the_trace_of_another(
    tmp_path: Path, influx_env: dict[str, str], influx: InfluxSettings
) -> None:
    """A run following a 6 °C rise is recorded; a second campaign's profile takes that run's chassis air
    from InfluxDB as its trace (rig time), starts its write where the first one's started, and reports
    how closely its rig followed; a run that is not in InfluxDB stops the campaign before any run."""
    (tmp_path / "w.csv").write_text("seconds,air_c\n0,28\n90,34\n")
    first = tmp_path / "first"
    r = thermrig(
        *run_args(_campaign(tmp_path, 'trace = "w.csv"\nworkload_at_s = 40\n'), first), env=influx_env, timeout=420
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (recorded,) = manifests(first).values()
    at = 3 + 40  # from its baseline (3 s) and lead-in (40 s): where its write started
    # every frame from its baseline, in rig time: at 10x a 1 s mean of wall time is 10 s of it, and the one
    # that began before the baseline would be cut off (a trace of 38.9 s, seen, for 40 s of lead-in alone)
    trace = recorded_trace(influx, recorded["run"])
    assert trace.duration_s >= at and trace.seconds[1] - trace.seconds[0] < 1.0
    again = tmp_path / "again"
    again.mkdir()
    path = _campaign(again, f'trace = "influx:{recorded["run"]}"\nworkload_at_s = {at}\n')
    path.write_text(path.read_text().replace('name = "trace"', 'name = "replay"'))
    r = thermrig(*run_args(path, tmp_path / "second"), env=influx_env, timeout=420)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (manifest,) = manifests(tmp_path / "second").values()
    summary, played = manifest["workload_result"], manifest["trace"]
    assert played["source"] == f"influx:{recorded['run']}"
    assert summary["trace_s"] >= at and 0 < summary["trace_rms_c"] <= summary["trace_max_c"] < 3
    targets = influxql(influx, "SELECT air_target_c FROM rig_actuators WHERE \"campaign\" = 'replay'")
    air = [v[1] for s in targets for v in s.values if v[1]]
    # The targets are the first run's air as it was recorded: the thermocouple's 0.25 °C steps and their
    # noise, read where the rig's seconds fell (trace.at between two frames interpolates them). So each
    # lies within what the trace holds up to where it was played (a target is the trace a second ahead),
    # and the highest is at least the level the trace had risen to where the write started, less one step
    # of that noise: the rise was played (30.5 °C, a fixed figure, was met exactly by a run whose air had
    # risen to 30.5 with the noise below it in each second the rig read).
    played_c = [c for t, c in zip(trace.seconds, trace.air_c, strict=True) if t <= played["trace_s"] + 1.2]
    assert min(played_c) - 0.005 <= min(air) and max(air) <= max(played_c) + 0.005
    level_c = statistics.median(c for t, c in zip(trace.seconds, trace.air_c, strict=True) if at - 5 <= t <= at)
    assert level_c > min(air) + 1.5 and max(air) >= level_c - 0.25  # its equilibrium, its rise
    path.write_text(path.read_text().replace(recorded["run"], "replay-nope"))
    r = thermrig(*run_args(path, tmp_path / "third"), env=influx_env, timeout=120)
    assert r.returncode != 0 and "no campaign or run named 'replay-nope'" in r.stdout + r.stderr
    assert manifests(tmp_path / "third") == {}
