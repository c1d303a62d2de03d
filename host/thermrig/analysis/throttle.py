"""Throttle onset and depth from a per-second throughput series, as the Puget tables state them:
"throttled by ~X % after ~Y s" (docs/analysis.md, "Initial plateau, onset, depth").

- start: leading seconds with no throughput at all (the drive not yet reached) are skipped;
- plateau: the median of the three seconds after the first second that moved data (that one is partial;
  a host stall in them and the catch-up after it left out, _plateau_past_a_stall);
- onset: seconds from the job's start to the end of the first of SUSTAIN consecutive seconds below
  (1 - DROP) x plateau whose level after (the median of the PLATEAU_S seconds past the first) is below
  it too (one slow second, or a dip back at the plateau, is a hiccup of the host, not a throttle), and
  that is not a host stall (a `stall` judge says so: analysis.attribution, from the drive's own account
  and the host's lateness; the stalls passed over are kept, by their first second);
- onset moment: when the throughput left the plateau, from the throughput lost in the first slow second
  and the one before it (a drop late in a second leaves that second within 10 % of the plateau), taken
  as a step from the plateau to the next second's level (what the temperatures at the onset are read at);
- depth: 100 x (1 - mean of the last TAIL_S seconds / plateau), in percent.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

DROP = 0.10  # a second 10 % under the plateau has left it
TAIL_S = 30  # the throttled level: the mean of the job's last 30 s
SUSTAIN = 2  # seconds in a row under the plateau that make an onset
PLATEAU_S = 3  # seconds whose median is the plateau
CATCH_UP = 2.0  # seconds over the level make up at most this many times what a host stall lost


@dataclass(frozen=True)
class Throttle:
    plateau: float  # throughput before throttling, in the series' unit (0: the job never moved data)
    onset_s: float | None  # None: never left the plateau, or no plateau to leave
    depth_pct: float
    seconds: int
    onset_at_s: float | None = None  # the onset moment: onset_s - 2 <= it <= onset_s
    host_stalls: tuple[int, ...] = ()  # falls before the onset judged host stalls: their first second (1-based)
    host_lost_s: float = 0.0  # the writing time those stalls lost: 1 - x / plateau summed over their seconds


# Is the fall at series index i, from the level given, a stall of the host (not the drive)?
StallJudge = Callable[[int, float], bool]


def throttle_of(series: Sequence[float], reference: float | None = None, stall: StallJudge | None = None) -> Throttle:
    """series[i] = mean throughput over second i + 1 of the job (i = 0 is the first second).

    reference: a plateau known from elsewhere (the best run of the same workload), for a drive that is
    throttled from its first second and so has no plateau of its own to leave.
    stall: judges each fall that would be the onset; one it calls a host stall is passed over."""
    if len(series) < TAIL_S + 5:
        raise ValueError(f"a throttle needs at least {TAIL_S + 5} s of throughput, got {len(series)}")
    first = next((i for i, v in enumerate(series) if v > 0), None)
    if first is None or first + 1 + PLATEAU_S > len(series):
        return Throttle(plateau=0.0, onset_s=None, depth_pct=0.0, seconds=len(series))
    plateau = reference if reference is not None else statistics.median(series[first + 1 : first + 1 + PLATEAU_S])
    if stall is not None and reference is None:
        plateau = _plateau_past_a_stall(series, first, plateau, stall)
    if plateau <= 0:
        return Throttle(plateau=0.0, onset_s=None, depth_pct=0.0, seconds=len(series))
    line = (1 - DROP) * plateau
    low = [v < line for v in series]
    begin = first if reference is not None else first + 1  # against a reference even the first second counts
    first_low: int | None = None
    stalls: list[int] = []
    last_stalled = -2
    lost = 0.0
    for i in range(begin, len(low) - SUSTAIN + 1):
        if not low[i]:
            continue
        if stall is not None and stall(i, plateau):  # the host's: passed over, by its first second
            if i != last_stalled + 1:  # else the second before was this stall's too
                stalls.append(i + 1)
            last_stalled = i
            lost += max(0.0, 1.0 - series[i] / plateau)
            continue
        if all(low[i : i + SUSTAIN]) and level_after(series, i) < line:
            first_low = i
            break
    tail = series[-TAIL_S:]
    depth = 100.0 * (1.0 - sum(tail) / len(tail) / plateau)
    if first_low is None:
        return Throttle(plateau, None, depth, len(series), host_stalls=tuple(stalls), host_lost_s=lost)
    at = step_moment(series, max(begin, first_low - 1), first_low, plateau)
    return Throttle(
        plateau, first_low + 1.0, depth, len(series), onset_at_s=at, host_stalls=tuple(stalls), host_lost_s=lost
    )


def _plateau_past_a_stall(series: Sequence[float], first: int, plateau: float, stall: StallJudge) -> float:
    """The plateau when the host stalled in its seconds (every one of them under the line of the level
    of the first 2 x PLATEAU_S + 1 seconds is a stall the judge calls the host's): the median of those
    seconds less the stalls and their catch-up. The median, not the best seconds: after a stall a
    rate-limited fio and the drive's catch-up (docs/virtual-drive.md, "Bursts") move more than the level
    for a second or two, and a plateau of such seconds leaves every second at fio's own rate under its
    line. The catch-up is the seconds over (1 + DROP) x the level when they make up no more than
    CATCH_UP x what the stalls lost (more is a level the drive left early, not a catch-up)."""
    window = range(first + 1, min(len(series), first + 2 + 2 * PLATEAU_S))
    level = statistics.median(series[j] for j in window)
    line, over = (1 - DROP) * level, (1 + DROP) * level
    slow = [j for j in window[:PLATEAU_S] if series[j] < line]
    if not slow:
        return plateau
    stalled = {j for j in window if series[j] < line and stall(j, level)}
    if not stalled.issuperset(slow):
        return plateau
    high = {j for j in window if series[j] > over}
    lost = sum(level - series[j] for j in stalled)
    catch_up = high if sum(series[j] - level for j in high) <= CATCH_UP * lost else set()
    if plateau >= line and not catch_up:
        return plateau
    kept = [series[j] for j in window if j not in stalled and j not in catch_up]
    return statistics.median(kept) if kept else plateau


def level_after(series: Sequence[float], i: int, seconds: int = PLATEAU_S) -> float:
    """The level after a fall at second i: the median of the `seconds` seconds past it (second i mixes
    the levels before and after)."""
    return statistics.median(series[i + 1 : i + 1 + seconds] or series[i:])


def step_moment(series: Sequence[float], since: int, slow: int, plateau: float) -> float:
    """When a step from `plateau` to the level of the second after `slow` would lose the throughput seconds
    `since`..`slow` lost: seconds from the series' start, between `since` and the end of `slow`."""
    after = series[slow + 1]
    if plateau <= after:
        return float(slow)
    lost = sum(max(0.0, plateau - v) for v in series[since : slow + 1]) / (plateau - after)
    return min(slow + 1.0, max(float(since), slow + 1.0 - lost))


def per_second(stamps_ms: Sequence[int], values: Sequence[float], start_ms: int | None = None) -> list[float]:
    """fio's per-second log (window-end stamps) as a series from the job's start; a missing second
    counts as zero (the drive moved nothing)."""
    if not stamps_ms:
        return []
    start = start_ms if start_ms is not None else stamps_ms[0] - 1000
    out: list[float] = []
    for t, v in zip(stamps_ms, values, strict=True):
        i = max(0, round((t - start) / 1000.0) - 1)
        while len(out) < i:
            out.append(0.0)
        if len(out) == i:
            out.append(float(v))
    return out


FALL = 0.08  # a drop: a light throttle state can cap writes by as little as 10 %
HOLD = 2  # seconds below, in a row
SETTLE_S = 3


@dataclass(frozen=True)
class Fall:
    at: int  # the index of its first second below
    level: float  # the median of the SETTLE_S seconds before it that were no host stall ...
    before: tuple[int, ...]  # ... these seconds
    host: bool = False  # every second of it below the level the host's (the stall judge says so)


def find_falls(series: Sequence[float], stall: StallJudge | None = None) -> list[Fall]:
    """The falls of the throughput by more than FALL for HOLD seconds whose level after stays down: a
    dip back at the level within the seconds after is the host (fio starved of CPU on a loaded machine),
    not the drive. After one, the next is looked for once the level has settled.

    stall: judges each second of a fall (analysis.attribution); a fall whose every second below the level
    it calls the host's is a fall too (host=True), but the seconds after it are looked at at once, against
    the level before it: a busy host can starve fio a second or two before a cache runs out, and the
    drive's own fall must not be hidden in the host's."""
    falls: list[Fall] = []
    stalled: set[int] = set()
    i = SETTLE_S
    while i + HOLD <= len(series):
        before = tuple(j for j in range(i) if j not in stalled)[-SETTLE_S:]
        level = statistics.median(series[j] for j in before) if before else 0.0
        low = (1 - FALL) * level
        if level > 0 and all(series[i + k] < low for k in range(HOLD)) and level_after(series, i, SETTLE_S) < low:
            end = _stall_end(series, i, low, level, stall)
            falls.append(Fall(i, level, before, host=end is not None))
            if end is not None:
                stalled.update(range(i, end))
                i = end
            else:
                i += HOLD + SETTLE_S
        else:
            i += 1
    return falls


def _stall_end(series: Sequence[float], i: int, low: float, level: float, stall: StallJudge | None) -> int | None:
    """Past the last second of the fall at i when every one of its seconds below `low` is a host stall;
    None when one is not (or nothing judges)."""
    if stall is None:
        return None
    j = i
    while j < len(series) and series[j] < low:
        if not stall(j, level):
            return None
        j += 1
    return j


def find_drops(series: Sequence[float]) -> list[int]:
    """The seconds (indices) the falls of find_falls begin at, no stall judged."""
    return [fall.at for fall in find_falls(series)]
