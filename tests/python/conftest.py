"""Fixtures: a stepped simulated rig (real rigsim + plant) and a link to it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from influx_servers import DEFAULT, running
from influx_servers import env_for as influx_env_for
from longest_first import order_longest_first

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.local_server import LocalInflux, influxd_binary
from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.settings import find_tool
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

REPO = Path(__file__).resolve().parents[2]

# `make fuzz` runs the codec properties with HYPOTHESIS_PROFILE=fuzz: many more examples.
settings.register_profile("fuzz", max_examples=20_000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
VECTORS = REPO / "tests" / "vectors" / "frames.tsv"


# A test marked timed_world judges a thermal or timing result of a real-time run on the simulated world
# (an onset, a cache drop, a rate that held). Those tests run one at a time, on one pytest-xdist worker, and
# their world at TIMED_WORLD_NICE: ahead of the worlds of the other workers' tests, which run at the
# default WORLD_NICE and judge no timing, so on a busy 2-core machine the run judged is not starved by
# another test's fio. The recorded campaign's tests are timed_world too, on a worker of their own
# (RECORDED_WORLD): beside the recording at most one other timed world runs, each a fraction of a core
# (the recording about a sixth of one: its world's lateness is what its tests count, test_analysis_campaign).
TIMED_WORLD = "timed_world"
RECORDED_WORLD = "recorded_world"
TIMED_WORLD_NICE = "-15"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{TIMED_WORLD}: judges a result of a real-time run (see conftest.py)")
    if not find_tool("rigsim").exists():
        raise pytest.UsageError(f"{find_tool('rigsim')} is missing: run `make build` (make test does)")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`make test` runs `-n 4 --dist loadgroup`) every test of the recorded campaign
    goes to one worker (the campaign is recorded once, not once per worker) and every other timed_world
    test to another: beside the recording, no two runs that are judged by their timing share the machine.
    The workers then take the longest work first (longest_first.py)."""
    for item in items:
        if "recorded_campaign" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timed_world)
            item.add_marker(pytest.mark.xdist_group(RECORDED_WORLD))
        elif item.get_closest_marker(TIMED_WORLD):
            item.add_marker(pytest.mark.xdist_group(TIMED_WORLD))
    if hasattr(config, "workerinput"):  # an xdist worker's collection, which the scheduler hands out in order
        order_longest_first(items)


@pytest.fixture(autouse=True)
def timed_world_priority(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A timed_world test's world (and its children's, which inherit the environment) at TIMED_WORLD_NICE."""
    if request.node.get_closest_marker(TIMED_WORLD):
        monkeypatch.setenv("THERMRIG_WORLD_NICE", TIMED_WORLD_NICE)


def pytest_collection_finish(session: pytest.Session) -> None:
    """A worker whose xdist no longer groups (pytest 9.2 with xdist 3.8:
    github.com/pytest-dev/pytest-xdist/issues/1386) would record the campaign once per worker, silently:
    refuse instead (host/pyproject.toml pins pytest)."""
    option = session.config.option  # xdist's options exist only where xdist is loaded, and not always both
    if getattr(option, "dist", None) != "loadgroup" and not getattr(option, "loadgroup", False):
        return
    ungrouped = [i.nodeid for i in session.items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
    if ungrouped:
        raise pytest.UsageError(
            f"pytest-xdist's --dist loadgroup did not group {ungrouped[0]} "
            "(github.com/pytest-dev/pytest-xdist/issues/1386): "
            "install the pytest host/pyproject.toml pins (make venv)"
        )


@pytest.fixture
def sim() -> Iterator[SimulatedRig]:
    with SimulatedRig(SimConfig(pacing=Pacing.stepped(), seed=1)) as rig:
        yield rig


@pytest.fixture
def link(sim: SimulatedRig) -> Iterator[RigLink]:
    with RigLink(sim.port) as lk:
        lk.hello()
        yield lk


@pytest.fixture
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """XDG dirs in a temp folder and no THERMRIG_PORT: nothing from the user's setup leaks in."""
    for var, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_RUNTIME_DIR", "run"), ("XDG_DATA_HOME", "data")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.delenv("THERMRIG_PORT", raising=False)
    monkeypatch.delenv("THERMRIG_CONFIG", raising=False)
    return dict(os.environ)


@pytest.fixture
def hardware_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of hardware/ that the profiles are loaded from, to edit: returns its profiles folder."""
    shutil.copytree(REPO / "hardware", tmp_path / "hardware")
    monkeypatch.setenv("THERMRIG_HARDWARE_DIR", str(tmp_path / "hardware"))
    return tmp_path / "hardware" / "profiles"


@pytest.fixture
def influx_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LocalInflux]:
    """A private InfluxDB on a free loopback port, stopped after the test: influxd 1.x, or the version a
    test parametrizes it with (influx_servers.ON_BOTH: 1.x and 2.x)."""
    version = getattr(request, "param", DEFAULT)
    if version == "1.x" and not influxd_binary().exists():
        pytest.fail(f"{influxd_binary()} is missing: run `make setup` (make test does)")
    with running(version, tmp_path) as server:
        yield server


@pytest.fixture
def influx(influx_server: LocalInflux) -> InfluxSettings:
    return influx_server.settings()


@pytest.fixture
def influx_env(isolated_env: dict[str, str], influx: InfluxSettings) -> dict[str, str]:
    """isolated_env pointed at the private server: the environment of a `thermrig` child that records."""
    return {**isolated_env, **influx_env_for(influx), "COLUMNS": "150"}


@pytest.fixture(scope="session")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A small virtual-drive campaign recorded once per session into its own influxd 1.x
    (recorded_campaign.py)."""
    from recorded_campaign import record

    root = tmp_path_factory.mktemp("recorded")
    server = LocalInflux(root / "influxdb")
    server.up()
    try:
        with pytest.MonkeyPatch.context() as env:  # recorded as a timed_world test's run is
            env.setenv("THERMRIG_WORLD_NICE", TIMED_WORLD_NICE)
            recorded = record(root, server)
        yield recorded
    finally:
        server.down()


@pytest.fixture(scope="session")
def recorded_campaign(
    request: pytest.FixtureRequest, recording: object, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[object]:
    """The recorded campaign on influxd 1.x, where it was recorded; or, parametrized with "2.x"
    (influx_servers.RECORDED_ON_BOTH), every point of it copied into a private InfluxDB 2.x, read there."""
    from recorded_campaign import on_server

    version = getattr(request, "param", DEFAULT)
    if version == "1.x":
        yield recording
        return
    root = tmp_path_factory.mktemp(f"recorded-{version}")
    with running(version, root) as server:
        yield on_server(recording, root, server.settings())
