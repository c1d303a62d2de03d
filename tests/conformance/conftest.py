"""One simulated rig per firmware for the whole conformance suite, checks run in the selftest's order:
rigsim (the core built for the host), the Zephyr firmware emulated in QEMU and the MicroPython firmware
on the unix port; the emulated RP2040's checks shared out between two rigs (firmwares.SECOND_RIG)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from _pytest.terminal import TerminalReporter
from firmwares import FIRMWARES, RIGS, firmware_of, runs_on

from thermrig.conformance.result import CheckResult, Outcome, counts
from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.dut.pacing import Pacing
from thermrig.settings import find_tool
from thermrig.sim.firmware.zephyr import zephyr_image
from thermrig.testbed import SimulatedRigSpec, open_testbed


@dataclass(eq=False)  # a plugin: pluggy keeps plugins in sets (hashed by identity)
class OutcomeCounts:
    """Each firmware's outcomes as its checks report them (record_property travels from xdist's
    workers in the reports), printed at the end as `passed / n/a / failed` with the n/a checks named."""

    results: dict[str, list[CheckResult]] = field(default_factory=dict)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if report.when == "call" and "outcome" in props:
            result = CheckResult(props["check"], Outcome(props["outcome"]), "", props["detail"])
            self.results.setdefault(props["firmware"], []).append(result)

    def pytest_terminal_summary(self, terminalreporter: TerminalReporter) -> None:
        if not self.results:
            return
        terminalreporter.write_sep("-", "conformance outcomes per firmware (passed / n/a / failed)")
        for firmware in sorted(self.results, key=lambda f: FIRMWARES.index(f) if f in FIRMWARES else 99):
            results = self.results[firmware]
            na = ", ".join(r.name for r in results if r.outcome is Outcome.NOT_APPLICABLE) or "none"
            terminalreporter.write_line(f"{firmware:<18} {counts(results):<32} n/a: {na}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(OutcomeCounts(), "conformance-outcome-counts")
    if "micropython-rp2040" in FIRMWARES and not find_tool("pico-uf2").exists():
        raise pytest.UsageError(f"{find_tool('pico-uf2')} is missing: run `make firmware-pico`")
    if FIRMWARES == ["micropython-rp2040"]:
        return
    if not find_tool("rigsim").exists():
        raise pytest.UsageError(f"{find_tool('rigsim')} is missing: run `make build` (make test does)")
    if not zephyr_image().exists():
        raise pytest.UsageError(f"{zephyr_image()} is missing: run `make firmware-qemu` (make test does)")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A rig's checks share it and run in order (each leaves the rig as the next expects it): under xdist
    (`--dist loadgroup`) each rig's checks go to one worker, the rigs side by side. Spread over workers, a
    check met a rig the check before it never touched. A firmware with two rigs (firmwares.SECOND_RIG) runs
    each check on one of them: the pairs of a check and its other rig are not collected."""
    kept = []
    for item in items:
        params = getattr(item, "callspec", None) and item.callspec.params
        rig = params and params.get("target")
        if rig and "check" in params and not runs_on(rig, params["check"].name):
            continue
        if rig:
            item.add_marker(pytest.mark.xdist_group(rig))
        kept.append(item)
    items[:] = kept


@pytest.fixture(scope="session", params=RIGS)
def target(request: pytest.FixtureRequest) -> Iterator[RigUnderTest]:
    spec = SimulatedRigSpec(Pacing.stepped(), seed=11, firmware=firmware_of(request.param))
    with open_testbed(spec, keepalive=False) as bed:  # as `rig selftest --sim`: the checks time the heartbeat
        yield RigUnderTest(bed, bed.sim)
