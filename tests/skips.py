"""The skips `make test` expects: one list (EXPECTED), each skip with the test it may skip and the
reason it gives. Under --strict-skips (make test, both suites) any other skip fails: a runtime skip fails
its test, a skip at collection (a module that skips as it is imported) is a collection error, so the run
exits non-zero either way; a broken setup, a tool `make setup` provides, cannot hide behind a skip. The
skips left are written to --skip-list PATH, which `make test` prints at its end.

Two kinds of reason: what this machine cannot do (no privilege, no device, no archive that `make setup`
or CI would give: skips.machine_cannot), and what another target runs on purpose (skips.elsewhere_unless).
A test skips with one of the helpers below and is listed here with the reason it gives; "*" in a listed
reason stands for what differs between machines (a path)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NoReturn

import pytest

MACHINE_CANNOT = "this machine cannot: "
ELSEWHERE = "runs elsewhere: "


@dataclass(frozen=True)
class ExpectedSkip:
    """test: a node id without its parameters ("tests/python/test_x.py::test_y"), or a file (all its tests
    and the file itself); reason: what the skip says, exactly but for "*" (any text)."""

    test: str
    reason: str

    def matches(self, nodeid: str, reason: str) -> bool:
        base = nodeid.split("[", 1)[0]
        file = nodeid.split("::", 1)[0]
        return self.test in (base, file) and _pattern(self.reason).fullmatch(reason) is not None


def _pattern(reason: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in reason.split("*")), re.DOTALL)


ZEPHYR = "tests/python/test_zephyr_build.py"
EXPECTED: list[ExpectedSkip] = [
    # What this machine cannot do, and neither make setup nor CI gives where it is missing.
    ExpectedSkip("tests/python/test_lab_sealed.py", MACHINE_CANNOT + "root, for network namespaces (unshare -n)"),
    ExpectedSkip("tests/python/test_drive_file_system.py", MACHINE_CANNOT + "not root"),
    ExpectedSkip(
        "tests/python/test_hermetic.py::test_the_verdicts_do_not_change_beside_a_users_state",
        MACHINE_CANNOT + "root, for a mount namespace (unshare -m)",
    ),
    ExpectedSkip("tests/python/test_drive_file_system.py", MACHINE_CANNOT + "no /dev/fuse"),
    ExpectedSkip("tests/python/test_drive_file_system.py", MACHINE_CANNOT + "no /dev/loop-control"),
    ExpectedSkip(
        "tests/python/test_fio_and_drive.py::test_guard_refuses_a_mounted_block_device_even_with_destroy",
        MACHINE_CANNOT + "no mounted block device to be refused (lsblk lists none)",
    ),
    ExpectedSkip(
        f"{ZEPHYR}::test_corrupt_archive_is_named_before_anything_is_built",
        MACHINE_CANNOT + "no pinned archives at * (a machine that builds with PlatformIO or west)",
    ),
    ExpectedSkip(
        f"{ZEPHYR}::test_the_cmake_build_takes_platformios_zephyr_when_there_are_no_archives",
        MACHINE_CANNOT + "no unpacked archives at * to make a PlatformIO package tree from",
    ),
]


def expected(nodeid: str, reason: str) -> bool:
    """Whether `make test` expects the test `nodeid` to skip for `reason` (EXPECTED lists it so)."""
    return any(e.matches(nodeid, reason) for e in EXPECTED)


def machine_cannot(piece: str) -> NoReturn:
    """Skip: this machine lacks `piece` (say which: "no /dev/fuse"), which neither make setup nor CI gives."""
    pytest.skip(MACHINE_CANNOT + piece)


def machine_cannot_if(missing: str | None) -> pytest.MarkDecorator:
    """A skipif mark for machine_cannot: skip when `missing` names a piece, run when it is None."""
    return pytest.mark.skipif(missing is not None, reason=MACHINE_CANNOT + str(missing))


def elsewhere_unless(runs_here: bool, where: str) -> pytest.MarkDecorator:
    """A skipif mark for a test another target runs (`where`: "make emulator-smoke runs it, minutes")."""
    return pytest.mark.skipif(not runs_here, reason=ELSEWHERE + where)


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The reason a skipped report gives."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)
