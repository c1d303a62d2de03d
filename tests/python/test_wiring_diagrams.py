"""The harness diagrams in docs/wiring: drawn from hardware/README.md's wiring table (the table the pin
tests check against the built overlays), so a diagram that no longer follows the table fails here."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "wiring_diagrams.py"
_spec = importlib.util.spec_from_file_location("wiring_diagrams", SCRIPT)
assert _spec is not None and _spec.loader is not None
wiring = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wiring)

TABLE = wiring.read_table(wiring.TABLE.read_text())


def test_the_table_gives_every_board_every_signal() -> None:
    assert set(TABLE) == {"pico", "nucleo_f411re", "nucleo_f446re"}
    signals = {s for row in wiring.ROWS.values() for s in row}
    for board, pins in TABLE.items():
        assert set(pins) == signals, board
        assert len(set(pins.values())) == len(pins), f"{board}: a pin is given twice"


@pytest.mark.parametrize("board", sorted(TABLE))
def test_the_committed_diagram_follows_the_table(board: str) -> None:
    committed = (wiring.OUT / f"{board}.yml").read_text()
    assert committed == wiring.harness_yaml(board, TABLE[board]), "run `make wiring` and commit docs/wiring"
    svg = (wiring.OUT / f"{board}.svg").read_text()
    for signal, pin in TABLE[board].items():
        assert f"{pin} {signal}" in svg, f"{board}: the drawing lacks {pin} ({signal}): run `make wiring`"


def test_every_peripheral_pin_is_wired_to_the_boards_pin_for_it() -> None:
    h = yaml.safe_load(wiring.harness_yaml("nucleo_f411re", TABLE["nucleo_f411re"]))
    mcu = h["connectors"]["MCU"]["pinlabels"]
    wired = {}
    for mcu_side, _cable, (target, target_pins) in (
        (c[0]["MCU"], c[1], next(iter(c[2].items()))) for c in h["connections"]
    ):
        labels = h["connectors"][target]["pinlabels"]
        for m, t in zip(mcu_side, target_pins, strict=True):
            wired[(target, labels[t - 1])] = mcu[m - 1]
    assert wired[("TC2", "CS")] == "PA8 (D7) cs2"
    assert wired[("TC0", "SO")] == "PA6 (D12) miso"
    assert wired[("AMB", "SDA")] == "PB9 (D14) sda"
    assert wired[("FAN1", "TACH")] == "PC1 (A4) fan1_tach"
    assert wired[("HEATER", "IN")] == "PA0 (A0) heater"


def test_a_table_row_with_a_pin_missing_is_named(tmp_path: Path) -> None:
    text = wiring.TABLE.read_text()
    broken = re.sub(r"\| GP17, GP20, GP21, GP22 \|", "| GP17, GP20, GP21 |", text)
    assert broken != text
    with pytest.raises(wiring.WiringTableError, match=r"MAX31855 CS #0..#3.*pico.*not 4 pins"):
        wiring.read_table(broken)


def test_wireviz_draws_a_board_from_the_generated_input(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr
    for board, pins in TABLE.items():
        svg = (tmp_path / f"{board}.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg
        assert all(pin in svg for pin in pins.values())
        assert not (tmp_path / f"{board}.html").exists()
