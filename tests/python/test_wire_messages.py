"""What the simulation sends a firmware besides samples, as typed values and as the virtual-wires lines
they become (docs/plant.md; rigsim parses them with firmware/core/rig_wires.c, tests/c/test_wires.c)."""

from __future__ import annotations

import re
from pathlib import Path

from thermrig.protocol.messages import Fault
from thermrig.sim.fault_injection import GARBAGE
from thermrig.sim.wires import Garbage, Reset, Silence, Unplug


def test_a_reset_carries_the_cause_its_boot_reports() -> None:
    assert Reset().line() == "R 0\n"
    assert Reset(Fault.WATCHDOG).line() == "R 1024\n"


def test_serial_faults_become_their_lines() -> None:
    assert Garbage(b"\x00\xff\n").line() == "G R 00FF0A\n"
    assert Garbage(b"AB", toward_host=True).line() == "G H 4142\n"
    assert Silence(5.0).line() == "Q 5000\n"
    assert Unplug(0.25).line() == "U 250\n"


def test_the_injected_garbage_fits_what_a_firmware_buffers() -> None:
    """rig_wires.h's WIRES_GARBAGE_MAX: more would be refused as a bad line."""
    header = (Path(__file__).resolve().parents[2] / "firmware" / "core" / "rig_wires.h").read_text()
    limit = re.search(r"#define WIRES_GARBAGE_MAX (\d+)u", header)
    assert limit is not None and 0 < len(GARBAGE) <= int(limit[1])
