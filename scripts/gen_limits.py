"""The rig's limits and timings, declared once in firmware/core/rig_limits.toml, written into the marked
block of each file that uses them: the C core's rig_config.h, the MicroPython firmware's config.py and
the host's protocol/limits.py (in the host's units). Everything outside the blocks is left as it is.

    python3 scripts/gen_limits.py           # rewrite the blocks that differ (make limits)
    python3 scripts/gen_limits.py --check   # write nothing: exit 1 naming each stale file, with its diff

The generated files are checked in, so that no firmware build needs Python; tests/python/test_constants.py
runs the check.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import textwrap
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
DECLARATION = "firmware/core/rig_limits.toml"
C_HEADER = "firmware/core/rig_config.h"
MP_CONFIG = "firmware/micropython/thermrig_fw/config.py"
HOST_LIMITS = "host/thermrig/protocol/limits.py"
BEGIN = f"BEGIN generated from {DECLARATION} by scripts/gen_limits.py (make limits)"
END = "END generated"
WIDTH = 108  # the longest comment line written

# A name's unit suffix and the unit the declaration must give it (the longest suffix that fits wins).
SUFFIX_UNITS = {
    "_CC_S": "centi-degC*s",
    "_CC": "centi-degC",
    "_MS": "ms",
    "_S": "s",
    "_PM": "permille",
    "_RPM": "rpm",
}
LIMIT_KEYS = {"name", "value", "unit", "unsigned", "note", "mp", "host"}


class LimitsError(Exception):
    """The declaration is not what the generator can write, or a target has lost its markers."""


class Limit(NamedTuple):
    name: str  # the firmware's (C: RIG_ + name)
    value: int | float  # in the firmware's unit
    unit: str
    unsigned: bool
    note: str
    mp_name: str
    mp_value: int
    host_name: str | None  # None: the host has no copy
    host_value: int | float | None


class Group(NamedTuple):
    about: str
    host_about: str
    limits: tuple[Limit, ...]


def _expect(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise LimitsError(f"{DECLARATION}: {where}: {what}")


def _table(raw: Any, where: str, keys: set[str]) -> dict[str, Any]:
    _expect(isinstance(raw, dict), where, "expected a table")
    unknown = sorted(set(raw) - keys)
    _expect(not unknown, where, f"unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(keys))})")
    return raw


def _text(raw: dict[str, Any], key: str, where: str) -> str:
    value = raw.get(key, "")
    _expect(isinstance(value, str), where, f"{key} must be a string")
    return " ".join(value.split())


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _limit(raw: dict[str, Any], values: dict[str, int | float]) -> Limit:
    name = raw.get("name")
    _expect(isinstance(name, str) and name.isidentifier() and name.isupper(), str(name), "name must be UPPER_CASE")
    value = raw.get("value")
    _expect(_number(value), name, "value must be a number")
    unit = _text(raw, "unit", name)
    _expect(bool(unit), name, "unit is missing")
    suffix = next((s for s in sorted(SUFFIX_UNITS, key=len, reverse=True) if name.endswith(s)), None)
    _expect(suffix is None or SUFFIX_UNITS[suffix] == unit, name, f"a {suffix} name is in {SUFFIX_UNITS.get(suffix)}")
    unsigned = raw.get("unsigned", False)
    _expect(isinstance(unsigned, bool), name, "unsigned must be true or false")
    _expect(not unsigned or (isinstance(value, int) and value >= 0), name, "only a whole value >= 0 is unsigned")

    mp = _table(raw.get("mp", {}), f"{name}.mp", {"name", "multiply"})
    mp_name = mp.get("name", name)
    multiply = mp.get("multiply", 1)
    _expect(isinstance(mp_name, str) and mp_name.isidentifier(), name, "mp.name must be a name")
    _expect(isinstance(multiply, int) and multiply > 0, name, "mp.multiply must be a whole number > 0")
    mp_exact = value * multiply
    _expect(mp_exact == int(mp_exact), name, "the MicroPython firmware has integers only: give mp.multiply")

    host_name: str | None = None
    host_value: int | float | None = None
    if "host" in raw:
        host = _table(raw["host"], f"{name}.host", {"name", "divide", "type"})
        host_name = host.get("name")
        _expect(isinstance(host_name, str) and host_name.isidentifier(), name, "host.name must be a name")
        divide = host.get("divide", 1)
        if isinstance(divide, str):
            _expect(divide in values, name, f"host.divide names {divide}, which is not declared above it")
            divide = values[divide]
        _expect(_number(divide) and divide > 0, name, "host.divide must be a number > 0 or a limit's name")
        kind = host.get("type", "float" if isinstance(value, float) or divide != 1 else "int")
        _expect(kind in ("int", "float"), name, 'host.type is "int" or "float"')
        _expect(kind == "float" or (divide == 1 and isinstance(value, int)), name, "an int host value is not scaled")
        host_value = value / divide if kind == "float" else value
    return Limit(name, value, unit, unsigned, _text(raw, "note", name), mp_name, int(mp_exact), host_name, host_value)


def load(path: Path) -> list[Group]:
    """The declaration's groups, each limit checked (names once, units, what each language can hold)."""
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise LimitsError(f"{DECLARATION}: not valid TOML: {err}") from err
    _table(data, "top level", {"group"})
    groups: list[Group] = []
    values: dict[str, int | float] = {}
    for n, raw_group in enumerate(data.get("group", []), 1):
        group = _table(raw_group, f"group {n}", {"about", "host_about", "limit"})
        _expect(bool(group.get("limit")), f"group {n}", "has no [[group.limit]]")
        limits = []
        for raw in group["limit"]:
            where = str(raw.get("name", f"group {n}")) if isinstance(raw, dict) else f"group {n}"
            limit = _limit(_table(raw, where, LIMIT_KEYS), values)
            _expect(limit.name not in values, limit.name, "declared twice")
            values[limit.name] = limit.value
            limits.append(limit)
        groups.append(
            Group(_text(group, "about", f"group {n}"), _text(group, "host_about", f"group {n}"), tuple(limits))
        )
    for attr in ("mp_name", "host_name"):
        names = [getattr(limit, attr) for g in groups for limit in g.limits if getattr(limit, attr)]
        twice = sorted({x for x in names if names.count(x) > 1})
        _expect(not twice, "names", f"{', '.join(twice)} given to two limits ({attr})")
    return groups


