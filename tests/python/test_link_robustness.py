"""The link survives what real serial links do: unplugs, MCU resets, garbage, silence, a busy port."""

from __future__ import annotations

import pytest
from serial.tools.list_ports_common import ListPortInfo
from waiting import wait_for

from thermrig.link.rig_link import RigLink
from thermrig.link.transport import PortError, UsbIdentity, find_port, usb_identity
from thermrig.sim.fault_injection import FaultKind
from thermrig.sim.simulated_rig import SimulatedRig


def test_unplug_and_replug_reconnects_and_handshakes_again(link: RigLink, sim: SimulatedRig) -> None:
    sim.advance(1.0)
    hello_before = link.info
    sim.faults.inject(FaultKind.USB_UNPLUG, value=0.5)
    sim.advance(0.1)
    assert wait_for(lambda: not link.connected)
    sim.advance(0.5)  # the device is back, under a new pty, behind the same link
    assert wait_for(lambda: link.connected and link.stats.reconnects == 1)
    kinds = [e.kind for e in link.events]
    assert kinds[:2] == ["link_lost", "link_restored"]
    assert wait_for(lambda: link.info is not None and link.info is not hello_before)
    assert link.ping().mcu_us > 0
    link.drain_telemetry()
    sim.advance(1.0)
    assert wait_for(lambda: link.latest is not None and link.latest.uptime_ms >= 2600)


def test_mcu_reset_is_noticed_marked_as_a_gap_and_handshaken(link: RigLink, sim: SimulatedRig) -> None:
    link.set(air=3500, heat=1)
    for _ in range(3):
        link.ping()
        sim.advance(1.0)
    sim.faults.inject(FaultKind.MCU_RESET)
    sim.advance(0.1)  # the rig reboots and reports at its first tick
    assert wait_for(lambda: link.stats.mcu_resets == 1, timeout=1.0)
    reset = next(e for e in link.events if e.kind == "mcu_reset")
    gap = next(e for e in link.events if e.kind == "gap")
    assert "EVT BOOT 0" in reset.detail and gap.start_utc is not None and gap.start_utc <= gap.utc
    sim.advance(0.3)
    assert wait_for(lambda: link.latest is not None and link.latest.uptime_ms <= 400)
    assert not link.latest.heat_enabled  # a rebooted rig starts with the heater off
    assert wait_for(lambda: link.info is not None)
    assert link.stats.lost_frames == 0  # the numbering restart is not counted as loss


def test_garbage_is_counted_on_both_sides_and_the_link_carries_on(link: RigLink, sim: SimulatedRig) -> None:
    sim.faults.inject(FaultKind.SERIAL_GARBAGE, channel=0)
    sim.faults.inject(FaultKind.SERIAL_GARBAGE, channel=1)
    link.ping()
    sim.advance(0.3)
    assert wait_for(lambda: link.latest is not None and link.latest.rx_errors >= 3)
    assert sum(link.stats.decode_errors.values()) >= 3
    assert link.ping().mcu_us > 0


def test_serial_silence_is_marked_as_a_gap(link: RigLink, sim: SimulatedRig) -> None:
    sim.advance(1.0)
    sim.faults.inject(FaultKind.SERIAL_SILENCE, value=2.0)
    sim.advance(3.0)
    assert wait_for(lambda: link.stats.gaps == 1)
    gap = next(e for e in link.events if e.kind == "gap")
    assert "no telemetry for 2" in gap.detail


def test_busy_port_is_a_clean_error(link: RigLink, sim: SimulatedRig) -> None:
    with pytest.raises(PortError, match="busy"):
        RigLink(sim.port)


def test_usb_rig_is_found_again_by_serial_number(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # USB enumeration is the one thing here that needs real hardware: the port list stands in for it.
    before = ListPortInfo("/dev/ttyACM0")
    before.serial_number, before.description = "E6614C311B8F2F2A", "thermrig rig"
    after = ListPortInfo("/dev/ttyACM3")
    after.serial_number, after.description = "E6614C311B8F2F2A", "thermrig rig"
    other = ListPortInfo("/dev/ttyACM1")
    other.serial_number = "OTHER"
    identity = usb_identity("/dev/ttyACM0", [other, before])
    assert identity == UsbIdentity("E6614C311B8F2F2A", "thermrig rig")
    assert find_port("/dev/ttyACM0", identity, [other, after]) == "/dev/ttyACM3"
    assert find_port("/dev/ttyACM0", identity, [other]) is None
    by_id = tmp_path / "usb-thermrig_rig_E6614C311B8F2F2A-if00"
    by_id.touch()
    assert find_port(str(by_id), identity, []) == str(by_id)  # a by-id link that is back is used as is
