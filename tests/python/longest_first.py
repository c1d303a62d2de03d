"""make test's order of work for pytest-xdist: the longest work first, so no worker starts a test of minutes
while the others run out of work. A unit of work is what one worker runs: a test, or all the tests of an
xdist_group (one worker runs a group's tests, one after another). Make test runs pytest with
`--dist loadgroup --no-loadscope-reorder`, so the workers take the units in the order of the collection.

SECONDS are the long tests' wall times as `make test` measured them (`--durations`, a quiet 2-core
machine; the calibration's and the STM32 emulator's as `pytest -n 0 --durations=0` measured them on a
loaded one since they changed): an ordering, never a bound. A test not listed counts as a few seconds."""

from __future__ import annotations

import pytest

# a test's id in its folder (or its prefix: a file, a test's parametrisations) -> seconds of wall time
SECONDS: dict[str, float] = {
    # the recorded campaign, a timed_world test's set-up: its first test waits for it
    "test_analysis_campaign.py::test_each_run_ends_with_its_full_summary": 345.0,
    "test_calibration.py::test_two_puget_cells_through": 266.0,  # its two campaigns side by side
    "test_newcomer_path.py::test_a_newcomer_follows_the_readme": 199.0,
    "test_campaign_outage.py::test_an_influxdb_outage": 168.0,
    "test_campaign_rp2040.py": 151.0,  # a campaign on the emulated RP2040
    "test_stm32_emulator.py::test_telemetry_follows": 95.0,  # control ticks in LabWired's emulator
    "test_stm32_emulator.py::test_sht31_on_the_bus": 33.0,
    "test_rig_time.py::test_a_campaign_with_the_shorter_waits": 98.0,
    "test_rate_search.py::test_the_search_bisects": 92.0,
    "test_agent_install.py::test_the_installed_agent_serves_fio": 75.0,  # with the wheel's build
    "test_lab_campaign.py": 70.0,  # five of its campaigns take 49-91 s each
    "test_drop_cause.py::test_real_time": 70.0,
    "test_agent_install.py::test_the_installed_agent_runs_a_packaged_example": 59.0,
    "test_virtual_drive.py::test_the_throttle_shows": 45.0,
}
UNLISTED_S = 3.0


def seconds(nodeid: str) -> float:
    """The test's measured wall time, by the longest prefix SECONDS names (UNLISTED_S when none)."""
    name = nodeid.rsplit("/", 1)[-1]
    best = max((key for key in SECONDS if name.startswith(key)), key=len, default=None)
    return UNLISTED_S if best is None else SECONDS[best]


def unit(item: pytest.Item) -> str:
    """The unit of work the item belongs to: its xdist_group, else the item itself."""
    group = item.get_closest_marker("xdist_group")
    return f"@{group.args[0] if group.args else group.kwargs['name']}" if group else item.nodeid


def order_longest_first(items: list[pytest.Item]) -> None:
    """Reorder `items` in place: the units of work by their total time, longest first; within a unit,
    and among units of the same time, the collection's order."""
    total: dict[str, float] = {}
    for item in items:
        total[unit(item)] = total.get(unit(item), 0.0) + seconds(item.nodeid)
    items.sort(key=lambda item: -total[unit(item)])
