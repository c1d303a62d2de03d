"""The two skips a test may make under `make test` (its --strict-skips): what this machine truly cannot do
(no FUSE device, no privilege CI has not either), and what runs elsewhere on purpose (minutes-long
emulator runs: `make emulator-smoke`). Any other skip (a tool or privilege `make setup` provides or CI
has) is a failure there: a broken setup is not hidden. `make test` prints the skips left at its end
(--skip-list)."""

from __future__ import annotations

from typing import NoReturn

import pytest

MACHINE_CANNOT = "this machine cannot: "
ELSEWHERE = "runs elsewhere: "
ALLOWED = (MACHINE_CANNOT, ELSEWHERE)


def machine_cannot(piece: str) -> NoReturn:
    """Skip: this machine lacks `piece` (say which: "no /dev/fuse"), which neither make setup nor CI gives."""
    pytest.skip(MACHINE_CANNOT + piece)


def machine_cannot_if(missing: str | None) -> pytest.MarkDecorator:
    """A skipif mark for machine_cannot: skip when `missing` names a piece, run when it is None."""
    return pytest.mark.skipif(missing is not None, reason=MACHINE_CANNOT + str(missing))


def elsewhere_unless(runs_here: bool, where: str) -> pytest.MarkDecorator:
    """A skipif mark for a test another target runs (`where`: "make emulator-smoke runs it, minutes")."""
    return pytest.mark.skipif(not runs_here, reason=ELSEWHERE + where)


def skip_reason(report: pytest.TestReport) -> str:
    """The reason a skipped report gives."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def allowed(reason: str) -> bool:
    return reason.startswith(ALLOWED)
