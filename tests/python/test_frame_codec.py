"""The Python codec against the shared vectors, and properties of encode/decode (hypothesis)."""

from __future__ import annotations

import re

import pytest
from conftest import VECTORS
from hypothesis import given
from hypothesis import strategies as st

from thermrig.protocol.frame import (
    FRAME_MAX_LEN,
    FrameDecodeError,
    FrameError,
    LineAssembler,
    crc16_ccitt_false,
    decode,
    encode,
)


def unescape(text: str) -> bytes:
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            c = text[i + 1]
            if c == "x":
                out.append(int(text[i + 2 : i + 4], 16))
                i += 4
                continue
            out += {"n": b"\n", "r": b"\r", "t": b"\t"}.get(c, c.encode())
            i += 2
        else:
            out += text[i].encode("latin-1")
            i += 1
    return bytes(out)


def describe(line: bytes) -> str:
    try:
        f = decode(line)
    except FrameDecodeError as exc:
        return f"ERR {exc.kind.value}"
    return " ".join(["OK", str(f.seq), f.type, *f.args])


def rows() -> list[tuple[str, bytes, str]]:
    out = []
    for line in VECTORS.read_text(encoding="latin-1").splitlines():
        if line and not line.startswith("#"):
            op, inp, expect = line.split("\t")
            out.append((op, unescape(inp), unescape(expect).decode("latin-1")))
    return out


VECTOR_ROWS = rows()


def test_vector_file_covers_every_class() -> None:
    ops = {r[0] for r in VECTOR_ROWS}
    assert ops == {"crc", "encode", "decode", "stream"}
    results = " ".join(r[2] for r in VECTOR_ROWS)
    for kind in ("ERR LONG", "ERR SYNTAX", "ERR CRC", "OK"):
        assert kind in results


@pytest.mark.parametrize(("op", "inp", "expect"), VECTOR_ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(VECTOR_ROWS)])
def test_vector(op: str, inp: bytes, expect: str) -> None:
    if op == "crc":
        got = f"{crc16_ccitt_false(inp):04X}"
    elif op == "encode":
        seq, type_, *args = inp.decode().split(" ")
        got = encode(int(seq), type_, args).decode("latin-1")
    elif op == "decode":
        got = describe(inp)
    else:
        results = []
        for line in LineAssembler().feed(inp):
            if isinstance(line, FrameError):
                results.append(f"ERR {line.value}")
            elif line:
                results.append(describe(line))
        got = "|".join(results) or "-"
    assert got == expect


ARG = st.from_regex(re.compile(r"[!-)+-~]{1,12}"), fullmatch=True)


@given(
    seq=st.integers(0, 0xFFFF),
    type_=st.from_regex(re.compile(r"[A-Z]{1,8}"), fullmatch=True),
    args=st.lists(ARG, max_size=12),
)
def test_encode_decode_round_trip(seq: int, type_: str, args: list[str]) -> None:
    try:
        data = encode(seq, type_, args)
    except ValueError:
        assert len(" ".join([str(seq), type_, *args])) + 5 > FRAME_MAX_LEN
        return
    frame = decode(data[:-1])
    assert (frame.seq, frame.type, list(frame.args)) == (seq, type_, args)


@given(st.binary(max_size=300))
def test_decode_arbitrary_bytes_only_raises_frame_errors(data: bytes) -> None:
    try:
        frame = decode(data)
    except FrameDecodeError as exc:
        assert exc.kind in set(FrameError)
    else:
        assert encode(frame.seq, frame.type, frame.args)[:-1] == data


@given(st.binary(max_size=2000), st.integers(1, 64))
def test_line_assembler_is_chunking_invariant(data: bytes, chunk: int) -> None:
    whole = LineAssembler().feed(data)
    pieces = LineAssembler()
    split = [x for i in range(0, len(data), chunk) for x in pieces.feed(data[i : i + chunk])]
    assert whole == split
    assert all(isinstance(x, FrameError) or len(x) <= FRAME_MAX_LEN + 1 for x in whole)


def test_encode_rejects_what_cannot_be_a_frame() -> None:
    with pytest.raises(ValueError):
        encode(70000, "PING")
    with pytest.raises(ValueError):
        encode(1, "ping")
    with pytest.raises(ValueError):
        encode(1, "SET", ["a b"])
    with pytest.raises(ValueError):
        encode(1, "SET", ["x=" + "9" * 300])
