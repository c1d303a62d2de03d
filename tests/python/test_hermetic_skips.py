"""make test's skips (tests/skips.py's EXPECTED, tests/conftest.py's --strict-skips and --skip-list) and
xfails, in both suites: a skip the list does not name (that test, that reason) fails the run, at runtime
and at collection; a listed one stays a skip and is listed with its reason; an xfail that names no
exception, passes, or meets another exception fails. Run on a copy of tests/' shared modules and the
suites' conftests, with planted test files in each suite's folder and one planted entry in the list."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from skips import ELSEWHERE, EXPECTED, ExpectedSkip, expected

REPO = Path(__file__).resolve().parents[2]
PLANTED_ENTRY = 'EXPECTED.append(ExpectedSkip("{file}::test_expected", "this machine cannot: no * here"))\n'

PLANTED_MODULE_ENTRY = 'EXPECTED.append(ExpectedSkip("{file}", "this machine cannot: no module thing"))\n'

RUNTIME = """
import pytest
from skips import machine_cannot


def test_expected():
    machine_cannot("no planted device here")


def test_listed_reason_but_another_test():
    machine_cannot("no planted device here")


def test_setup_provides_it():
    pytest.skip("socat is not installed (scripts/setup_system.sh installs it)")


@pytest.mark.skipif(True, reason="a mark's skip")
def test_a_marks_skip():
    pass


@pytest.mark.xfail(raises=AssertionError, reason="a known fault")
def test_known_fault():
    assert False


@pytest.mark.xfail(reason="names no exception")
def test_vague_xfail():
    assert False


@pytest.mark.xfail(raises=AssertionError, reason="fixed since")
def test_fixed_xfail():
    pass


@pytest.mark.xfail(raises=KeyError, reason="another exception")
def test_other_exception():
    assert False


def test_imperative_xfail():
    pytest.xfail("decided in the test")


def test_passes():
    pass
