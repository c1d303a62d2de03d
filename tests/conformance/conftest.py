"""One simulated rig per firmware for the whole conformance suite, checks run in the selftest's order:
rigsim (the core built for the host), the Zephyr firmware emulated in QEMU and the MicroPython firmware
on the unix port."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.settings import find_tool
from thermrig.sim.firmware.zephyr import zephyr_image
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

FIRMWARES = ["rigsim", "zephyr", "zephyr-board", "micropython", "micropython-pico"]
# Stock MicroPython on the emulated RP2040 runs the whole suite in tens of minutes: only when asked
# (make conformance-rp2040: THERMRIG_CONFORMANCE_RP2040=only); make test runs its short form in
# tests/python/test_micropython_rp2040.py.
RP2040 = os.environ.get("THERMRIG_CONFORMANCE_RP2040", "")
if RP2040 == "only":
    FIRMWARES = ["micropython-rp2040"]
elif RP2040:
    FIRMWARES.append("micropython-rp2040")


def pytest_configure(config: pytest.Config) -> None:
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
    """A firmware's checks share its one simulated rig and run in order (latch-and-clear reads the fault
    heartbeat-failsafe latched): under xdist (`--dist loadgroup`) each firmware's checks go to one worker,
    the firmwares side by side. Spread over workers, a check met a rig the check before it never touched."""
    for item in items:
        firmware = getattr(item, "callspec", None) and item.callspec.params.get("target")
        if firmware:
            item.add_marker(pytest.mark.xdist_group(firmware))


@pytest.fixture(scope="session", params=FIRMWARES)
def target(request: pytest.FixtureRequest) -> Iterator[RigUnderTest]:
    with (
        SimulatedRig(SimConfig(pacing=Pacing.stepped(), seed=11, firmware=request.param)) as sim,
        RigLink(sim.port) as link,
    ):
        link.hello()
        yield RigUnderTest(link, sim)
