"""A chassis heat profile as a time series: seconds and chassis-air temperature (°C), read from a CSV
file (`trace = "FILE.csv"` in a profile's table) or taken from the chassis air of a run recorded in
InfluxDB (`trace = "influx:RUN_ID"`, read by campaign/recorded_trace.py), which the rig follows as its air
target during a run.

The CSV: one `seconds,air_c` pair a line, seconds rising from 0; a header line and `#` comment lines
are allowed. Between points the target is interpolated linearly; after the last it stays there."""

from __future__ import annotations

import bisect
import csv
import itertools
from dataclasses import dataclass
from pathlib import Path

from thermrig.hardware.profiles import ProfileError

AIR_LIMITS_C = (0.0, 65.0)  # as a profile's air_c: the rig's own limits stay in its firmware
RECORDED = "influx:"  # trace = "influx:RUN_ID": the chassis air of a recorded run


@dataclass(frozen=True)
class ChassisTrace:
    source: str  # the CSV file, or "influx:RUN_ID"
    seconds: tuple[float, ...]
    air_c: tuple[float, ...]

    @property
    def duration_s(self) -> float:
        return self.seconds[-1]

    def at(self, t: float) -> float:
        """The air target t seconds into the trace (the first value before 0, the last after the end)."""
        if t <= self.seconds[0]:
            return self.air_c[0]
        i = bisect.bisect_right(self.seconds, t)
        if i >= len(self.seconds):
            return self.air_c[-1]
        t0, t1 = self.seconds[i - 1], self.seconds[i]
        a0, a1 = self.air_c[i - 1], self.air_c[i]
        return a0 + (a1 - a0) * (t - t0) / (t1 - t0)


def read_trace(path: Path) -> ChassisTrace:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read the chassis trace: {exc.strerror}") from exc
    seconds: list[float] = []
    air: list[float] = []
    header_allowed = True
    for number, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or not row[0].strip() or row[0].lstrip().startswith("#"):
            continue
        try:
            if len(row) < 2:
                raise ValueError
            t, a = float(row[0]), float(row[1])
        except ValueError as exc:
            if header_allowed:
                header_allowed = False
                continue  # the header
            raise ProfileError(f"{path}:{number}: {','.join(row)!r}: expected seconds,air_c (numbers)") from exc
        header_allowed = False
        if not AIR_LIMITS_C[0] <= a <= AIR_LIMITS_C[1]:
            raise ProfileError(f"{path}:{number}: air {a} °C: expected 0 to 65 °C (the rig's limit)")
        if (seconds and t <= seconds[-1]) or (not seconds and t != 0):
            raise ProfileError(f"{path}:{number}: seconds {t}: expected rising seconds from 0")
        seconds.append(t)
        air.append(a)
    if len(seconds) < 2:
        raise ProfileError(f"{path}: a chassis trace needs at least two points (seconds,air_c)")
    return ChassisTrace(str(path), tuple(seconds), tuple(air))


def trace_of(source: str, seconds: list[float], air_c: list[float]) -> ChassisTrace:
    """A trace from a series (a recorded run's chassis air), held to the CSV's rules: seconds rising from
    0, at least two points, every target within the rig's 0-65 °C."""
    if len(seconds) < 2 or len(seconds) != len(air_c):
        raise ProfileError(f"{source}: a chassis trace needs at least two points")
    if seconds[0] != 0 or any(b <= a for a, b in itertools.pairwise(seconds)):
        raise ProfileError(f"{source}: expected rising seconds from 0")
    if bad := [a for a in air_c if not AIR_LIMITS_C[0] <= a <= AIR_LIMITS_C[1]]:
        raise ProfileError(f"{source}: air {bad[0]:g} °C: expected 0 to 65 °C (the rig's limit)")
    return ChassisTrace(source, tuple(seconds), tuple(air_c))
