"""Run the conformance checks against a target and collect a result per check."""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable, Iterator

from thermrig.conformance.checks import CHECKS
from thermrig.conformance.fault_matrix import FAULT_CHECKS
from thermrig.conformance.result import Check, CheckFailed, CheckResult, NotApplicable, Outcome
from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.link.rig_link import NakError, RigTimeout
from thermrig.protocol.messages import ProtocolError

ALL_CHECKS: list[Check] = CHECKS + FAULT_CHECKS


def select(only: list[str] | None) -> list[Check]:
    if not only:
        return list(ALL_CHECKS)
    chosen = [c for c in ALL_CHECKS if any(fnmatch.fnmatch(c.name, pattern) for pattern in only)]
    if not chosen:
        raise ValueError(f"no check matches {', '.join(only)}; checks: {', '.join(c.name for c in ALL_CHECKS)}")
    return chosen


def run_check(target: RigUnderTest, check: Check) -> CheckResult:
    if check.needs_sim and target.sim is None:
        return _not_applicable(check, "needs fault injection: run with --sim")
    if check.heats and not target.may_heat:
        return _not_applicable(check, "heats the rig: pass --destructive on real hardware")
    if target.blocked is not None and (check.heats or check.needs_sim):
        return _not_applicable(check, f"not judged: {target.blocked}")
    try:
        figure = check.run(target)
    except NotApplicable as exc:
        _make_safe(target)
        return _not_applicable(check, str(exc))
    except (CheckFailed, NakError, RigTimeout, ProtocolError) as exc:  # a refusal names what the rig latched
        _make_safe(target)
        return CheckResult(check.name, Outcome.FAILED, "failed", str(exc))
    return CheckResult(check.name, Outcome.PASSED, figure)


def _not_applicable(check: Check, reason: str) -> CheckResult:
    return CheckResult(check.name, Outcome.NOT_APPLICABLE, "n/a", reason)


def _make_safe(target: RigUnderTest) -> None:
    try:
        if target.faults is not None:
            target.faults.clear()
        target.safe()
    except (NakError, RigTimeout):
        pass


def run_all(
    target: RigUnderTest, checks: list[Check], progress: Callable[[Check], None] | None = None
) -> Iterator[tuple[CheckResult, float]]:
    """Yield (result, wall seconds) per check; the rig is left in its safe state at the end."""
    try:
        for check in checks:
            if progress is not None:
                progress(check)
            start = time.monotonic()
            yield run_check(target, check), time.monotonic() - start
    finally:
        _make_safe(target)
