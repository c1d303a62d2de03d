"""One check's outcome, with the figure it measured."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from thermrig.conformance.rig_under_test import RigUnderTest


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool | None  # None: skipped
    figure: str
    detail: str = ""


class CheckFailed(AssertionError):
    """A check's expectation did not hold; the message says what was seen."""


class CheckSkipped(Exception):
    """The check means nothing on this rig (a fault its firmware has no place for); the message says why."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


@dataclass(frozen=True)
class Check:
    name: str
    description: str
    run: Callable[[RigUnderTest], str]  # returns the figure; raises CheckFailed
    heats: bool = False  # destructive on real hardware
    needs_sim: bool = False  # needs fault injection
