"""Each board image's pins, from its built devicetree: none taken twice, a pin the board also uses for
something else only where docs/firmware.md says why, and the wiring table in hardware/README.md
naming exactly the pins the firmware uses."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from board_pins import PinUse, load, other_pins, rig_pins
from zephyr_boards import REPO, board_build, firmware_boards

# Nucleo-64 pins wired on the board but absent from its devicetree (ST UM1724: the ST-LINK's SWD and
# SWO lines, the 8 MHz clock it feeds into OSC_IN, the 32.768 kHz crystal).
NUCLEO_64 = {
    "PA13": "SWDIO to the ST-LINK",
    "PA14": "SWCLK to the ST-LINK",
    "PB3": "SWO to the ST-LINK",
    "PH0": "HSE clock from the ST-LINK's MCO",
    "PC14": "LSE crystal X2",
    "PC15": "LSE crystal X2",
}
OUTSIDE_DEVICETREE = {"nucleo_f411re": NUCLEO_64, "nucleo_f446re": NUCLEO_64}
PIN = re.compile(r"\bP[A-K]\d{1,2}\b")


def wiring_table() -> dict[str, set[str]]:
    """hardware/README.md's wiring table: each board column (a Zephyr board name in backticks) -> its pins."""
    text = (REPO / "hardware" / "README.md").read_text()
    section = text.split("## Wiring and pins", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    columns = {i: m.group(1) for i, cell in enumerate(header) if (m := re.fullmatch(r"`(\w+)`", cell))}
    pins: dict[str, set[str]] = {board: set() for board in columns.values()}
    for row in rows[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        for i, board in columns.items():
            pins[board].update(PIN.findall(cells[i]))
    return pins


def documented_shared_pins() -> set[tuple[str, str]]:
    """docs/firmware.md's table of pins the rig shares with the board on purpose: (board, pin)."""
    text = (REPO / "docs" / "firmware.md").read_text()
    return set(re.findall(r"^\| `(\w+)` \| (P[A-K]\d{1,2}) \|", text, re.MULTILINE))


WIRED_BOARDS = sorted(wiring_table())


def test_the_wiring_table_covers_the_built_hardware_boards() -> None:
    assert {"nucleo_f411re", "nucleo_f446re"} <= set(WIRED_BOARDS) <= set(firmware_boards())


@pytest.mark.parametrize("board", WIRED_BOARDS)
def test_no_pin_is_taken_twice_by_the_rig(board: str) -> None:
    uses = rig_pins(load(board_build(board)))
    twice = [use for use in uses if Counter(u.pin for u in uses)[use.pin] > 1]
    assert twice == []


@pytest.mark.parametrize("board", WIRED_BOARDS)
def test_pins_the_board_also_uses_are_the_documented_ones(board: str) -> None:
    dt = load(board_build(board))
    mine = {use.pin for use in rig_pins(dt)}
    board_uses = other_pins(dt) + [PinUse(pin, what) for pin, what in OUTSIDE_DEVICETREE.get(board, {}).items()]
    shared = {(board, use.pin) for use in board_uses if use.pin in mine}
    documented = {(b, pin) for b, pin in documented_shared_pins() if b == board}
    assert shared == documented, [use for use in board_uses if use.pin in mine]


@pytest.mark.parametrize("board", WIRED_BOARDS)
def test_wiring_table_names_exactly_the_firmware_pins(board: str) -> None:
    firmware = {use.pin for use in rig_pins(load(board_build(board)))}
    assert wiring_table()[board] == firmware
