"""The time sync on a clock paced by a simulation: a staircase of 100 ms ticks at 20x, then 1x from a
tick on (a campaign's workload), told to the sync as the simulated rig tells it. Synthetic exchanges
with known truth: every stamp is judged against the tick's true host time."""

from __future__ import annotations

import random
from itertools import pairwise

from thermrig.link.timesync import ClockPace, SyncSample, TimeSync

STEP_US = 100_000
T0 = 1_700_000_000.0


class PacedClock:
    """Ticks of STEP_US of MCU time, each served at a host time; the uptime reads the last tick's."""

    def __init__(self, speed: float) -> None:
        self.ticks: list[tuple[int, float]] = [(5_000_000, T0)]  # (uptime us, host time served)
        self.speed = speed

    def run_until(self, host: float) -> None:
        while True:
            up, at = self.ticks[-1]
            nxt = at + STEP_US * 1e-6 / self.speed
            if nxt > host:
                return
            self.ticks.append((up + STEP_US, nxt))

    def reads(self, host: float) -> int:
        self.run_until(host)
        return self.ticks[-1][0]

    def served(self, up: int) -> float:
        return next(at for u, at in self.ticks if u == up)


def exchange(clock: PacedClock, send: float, rng: random.Random) -> SyncSample:
    arrive = send + 0.0002 + rng.expovariate(1 / 0.0003)
    return SyncSample(send, clock.reads(arrive), arrive + 0.0002 + rng.expovariate(1 / 0.0003))


def test_stamps_follow_a_speed_change_from_its_first_tick_and_never_run_backwards() -> None:
    rng = random.Random(7)
    clock = PacedClock(20.0)
    sync = TimeSync(pace=ClockPace(1 / 20, STEP_US))
    host = T0
    while host < T0 + 3.0:  # 3 s at 20x, pinged every 25 ms (a campaign's keepalive at 20x)
        sync.add(exchange(clock, host, rng))
        host += 0.025 + rng.uniform(0, 0.002)
    # The speed changes at the next tick: the simulation tells the sync once the firmware has it.
    clock.run_until(host)
    knot_at = clock.ticks[-1][1] + STEP_US * 1e-6 / 20
    clock.run_until(knot_at)
    clock.speed = 1.0
    changed = knot_at + 0.0003
    sync.set_pace(ClockPace(1.0, STEP_US), changed)
    host = changed + 0.0001
    stamps = []
    stamped_up = clock.ticks[-40][0]  # the recorder is a few frames behind
    while host < changed + 3.0:
        sync.add(exchange(clock, host, rng))
        host += 0.002 if host < changed + 0.25 else 0.025 + rng.uniform(0, 0.002)  # the burst, then keepalive
        while stamped_up <= clock.ticks[-1][0]:  # frames as they come out, stamped with the fit of now
            stamps.append((stamped_up, sync.stamp(stamped_up)))
            stamped_up += STEP_US
    assert all(b[1] > a[1] for a, b in pairwise(stamps)), "telemetry time ran backwards"
    errors_ms = {up: abs(utc - clock.served(up)) * 1e3 for up, utc in stamps}
    knot_up = next(u for u, at in clock.ticks if at >= knot_at)
    at_one_x = [e for up, e in errors_ms.items() if up > knot_up]
    assert len(at_one_x) >= 25
    assert max(at_one_x[:10]) < 5.0, f"the first second at 1x: {at_one_x[:10]}"
    assert max(at_one_x) < 5.0
    assert max(e for up, e in errors_ms.items() if up <= knot_up) < 5.0  # the frames before keep their fit


def test_a_clock_of_its_own_is_fitted_as_before() -> None:
    sync = TimeSync()
    for i in range(10):
        sync.add(SyncSample(T0 + i, 1_000_000 + i * 1_000_000, T0 + i + 0.001))
    assert sync.fit is not None and abs(sync.to_utc(1_000_000) - (T0 + 0.0005)) < 1e-6
    sync.set_pace(ClockPace(None, 0), T0 + 10)  # the same (free) pace: nothing restarts
    assert sync.fit.samples == 10
