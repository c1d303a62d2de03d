"""A panel's InfluxQL as Grafana's InfluxDB data source sends it to /query (InfluxQL mode, raw queries):

- template variables ($name) by the data source's interpolateQueryExpr: a single-valued variable (neither
  multi nor include-all) is regex-escaped unless it reads as a number (influxRegularEscape: @grafana/data's
  escapeRegex, `\\` before each of \\ ^ $ * + ? . ( ) | [ ] { } /); a multi-valued one escapes each value
  (influxSpecialRegexEscape) and joins them with | inside ( ), as `/^(a|b)$/` needs;
- $timeFilter by the backend's renderTimeFilter: `time >= <from>ms and time <= <to>ms`, epoch milliseconds;
- $__interval, $interval, $__interval_ms by the backend: the range over the panel's max data points (its
  width in pixels), rounded as gtime's roundInterval rounds it, written as FormatInterval writes it (`500ms`,
  `2s`, `1m`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_REGEX_SPECIALS = re.compile(r"[\\^$*+?.()|\[\]{}/]")
_SPECIAL_REGEX = re.compile(r"[$^*{}\[\]'+?.()|]")

# roundInterval's steps: (up to this many ms, round to this many ms)
_STEPS_MS = (
    (10, 1), (15, 10), (35, 20), (75, 50), (150, 100), (350, 200), (750, 500), (1_500, 1_000), (3_500, 2_000),
    (7_500, 5_000), (12_500, 10_000), (17_500, 15_000), (25_000, 20_000), (45_000, 30_000), (90_000, 60_000),
    (210_000, 120_000), (450_000, 300_000), (750_000, 600_000), (1_050_000, 900_000), (1_500_000, 1_200_000),
    (2_700_000, 1_800_000), (5_400_000, 3_600_000), (9_000_000, 7_200_000), (16_200_000, 10_800_000),
)  # fmt: skip


@dataclass(frozen=True)
class Variable:
    name: str
    values: tuple[str, ...]  # the selected value(s)
    multi: bool = False
    include_all: bool = False


def _number(value: str) -> bool:
    """JavaScript's !isNaN(parseFloat(value)): a leading decimal number."""
    return re.match(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", value) is not None or value.strip().startswith(
        ("Infinity", "+Infinity", "-Infinity")
    )


def variable_text(var: Variable) -> str:
    """What interpolateQueryExpr puts in place of $name."""
    if not var.multi and not var.include_all:
        [value] = var.values
        return value if _number(value) else _REGEX_SPECIALS.sub(lambda m: "\\" + m.group(0), value)
    escaped = [_SPECIAL_REGEX.sub(lambda m: "\\" + m.group(0), v.replace("\\", "\\\\")) for v in var.values]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"


def round_interval_ms(ms: float) -> int:
    for limit, step in _STEPS_MS:
        if ms <= limit:
            return step
    return 3_600_000 * max(1, math.floor(ms / 3_600_000))


def format_interval(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000)):
        if ms >= size:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def fill(query: str, variables: list[Variable], from_ms: int, to_ms: int, max_data_points: int) -> str:
    """The query Grafana sends for this range, these variables and a panel this many pixels wide."""
    for var in sorted(variables, key=lambda v: -len(v.name)):  # $run before a $r, as the longest name matches
        text = variable_text(var)
        query = re.sub(rf"\$(?:{var.name}\b|\{{{var.name}\}})|\[\[{var.name}\]\]", lambda _m, t=text: t, query)
    interval = round_interval_ms((to_ms - from_ms) / max_data_points)
    query = query.replace("$timeFilter", f"time >= {from_ms}ms and time <= {to_ms}ms")
    query = query.replace("$interval", format_interval(interval))
    query = query.replace("$__interval_ms", str(interval))
    return query.replace("$__interval", format_interval(interval))
