"""One check's outcome: passed with the figure it measured, failed with what was seen, or not
applicable with the reason. A check that does not apply is never counted as passed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from thermrig.conformance.rig_under_test import RigUnderTest


class Outcome(StrEnum):
    PASSED = "passed"
    NOT_APPLICABLE = "n/a"
    FAILED = "failed"


@dataclass(frozen=True)
class CheckResult:
    name: str
    outcome: Outcome
    figure: str  # passed: what was measured; otherwise "failed" or "n/a"
    detail: str = ""  # failed: what was seen; n/a: why the check does not apply

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASSED

    @property
    def text(self) -> str:
        """The line a person reads: the figure, or the outcome with what was seen or why."""
        return self.figure if self.passed else f"{self.figure}: {self.detail}"


class CheckFailed(AssertionError):
    """A check's expectation did not hold; the message says what was seen."""


class NotApplicable(Exception):
    """The check does not apply to this rig or this run; the message says why."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def counts(results: Iterable[CheckResult]) -> str:
    """`passed / n/a / failed` as printed under every run of the checks."""
    outcomes = [r.outcome for r in results]
    return " / ".join(f"{outcomes.count(o)} {o.value}" for o in Outcome)


@dataclass(frozen=True)
class Check:
    name: str
    description: str
    run: Callable[[RigUnderTest], str]  # returns the figure; raises CheckFailed or NotApplicable
    heats: bool = False  # destructive on real hardware
    needs_sim: bool = False  # needs fault injection
