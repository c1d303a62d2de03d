"""What every suite under tests/ (tests/python, tests/conformance) shares: it runs away from the user's
own state (hermetic.py: its own HOME, XDG folders and working directory, none of the user's THERMRIG_*
or LG_* variables, an ssh that reads no ~/.ssh/config), its skips cannot hide (skips.py: under
--strict-skips, as `make test` runs both suites, a skip EXPECTED does not list fails the run, at
collection too), and every xfail names the exception it expects (pytest.ini sets xfail_strict)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hermetic import SESSION_FOLDERS, SessionState, enter_session, leave_session, own_folders, users
from skips import expected, skip_reason

SESSION = pytest.StashKey[SessionState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("thermrig")
    group.addoption(
        "--strict-skips",
        action="store_true",
        help="A skip that tests/skips.py's EXPECTED does not list (that test, that reason) fails the run, at "
        "collection too (make test: what make setup provides or CI has is not skipped)",
    )
    group.addoption("--skip-list", metavar="PATH", help="Write the skipped tests and their reasons to PATH")


@pytest.hookimpl(tryfirst=True)  # before any other plugin looks at the environment
def pytest_configure(config: pytest.Config) -> None:
    config.stash[SESSION] = enter_session(Path(tempfile.mkdtemp(prefix="thermrig-tests-")))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if SESSION in config.stash:
        leave_session(config.stash[SESSION])


@pytest.fixture(scope="session", autouse=True)
def user_state_away_for_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The session's fixtures (the recorded campaign, the conformance suite's rigs) run in a working
    directory of their own (the session's environment is set before collection: pytest_configure)."""
    with pytest.MonkeyPatch.context() as env:
        env.chdir(tmp_path_factory.mktemp("session-work"))
        yield


@pytest.fixture(autouse=True)
def user_state_away(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own empty HOME, XDG folders and working directory (and none of the user's variables,
    whatever a test before it left): returns their root. A test that wants others sets its own over it."""
    root = tmp_path_factory.mktemp("user")
    for var in [v for v in os.environ if users(v) and v not in SESSION_FOLDERS]:
        monkeypatch.delenv(var)
    for var, folder in own_folders(root).items():
        if var == "PWD":
            monkeypatch.chdir(folder)
        else:
            monkeypatch.setenv(var, folder)
    return root


def _expected(report: pytest.TestReport | pytest.CollectReport) -> bool:
    return expected(report.nodeid, skip_reason(report))


def _unexpected_skip(report: pytest.TestReport | pytest.CollectReport) -> str:
    return (
        f"skipped under make test, where it must run: {skip_reason(report)}\n(make setup provides what a test "
        f"here needs and CI has it; a skip this machine truly needs is listed in tests/skips.py's EXPECTED, "
        f"with this test and this reason)"
    )


def _xfail_without_raises(item: pytest.Item) -> bool:
    return any("raises" not in mark.kwargs for mark in item.iter_markers("xfail"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    """Under --strict-skips a skip EXPECTED does not list is a failure that says so; an xfail that does not
    name the exception it expects (raises=), or one called in the test (pytest.xfail), always is."""
    report: pytest.TestReport = yield
    xfail = hasattr(report, "wasxfail")
    if (report.when == "setup" and _xfail_without_raises(item)) or (xfail and not item.get_closest_marker("xfail")):
        report.outcome = "failed"
        report.longrepr = "an xfail names the exception it expects: @pytest.mark.xfail(raises=..., reason=...)"
        if xfail:
            del report.wasxfail
    elif item.config.getoption("strict_skips") and report.skipped and not xfail and not _expected(report):
        report.outcome = "failed"
        report.longrepr = _unexpected_skip(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[pytest.CollectReport]:
    """Under --strict-skips a module that skips as it is collected, unless EXPECTED lists it, is a
    collection error: the run stops and fails."""
    report: pytest.CollectReport = yield
    if collector.config.getoption("strict_skips") and report.skipped and not _expected(report):
        report.outcome = "failed"  # said with its module (xdist says one of collection errors that read alike)
        report.longrepr = f"{report.nodeid}: {_unexpected_skip(report)}"
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """--skip-list: the skips of the run (nodeid: reason), one a line, for make test to print at its end."""
    path = config.getoption("skip_list")
    if path is None or hasattr(config, "workerinput"):  # xdist's workers: their controller writes it
        return
    skipped = terminalreporter.stats.get("skipped", [])
    lines = {f"{r.nodeid}: {skip_reason(r)}" for r in skipped if not hasattr(r, "wasxfail")}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("".join(f"{line}\n" for line in sorted(lines)))
