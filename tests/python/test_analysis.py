"""Step-response figures and the clock fit, on series with known answers."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from thermrig.analysis.step_response import step_response
from thermrig.link.timesync import SyncSample, TimeSync


def test_first_order_step_settles_when_the_theory_says() -> None:
    tau, target, band = 50.0, 20.0, 0.5
    t = np.arange(0, 600, 0.1)
    value = target * (1 - np.exp(-t / tau))
    r = step_response(t, value, target, band)
    assert r.settle_s == pytest.approx(tau * math.log(target / band), abs=0.11)
    assert r.overshoot_c == 0
    assert r.steady_error_c < 1e-3


def test_overshoot_and_never_settling() -> None:
    t = np.arange(0, 300, 0.1)
    ringing = 10 + 3 * np.exp(-t / 30) * np.cos(t / 5) * -1
    r = step_response(t, ringing, 10.0)
    assert r.overshoot_c == pytest.approx(float(ringing.max() - 10), rel=1e-9) and r.overshoot_c > 1
    assert step_response(t, t * 0.01, 10.0).settle_s is None
    with pytest.raises(ValueError):
        step_response(t[:10], t[:10], 1.0)


def test_clock_fit_recovers_offset_and_drift_from_noisy_pings() -> None:
    rng = random.Random(3)
    ppm, offset_us, t0 = 87.0, 123_456_789, 1_700_000_000.0
    sync = TimeSync()
    for i in range(100):
        send = t0 + i * 0.2
        one_way = 0.0002 + rng.expovariate(1 / 0.0005)  # queueing delays, heavy-tailed
        back = 0.0002 + rng.expovariate(1 / 0.0005)
        arrive = send + one_way
        mcu = round(offset_us + (arrive - t0) * 1e6 * (1 + ppm * 1e-6))
        sync.add(SyncSample(send, mcu, arrive + back))
    fit = sync.fit
    assert fit is not None
    assert fit.drift_ppm == pytest.approx(-ppm, abs=15)  # host seconds per MCU second < 1 for a fast crystal
    errors = []
    for i in range(100):
        true_utc = t0 + 5 + i * 0.2
        mcu = round(offset_us + (true_utc - t0) * 1e6 * (1 + ppm * 1e-6))
        errors.append(abs(fit.to_utc(mcu) - true_utc))
    assert max(errors) < 0.001


def test_consistency_score_uses_the_last_window() -> None:
    from thermrig.analysis.consistency import consistency_score

    rng = np.random.default_rng(1)
    burst = list(30000 + rng.normal(0, 100, 300))  # fresh-drive burst, must not count
    steady = list(8000 + rng.normal(0, 800, 400))  # the last 400 s
    s = consistency_score(burst + steady, 400)
    assert s.seconds == 400
    assert s.average == pytest.approx(np.mean(steady))
    assert s.consistency == pytest.approx(np.mean(steady) / np.std(steady))
    with pytest.raises(ValueError):
        consistency_score([1.0])


def test_snia_steady_state_criterion() -> None:
    from thermrig.analysis.consistency import snia_steady_state

    assert not snia_steady_state([100, 101, 99, 100])  # fewer than five rounds
    assert snia_steady_state([130, 120, 100, 102, 99, 101, 100])  # last five flat
    assert not snia_steady_state([100, 80, 110, 95, 125])  # range over 20 % of the average
    assert not snia_steady_state([100, 103, 106, 109, 112])  # range within 20 %, but the trend moves 12 %
    assert snia_steady_state([100, 102, 104, 103, 105])


def test_throttle_onset_and_depth_as_the_puget_tables_state_them() -> None:
    from thermrig.analysis.throttle import throttle_of

    series = [170.0] + [150.0] * 18 + [75.0] * 101  # throttled from second 20 to half speed
    th = throttle_of(series)
    assert th.plateau == 150.0 and th.onset_s == 20.0 and th.depth_pct == 50.0
    flat = throttle_of([150.0] * 60)
    assert flat.onset_s is None and flat.depth_pct == 0.0


@given(
    step_s=st.floats(min_value=4.0, max_value=40.0),
    plateau=st.floats(min_value=50.0, max_value=3000.0),
    kept=st.floats(min_value=0.1, max_value=0.85),
)
def test_the_onset_moment_is_where_in_its_second_the_throughput_fell(
    step_s: float, plateau: float, kept: float
) -> None:
    """A throughput stepping from the plateau to kept x plateau at step_s: the onset is the end of the first
    second 10 % under the plateau; the onset moment is the step itself, wherever it fell in its second."""
    from thermrig.analysis.throttle import DROP, throttle_of

    def mean_over(second: int) -> float:  # the mean of [second, second + 1)
        at_plateau = min(1.0, max(0.0, step_s - second))
        return plateau * (at_plateau + kept * (1.0 - at_plateau))

    th = throttle_of([mean_over(i) for i in range(80)])
    # the first slow second: the step's own, or the next one when the step came late in its second
    slow_from = math.floor(step_s) if mean_over(math.floor(step_s)) < (1 - DROP) * plateau else math.floor(step_s) + 1
    assert th.onset_s == slow_from + 1
    assert th.onset_at_s == pytest.approx(step_s, abs=1e-6)


def test_a_one_second_hiccup_is_not_a_throttle() -> None:
    """Seen in a demo: one slow second and the next one making up for it (a stalled host tick)."""
    from thermrig.analysis.throttle import throttle_of

    series = [171.0] + [143.0] * 10 + [123.0, 162.0] + [143.0] * 35 + [129.0, 123.0, 81.0] + [64.0] * 10
    assert throttle_of(series).onset_s == 50.0  # 129 is still within 10 % of 143; 123 is not


def test_a_two_second_dip_back_at_the_plateau_is_not_a_throttle() -> None:
    """Seen in the calibration check under load (five pytest workers): fio starved for two seconds, back
    at the plateau after, read as an onset at 5 s where the drive throttled after 60 s."""
    from thermrig.analysis.throttle import throttle_of

    series = [150.0] * 3 + [100.0, 110.0] + [150.0] * 55 + [120.0] * 2 + [90.0] * 40
    th = throttle_of(series)
    assert th.onset_s == 61.0 and th.onset_at_s == pytest.approx(60.0, abs=1.0)
    # a drop that stays for two seconds and is back after them is no throttle either, but one that
    # stays for three is one (the median of the three seconds after its first)
    assert throttle_of([150.0] * 10 + [100.0] * 2 + [150.0] * 40).onset_s is None
    assert throttle_of([150.0] * 10 + [100.0] * 3 + [150.0] * 40).onset_s == 11.0


def test_per_second_series_from_fio_log_stamps() -> None:
    from thermrig.analysis.throttle import per_second

    # window-end stamps; second 3 missing (the drive moved nothing), a late stamp rounds to its second
    assert per_second([1000, 2000, 4010, 5000], [1.0, 2.0, 4.0, 5.0], start_ms=0) == [1.0, 2.0, 0.0, 4.0, 5.0]