# Each language's rendering: a comment paragraph, a limit's line (note apart), a trailing note.


def _comment(text: str, first: str, rest: str, last: str = "") -> list[str]:
    lines = textwrap.wrap(text, WIDTH - len(first) - len(last), break_on_hyphens=False, break_long_words=False)
    lines[-1] += last
    return [first + lines[0]] + [rest + line for line in lines[1:]]


def _c_value(limit: Limit) -> str:
    if isinstance(limit.value, float):
        return f"{limit.value!r}f"
    if limit.unsigned:
        return f"{limit.value}u"
    return f"({limit.value})" if limit.value < 0 else str(limit.value)


def render_c(groups: list[Group]) -> list[str]:
    out = [f"/* {BEGIN} */"]
    for n, group in enumerate(groups):
        out += [""] if n else []
        if group.about:
            out += _comment(group.about, "/* ", " * ", " */")
        lines = [f"#define RIG_{limit.name} {_c_value(limit)}" for limit in group.limits]
        width = max((len(line) for line, limit in zip(lines, group.limits, strict=True) if limit.note), default=0)
        for line, limit in zip(lines, group.limits, strict=True):
            out.append(f"{line.ljust(width)} /* {limit.note} */" if limit.note else line)
    return [*out, f"/* {END} */"]


def render_mp(groups: list[Group]) -> list[str]:
    out = [f"# {BEGIN}"]
    for n, group in enumerate(groups):
        out += [""] if n else []
        if group.about:
            out += _comment(group.about, "# ", "# ")
        for limit in group.limits:
            line = f"{limit.mp_name} = const({limit.mp_value})"
            out.append(f"{line}  # {limit.note}" if limit.note else line)
    return [*out, f"# {END}"]


def render_host(groups: list[Group]) -> list[str]:
    out = [f"# {BEGIN}"]
    for group in groups:
        limits = [limit for limit in group.limits if limit.host_name is not None]
        if not limits:
            continue
        out += [""] if len(out) > 1 else []
        about = " ".join(filter(None, (group.about, group.host_about)))
        if about:
            out += _comment(about, "# ", "# ")
        for limit in limits:
            line = f"{limit.host_name} = {limit.host_value!r}"
            out.append(f"{line}  # {limit.note}" if limit.note else line)
    return [*out, f"# {END}"]


TARGETS: dict[str, Callable[[list[Group]], list[str]]] = {
    C_HEADER: render_c,
    MP_CONFIG: render_mp,
    HOST_LIMITS: render_host,
}


def regenerated(text: str, block: list[str], where: str) -> str:
    """`text` with the lines from its BEGIN marker to its END marker replaced by `block`."""
    lines = text.splitlines(keepends=True)
    begins = [i for i, line in enumerate(lines) if BEGIN in line]
    ends = [i for i, line in enumerate(lines) if line.strip() in (f"/* {END} */", f"# {END}")]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise LimitsError(f"{where}: expected one line with {BEGIN!r}, then one {END!r} line")
    return "".join(lines[: begins[0]] + [line + "\n" for line in block] + lines[ends[0] + 1 :])


def generate(root: Path = ROOT) -> dict[str, tuple[str, str]]:
    """Each target's path (relative to `root`): its text now, and the text the declaration gives it."""
    groups = load(root / DECLARATION)
    texts = {}
    for rel, render in TARGETS.items():
        now = (root / rel).read_text()
        texts[rel] = (now, regenerated(now, render(groups), rel))
    return texts


def stale(root: Path = ROOT) -> list[str]:
    """The targets (relative paths) whose generated block is not what the declaration gives."""
    return [rel for rel, (now, wanted) in generate(root).items() if now != wanted]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale file")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this one)")
    args = parser.parse_args(argv)
    try:
        texts = generate(args.root)
    except (LimitsError, OSError) as err:
        print(f"gen_limits: {err}", file=sys.stderr)
        return 2
    changed = [rel for rel, (now, wanted) in texts.items() if now != wanted]
    for rel in changed:
        now, wanted = texts[rel]
        if args.check:
            diff = difflib.unified_diff(now.splitlines(True), wanted.splitlines(True), rel, f"{rel} (generated)")
            sys.stderr.writelines(diff)
            print(f"{rel}: stale, not what {DECLARATION} gives (`make limits` rewrites it)", file=sys.stderr)
        else:
            (args.root / rel).write_text(wanted)
            print(f"gen_limits: wrote {rel}")
    if not changed and not args.check:
        print(f"gen_limits: up to date with {DECLARATION}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
