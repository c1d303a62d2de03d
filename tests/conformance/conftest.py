"""One simulated rig per firmware for the whole conformance suite, checks run in the selftest's order:
rigsim (the core built for the host), the Zephyr firmware emulated in QEMU and the MicroPython firmware
on the unix port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.settings import find_tool
from thermrig.sim.firmware.zephyr import zephyr_image
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

FIRMWARES = ["rigsim", "zephyr", "micropython"]


def pytest_configure(config: pytest.Config) -> None:
    if not find_tool("rigsim").exists():
        raise pytest.UsageError(f"{find_tool('rigsim')} is missing: run `make build` (make test does)")
    if not zephyr_image().exists():
        raise pytest.UsageError(f"{zephyr_image()} is missing: run `make firmware-qemu` (make test does)")


@pytest.fixture(scope="session", params=FIRMWARES)
def target(request: pytest.FixtureRequest) -> Iterator[RigUnderTest]:
    with (
        SimulatedRig(SimConfig(pacing=Pacing.stepped(), seed=11, firmware=request.param)) as sim,
        RigLink(sim.port) as link,
    ):
        link.hello()
        yield RigUnderTest(link, sim)
