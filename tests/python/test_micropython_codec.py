"""The MicroPython firmware's codec (firmware/micropython/thermrig_fw/frame.py) on the real unix-port
`micropython` binary against the shared protocol vectors, byte for byte."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_frame_codec import VECTOR_ROWS

from thermrig.sim.firmware.micropython import firmware_dir, micropython_binary

RUNNER = Path(__file__).with_name("micropython_codec_runner.py")


@pytest.fixture(scope="module")
def results() -> list[bytes]:
    stdin = "".join(f"{op} {inp.hex()}\n" for op, inp, _ in VECTOR_ROWS)
    proc = subprocess.run(
        [str(micropython_binary()), str(RUNNER)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={"MICROPYPATH": f"{firmware_dir()}:.frozen"},
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == len(VECTOR_ROWS)
    return [b"" if x == "-" else bytes.fromhex(x) for x in lines]


@pytest.mark.parametrize("row", range(len(VECTOR_ROWS)), ids=[f"{r[0]}-{i}" for i, r in enumerate(VECTOR_ROWS)])
def test_vector(results: list[bytes], row: int) -> None:
    _, _, expect = VECTOR_ROWS[row]
    assert results[row].decode("latin-1") == expect
