"""Typed reading of thermrig's TOML files (campaigns, hardware profiles, chassis profiles, drives): every
error names the file, the line, the [section] and key, and what was expected."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from thermrig.errors import ThermrigError


class TomlError(ThermrigError, ValueError):
    """A TOML file that cannot be read or holds a bad value; the message locates it."""


class TomlFile:
    """A parsed TOML file (data) with typed access whose errors point into it. error: the class to raise
    (each kind of file has its own; the user's configuration raises ConfigError)."""

    def __init__(self, path: Path, text: str, data: dict[str, Any], error: type[ThermrigError] = TomlError) -> None:
        self.path = path
        self.lines = text.splitlines()
        self.data = data
        self.error = error

    @classmethod
    def read(cls, path: Path, error: type[ThermrigError] = TomlError, missing: str = "") -> TomlFile:
        """missing: what to tell the user when the file is not there."""
        try:
            text = path.read_text()
        except FileNotFoundError as exc:
            if missing:
                raise error(f"{path}: not found ({missing})") from exc
            raise error(f"{path}: cannot read: {exc.strerror}") from exc
        except OSError as exc:
            raise error(f"{path}: cannot read: {exc.strerror}") from exc
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise error(f"{path}: not valid TOML: {exc}") from exc
        return cls(path, text, data, error)

    def line_of(self, section: str, key: str | None = None, occurrence: int = 0) -> int:
        """The line of [section] (or of its occurrence-th [[section]]), or of key within it."""
        header = re.compile(rf"^\s*\[\[?\s*{re.escape(section)}\s*\]\]?\s*$")
        seen, start = -1, None
        for i, line in enumerate(self.lines):
            if header.match(line):
                seen += 1
                if seen == occurrence:
                    start = i
                    break
        if start is None:
            return 1
        if key is None:
            return start + 1
        for i in range(start + 1, len(self.lines)):
            if self.lines[i].lstrip().startswith("["):
                break
            if re.match(rf"^\s*{re.escape(key)}\s*=", self.lines[i]):
                return i + 1
        return start + 1

    def located(self, section: str, key: str | None, message: str, occurrence: int = 0) -> ThermrigError:
        """An error "<file>:<line>: [section] message", at the key's line when there is one."""
        return self.error(f"{self.path}:{self.line_of(section, key, occurrence)}: [{section}] {message}")

    def fail(self, section: str, key: str | None, problem: str, expected: str, occurrence: int = 0) -> ThermrigError:
        """An error "<file>:<line>: [section] key: problem; expected ...", for campaign files."""
        where = f" {key}" if key else ""
        line = self.line_of(section, key, occurrence)
        return self.error(f"{self.path}:{line}: [{section}]{where}: {problem}; expected {expected}")

    def get(
        self,
        table: dict,
        section: str,
        key: str,
        kind: type | tuple[type, ...],
        expected: str,
        default: Any = ...,
        occurrence: int = 0,
        *,
        at_least: float | None = None,
        at_most: float | None = None,
        above: float | None = None,
        choices: Iterable[str] | None = None,
        pattern: re.Pattern[str] | None = None,
    ) -> Any:
        """table[key] of the given type(s) (a float kind takes whole numbers too, as floats), within its
        bounds: at_least <= value <= at_most and value > above for a number, one of choices or a full match
        of pattern for text. Absent: default, which is not checked (no default: required). expected: what
        the user is told, bounds included."""
        if key not in table:
            if default is ...:
                raise self.fail(section, None, f"{key} is missing", expected, occurrence)
            return default
        value = table[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in kinds):
            raise self.fail(section, key, f"{value!r} is a {type(value).__name__}", expected, occurrence)
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        outside = (
            (at_least is not None and value < at_least)
            or (at_most is not None and value > at_most)
            or (above is not None and value <= above)
        )
        if outside:
            raise self.fail(section, key, f"{value}", expected, occurrence)
        if choices is not None and value not in tuple(choices):
            raise self.fail(section, key, repr(value), expected, occurrence)
        if pattern is not None and not pattern.fullmatch(value):
            raise self.fail(section, key, f"{value!r} has spaces or symbols", expected, occurrence)
        return value

    def choice(self, table: dict, section: str, key: str, choices: tuple[str, ...], occurrence: int = 0) -> str:
        """One of choices; the first when absent."""
        expected = f"one of {', '.join(choices)}"
        value: str = self.get(table, section, key, str, expected, choices[0], occurrence, choices=choices)
        return value

    def number(self, table: dict, section: str, key: str, lo: float, hi: float, default: Any = ...) -> float:
        """A number within [lo, hi]; default when absent (no default: required)."""
        if key not in table:
            if default is ...:
                raise self.located(section, None, f"lacks {key}")
            return float(default)
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
            raise self.located(section, key, f"{key} = {value!r}, expected a number in [{lo}, {hi}]")
        return float(value)

    def text(self, table: dict, section: str, key: str) -> str:
        """A non-empty string."""
        value = table.get(key)
        if not isinstance(value, str) or not value:
            raise self.located(section, key, f"{key} must be a non-empty string")
        return value

    def section(self, name: str, choices: tuple[str, ...] | None = None) -> dict:
        """A top-level table; choices: the names to offer when it is missing (default: the file's)."""
        table = self.data.get(name)
        if not isinstance(table, dict):
            known = ", ".join(choices or tuple(self.data))
            raise self.error(f"{self.path}: no section [{name}] (known: {known})")
        return table

    def known(self, table: dict, section: str, allowed: set[str], occurrence: int = 0) -> None:
        """Refuse keys that are not in allowed (a typo would otherwise be ignored)."""
        for key in table:
            if key not in allowed:
                raise self.fail(
                    section, key, f"unknown key {key!r}", f"one of {', '.join(sorted(allowed))}", occurrence
                )
