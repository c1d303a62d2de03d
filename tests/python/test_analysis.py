"""Step-response figures and the clock fit, on series with known answers."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

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