"""
MODULE_SKIP = 'import pytest\n\npytest.skip("{reason}", allow_module_level=True)\n\n\ndef test_never():\n    pass\n'
STRICT = {
    "test_expected": "skipped",
    "test_listed_reason_but_another_test": "failed",
    "test_setup_provides_it": "failed",
    "test_a_marks_skip": "error",  # skipped at its setup: failed there
    "test_known_fault": "skipped",  # junit's word for xfailed
    "test_vague_xfail": "error",  # failed at its setup
    "test_fixed_xfail": "failed",
    "test_other_exception": "failed",
    "test_imperative_xfail": "failed",
    "test_passes": "passed",
}
SUITES = ("tests/python", "tests/conformance")


def planted(suite: str, name: str = "planted") -> str:
    """A planted test file of the suite (named apart from the other suite's: the suites' folders are not
    packages)."""
    return f"{suite}/test_{name}_{suite.rsplit('/', 1)[1]}.py"


def copy_of_the_tests(root: Path) -> Path:
    """The repository's pytest.ini, tests/' shared modules and each suite's modules that are not tests,
    with one planted entry in EXPECTED for each suite; returns root."""
    shutil.copy(REPO / "pytest.ini", root / "pytest.ini")
    for folder in ("tests", *SUITES):
        (root / folder).mkdir(parents=True, exist_ok=True)
        for module in (REPO / folder).glob("*.py"):
            if not module.name.startswith("test_"):
                shutil.copy(module, root / folder / module.name)
    with (root / "tests" / "skips.py").open("a") as skips:
        for suite in SUITES:
            skips.write(PLANTED_ENTRY.format(file=planted(suite)))
            skips.write(PLANTED_MODULE_ENTRY.format(file=planted(suite, "module")))
    return root


def pytest_in(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2", "--dist", "loadgroup", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=dict(os.environ), timeout=600)


def outcomes(junit: Path) -> dict[str, str]:
    found = {}
    for case in ET.parse(junit).iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        found[f"{case.get('classname')}.{case.get('name')}"] = (
            {"failure": "failed"}.get(kinds[0], kinds[0]) if kinds else "passed"
        )
    return found


def test_in_each_suite_a_skip_the_list_does_not_name_fails_and_the_listed_one_is_listed(tmp_path: Path) -> None:
    root = copy_of_the_tests(tmp_path)
    for suite in SUITES:
        (root / planted(suite)).write_text(RUNTIME)
    r = pytest_in(root, *SUITES, "--strict-skips", "--skip-list", "skips.txt", "--junitxml", "junit.xml")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    found = outcomes(root / "junit.xml")
    for suite in SUITES:
        module = planted(suite).removesuffix(".py").replace("/", ".")
        assert {k.removeprefix(module + "."): v for k, v in found.items() if k.startswith(module)} == STRICT
    assert "skipped under make test, where it must run: socat is not installed" in r.stdout
    assert "an xfail names the exception it expects" in r.stdout
    assert (root / "skips.txt").read_text().splitlines() == sorted(
        f"{planted(suite)}::test_expected: this machine cannot: no planted device here" for suite in SUITES
    )
    # Without --strict-skips (a developer's run) a skip is a skip; the xfail rules hold still.
    loose = pytest_in(root, *SUITES, "--junitxml", "junit.xml")
    assert loose.returncode == 1
    found = outcomes(root / "junit.xml")
    skips = {k for k, v in found.items() if v == "skipped" and "xfail" not in k and "known_fault" not in k}
    assert len(skips) == 2 * 4, found


def test_in_each_suite_a_module_that_skips_at_collection_fails_the_run_unless_listed(tmp_path: Path) -> None:
    root = copy_of_the_tests(tmp_path)
    for suite in SUITES:
        (root / planted(suite, "module")).write_text(MODULE_SKIP.format(reason="this machine cannot: no module thing"))
        (root / planted(suite, "unlisted")).write_text(MODULE_SKIP.format(reason="not listed"))
    files = [planted(suite, name) for suite in SUITES for name in ("module", "unlisted")]
    r = pytest_in(root, *files, "--strict-skips", "--skip-list", "skips.txt")
    assert r.returncode not in (0, 5), r.stdout[-3000:] + r.stderr[-2000:]  # 5: nothing was collected
    for suite in SUITES:
        assert f"ERROR {planted(suite, 'unlisted')}" in r.stdout, r.stdout[-3000:]
        assert f"ERROR {planted(suite, 'module')}" not in r.stdout
    assert r.stdout.count("skipped under make test, where it must run: not listed") >= 2
    listed = pytest_in(root, *(f for f in files if "unlisted" not in f), "--strict-skips", "--skip-list", "skips.txt")
    assert listed.returncode == 5, listed.stdout[-3000:]  # every test skipped as listed: none ran, none failed
    assert (root / "skips.txt").read_text().splitlines() == sorted(
        f"{planted(suite, 'module')}: this machine cannot: no module thing" for suite in SUITES
    )


def test_a_listed_skip_names_a_test_that_exists_and_says_why() -> None:
    for entry in EXPECTED:
        file, _, name = entry.test.partition("::")
        assert (REPO / file).is_file(), entry
        functions = {n.name for n in ast.walk(ast.parse((REPO / file).read_text())) if isinstance(n, ast.FunctionDef)}
        assert not name or name in functions, entry
        assert entry.reason.strip() and entry.reason == entry.reason.strip(), entry


def test_the_list_matches_a_test_and_its_reason_not_a_prefix() -> None:
    entry = ExpectedSkip("tests/python/test_x.py::test_y", "this machine cannot: no pinned archives at * (west)")
    assert entry.matches("tests/python/test_x.py::test_y[a-1]", "this machine cannot: no pinned archives at /a (west)")
    assert not entry.matches("tests/python/test_x.py::test_z", "this machine cannot: no pinned archives at /a (west)")
    assert not entry.matches("tests/python/test_x.py::test_y", "this machine cannot: no pinned archives at /a")
    assert not entry.matches("tests/python/test_x.py::test_y", "this machine cannot: anything")
    assert not expected("tests/python/test_x.py::test_y", "this machine cannot: no /dev/fuse")


def test_no_listed_skip_runs_elsewhere() -> None:
    """Everything make test's targets run, make test runs: no "runs elsewhere" is left (the RP2040's
    campaign and the STM32 emulator's control ticks run in make test's pytest)."""
    assert [e.test for e in EXPECTED if e.reason.startswith(ELSEWHERE)] == []


def test_make_test_holds_both_suites_to_the_list() -> None:
    makefile = (REPO / "Makefile").read_text()
    for target, suite in (("pytest", "tests/python"), ("conformance", "tests/conformance")):
        recipe = makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
        assert f"pytest {suite}" in recipe and "--strict-skips" in recipe and "--skip-list" in recipe, recipe
