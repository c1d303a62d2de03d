"""The plant keeps wall time at 1x, the pace it runs at while fio writes to the virtual drive: a stall of
its thread (a busy machine) is caught up at no more than twice the pace, so the firmware's clock and the
drive's throttle are back on fio's clock once it is over; a stall past GIVE_UP_S is given up, lost, and
the plant's own lateness says so. Faster than real time a stall is lost at once. A real firmware
(rigsim) on the wires; the stall is a tick hook that sleeps once on the plant's thread."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from waiting import wait_for

from thermrig.dut.pacing import Pacing
from thermrig.sim.plant import Plant
from thermrig.sim.server import CATCH_UP, GIVE_UP_S
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.sim.wires import TICK_S

SETTLE_TICKS = 20  # ticks served on schedule before the stall: the plant's offset from wall time


@dataclass
class StallOnce:
    """A tick hook: records each tick's wall time less its plant time in wall seconds at `speed`, and
    sleeps `seconds` once, at tick `at`."""

    at: int
    seconds: float
    speed: float = 1.0
    offsets: list[tuple[float, float]] = field(default_factory=list)  # (wall time, wall - plant time)
    stalled_until: float = 0.0
    done: threading.Event = field(default_factory=threading.Event)

    def __call__(self, plant: Plant) -> None:
        now = time.monotonic()
        self.offsets.append((now, now - plant.t / self.speed))
        if len(self.offsets) == self.at:
            time.sleep(self.seconds)
            self.stalled_until = time.monotonic()
            self.done.set()

    def wait_ticks_after_stall(self, seconds: float, timeout: float = 60.0) -> None:
        """Wait (as long as the machine needs) until ticks `seconds` of wall time after the stall were served."""
        assert self.done.wait(timeout), "the plant never reached the stall"
        served = wait_for(lambda: self.offsets[-1][0] >= self.stalled_until + seconds, timeout)
        assert served, "the plant stopped serving ticks"


def _stalled(
    seconds: float, watch_s: float, speed: float = 1.0, caught_up: float | None = None
) -> tuple[StallOnce, float]:
    """The plant at `speed` stalled once for `seconds`, watched `watch_s` on (and, given caught_up, until
    a tick came less than that behind its schedule, however long a loaded machine takes); and its offset
    on schedule."""
    with SimulatedRig(SimConfig(pacing=Pacing.accelerated(speed))) as sim:
        assert sim.server is not None
        stall = StallOnce(at=sim.server.ticks + SETTLE_TICKS, seconds=seconds, speed=speed)
        sim.server.hooks.append(stall)
        stall.wait_ticks_after_stall(watch_s)
        on_schedule = min(offset for _, offset in stall.offsets[: SETTLE_TICKS - 1])
        if caught_up is not None:
            wait_for(lambda: stall.offsets[-1][1] - on_schedule < caught_up, 60)
    return stall, on_schedule


def test_a_stalled_plant_catches_up_with_wall_time_at_twice_its_pace_at_most() -> None:
    stall, on_schedule = _stalled(0.8, watch_s=1.0, caught_up=0.1)
    after = [(t, offset - on_schedule) for t, offset in stall.offsets if t > stall.stalled_until]
    behind = after[0][1]  # the stall less the tick the plant moved on meanwhile
    assert behind >= 0.8 - TICK_S - 0.02, "the stall put the plant behind wall time"
    caught_up = next((t for t, late in after if late < 0.1), None)
    assert caught_up is not None, f"still {after[-1][1]:.2f} s behind {after[-1][0] - stall.stalled_until:.1f} s on"
    # At CATCH_UP times the pace it gains (CATCH_UP - 1) s a second: never sooner (load only slows it).
    assert caught_up - stall.stalled_until >= (behind - 0.1) / (CATCH_UP - 1) - 0.1


def test_a_plant_stalled_past_the_give_up_stays_behind_and_its_lateness_says_so() -> None:
    with SimulatedRig(SimConfig(pacing=Pacing.accelerated(1.0))) as sim:
        assert sim.server is not None
        stall = StallOnce(at=sim.server.ticks + SETTLE_TICKS, seconds=GIVE_UP_S + 0.5)
        sim.server.hooks.append(stall)
        stall.wait_ticks_after_stall(2.0)
        late_s = sim.server.take_worst_late_s()
    on_schedule = min(offset for _, offset in stall.offsets[: SETTLE_TICKS - 1])
    after = [offset - on_schedule for t, offset in stall.offsets if t > stall.stalled_until + 1.0]
    assert after and min(after) >= GIVE_UP_S, "the time lost past the give-up is not made up"
    assert late_s >= GIVE_UP_S, "the plant's lateness records the time it lost"


def test_faster_than_real_time_a_stalled_plant_does_not_race_to_catch_up() -> None:
    stall, on_schedule = _stalled(0.5, watch_s=1.0, speed=10.0)
    after = [offset - on_schedule for t, offset in stall.offsets if t > stall.stalled_until + 0.2]
    assert after and min(after) >= 0.45, "at 10x the stalled time is lost, not served in a burst"
