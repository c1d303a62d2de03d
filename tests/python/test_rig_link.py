"""Host link against the real firmware core in the simulated rig (stepped, so virtual time is exact)."""

from __future__ import annotations

import itertools
import time

import pytest

from thermrig.link.rig_link import NakError, RigLink, RigTimeout, VersionMismatch
from thermrig.link.transport import PortError
from thermrig.protocol.frame import encode
from thermrig.protocol.messages import ChannelStatus, Fault
from thermrig.sim.sensors import MAX31855_OC
from thermrig.sim.simulated_rig import SimulatedRig


def telemetry_after(link: RigLink, sim: SimulatedRig, seconds: float, ping: bool = True):  # type: ignore[no-untyped-def]
    """Advance virtual time second by second (pinging, as a live host does) and return the telemetry."""
    remaining = seconds
    while remaining > 1e-9:
        step = min(1.0, remaining)
        if ping:
            link.ping()
        sim.advance(step)
        remaining -= step
    return link.collect_telemetry(round(seconds * 10), timeout=2)


def test_hello_reports_identity_and_channel_map(link: RigLink) -> None:
    info = link.info
    assert info is not None
    assert (info.firmware, info.proto, info.board) == ("thermrig-core", 1, "sim-posix")
    assert info.channels["tc3"] == "chassis_air" and info.channels["rpm1"] == "fan1"


def test_wrong_version_through_hello(sim: SimulatedRig, monkeypatch: pytest.MonkeyPatch) -> None:
    import thermrig.link.rig_link as rl

    monkeypatch.setattr(rl, "PROTO_VERSION", 2)
    with RigLink(sim.port) as link:
        start = time.monotonic()
        with pytest.raises(VersionMismatch, match="speaks protocol 1, this host speaks protocol 2: update"):
            link.hello()
        assert time.monotonic() - start < 0.5  # an answer, not a time-out


def test_a_port_with_no_rig_times_out_with_advice() -> None:
    with RigLink("loop://") as link, pytest.raises(RigTimeout, match="is a thermrig rig on this port"):
        link.hello(timeout=0.2)


def test_absent_port_is_a_clean_error() -> None:
    with pytest.raises(PortError, match="cannot open /dev/does-not-exist"):
        RigLink("/dev/does-not-exist")


@pytest.mark.parametrize(
    ("args", "reason", "detail"),
    [
        (("air=7000",), "RANGE", "air"),
        (("air=hot",), "ARG", "air"),
        (("speed=3",), "ARG", None),
        (("rate=20",), "RANGE", "rate"),
        (("fan0=1001",), "RANGE", "fan0"),
    ],
)
def test_out_of_range_and_malformed_settings_are_refused(
    link: RigLink, args: tuple[str, ...], reason: str, detail: str | None
) -> None:
    with pytest.raises(NakError) as exc:
        link.command("SET", *args)
    assert (exc.value.nak.reason, exc.value.nak.detail) == (reason, detail)


def test_unknown_command_is_refused(link: RigLink) -> None:
    with pytest.raises(NakError, match="UNKNOWN"):
        link.command("LAUNCH")


def test_bad_frames_are_nakked_and_counted_on_both_sides(link: RigLink, sim: SimulatedRig) -> None:
    good = encode(900, "PING")
    bad_crc = good[:-5] + (b"0000" if good[-5:-1] != b"0000" else b"1111") + b"\n"
    link.write_raw(bad_crc + b"garbage \x00\xff\n" + b"X" * 400 + b"\n" + good[:4] + b"\n")
    frames = telemetry_after(link, sim, 0.5)
    assert frames[-1].rx_errors == 4
    assert link.stats.naks_received >= 4
    assert link.ping().mcu_us > 0  # the link still works


def test_telemetry_at_10_hz_without_gaps(link: RigLink, sim: SimulatedRig) -> None:
    frames = telemetry_after(link, sim, 60)
    assert len(frames) == 600
    ups = [f.uptime_ms for f in frames]
    assert all(b - a == 100 for a, b in itertools.pairwise(ups))
    assert link.stats.lost_frames == 0


def test_chassis_air_holds_a_20_c_step(link: RigLink, sim: SimulatedRig) -> None:
    target = sim.plant.room_c + 20
    link.set(air=round(target * 100), heat=1, fan0=400)
    peak = 0.0
    for _ in range(300):
        telemetry_after(link, sim, 1)
        peak = max(peak, sim.plant.state.air)
    assert abs(sim.plant.state.air - target) < 0.3
    assert peak - target < 1.0
    assert not link.latest.faults


def test_host_silence_puts_the_rig_in_its_safe_state(link: RigLink, sim: SimulatedRig) -> None:
    link.set(air=4000, heat=1)
    telemetry_after(link, sim, 5)
    assert sim.plant.heater_duty > 0
    link.ping()  # the last word from the host
    frames = telemetry_after(link, sim, 2.5, ping=False)
    assert frames[-1].heat_enabled and not frames[-1].faults
    frames = telemetry_after(link, sim, 1.0, ping=False)
    tripped = [f for f in frames if f.faults]
    assert tripped and tripped[0].faults == Fault.HOST_LOST
    assert tripped[0].uptime_ms - frames[0].uptime_ms <= 600  # 3 s + one tick after the last ping
    assert tripped[0].heater_pct == 0 and tripped[0].fan_pct == {"fan0": 100.0, "fan1": 100.0}
    telemetry_after(link, sim, 0.2)
    assert sim.plant.heater_duty == 0 and sim.plant.fan_duty == [1.0, 1.0]
    with pytest.raises(NakError, match="STATE"):
        link.set(heat=1)
    link.command("CLEAR")
    frames = telemetry_after(link, sim, 1)
    assert not frames[-1].faults and not frames[-1].heat_enabled


def test_open_thermocouple_takes_the_heater_off_within_one_sample(link: RigLink, sim: SimulatedRig) -> None:
    link.set(air=4000, heat=1)
    telemetry_after(link, sim, 3)
    sim.sensors.tc_faults[0] = MAX31855_OC
    frames = telemetry_after(link, sim, 0.1)
    assert frames[-1].faults == Fault.TC_OPEN
    assert frames[-1].temps["tc0"].status == ChannelStatus.OPEN
    assert frames[-1].heater_pct == 0
