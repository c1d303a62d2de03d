"""Frame codec: ``SEQ TYPE ARGS*CRC16\\n`` with CRC-16/CCITT-FALSE, byte-compatible with firmware/core/frame.c."""

from __future__ import annotations

import binascii
import re
from dataclasses import dataclass, field
from enum import Enum

PROTO_VERSION = 1
FRAME_MAX_LEN = 250  # bytes from the sequence number through the CRC digits, line ending excluded
FRAME_MAX_ARGS = 24
FRAME_MAX_TYPE_LEN = 8

_SEQ = re.compile(r"0|[1-9][0-9]{0,4}")
_TYPE = re.compile(rf"[A-Z]{{1,{FRAME_MAX_TYPE_LEN}}}")
_HEX4 = re.compile(r"[0-9A-F]{4}")


def crc16_ccitt_false(data: bytes) -> int:
    """CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, no reflection, xorout 0 (check 0x29B1).
    binascii's CRC-CCITT is exactly this when seeded with 0xFFFF, in C."""
    return binascii.crc_hqx(data, 0xFFFF)


class FrameError(Enum):
    LONG = "LONG"
    SYNTAX = "SYNTAX"
    CRC = "CRC"


class FrameDecodeError(ValueError):
    def __init__(self, kind: FrameError, line: bytes):
        super().__init__(f"{kind.value}: {line[:60]!r}")
        self.kind = kind
        self.line = line


@dataclass(frozen=True)
class Frame:
    seq: int
    type: str
    args: tuple[str, ...] = field(default_factory=tuple)

    def kv(self) -> dict[str, str]:
        """The ``key=value`` arguments as a dict; bare words are left out."""
        return dict(a.split("=", 1) for a in self.args if "=" in a)

    def words(self) -> list[str]:
        """The arguments that are not ``key=value``."""
        return [a for a in self.args if "=" not in a]


def encode(seq: int, type_: str, args: tuple[str, ...] | list[str] = ()) -> bytes:
    """Encode one frame including its line ending. Raises ValueError when it cannot be a valid frame."""
    if not 0 <= seq <= 0xFFFF:
        raise ValueError(f"sequence number {seq} outside 0..65535")
    if not _TYPE.fullmatch(type_):
        raise ValueError(f"frame type {type_!r} must be 1-{FRAME_MAX_TYPE_LEN} capital letters")
    if len(args) > FRAME_MAX_ARGS:
        raise ValueError(f"at most {FRAME_MAX_ARGS} arguments")
    for a in args:
        if not a or any(c in a for c in " *") or not all(0x20 < ord(c) < 0x7F for c in a):
            raise ValueError(f"argument {a!r} must be printable ASCII without spaces or '*'")
    payload = " ".join([str(seq), type_, *args]).encode("ascii")
    line = payload + b"*%04X" % crc16_ccitt_false(payload)
    if len(line) > FRAME_MAX_LEN:
        raise ValueError(f"frame of {len(line)} bytes exceeds {FRAME_MAX_LEN}")
    return line + b"\n"


def decode(line: bytes) -> Frame:
    """Decode one line without its line ending. Raises FrameDecodeError with the bad-frame class."""
    if len(line) > FRAME_MAX_LEN:
        raise FrameDecodeError(FrameError.LONG, line)
    if len(line) < 8 or line[-5:-4] != b"*" or not _HEX4.fullmatch(line[-4:].decode("latin-1")):
        raise FrameDecodeError(FrameError.SYNTAX, line)
    payload = line[:-5]
    if any(b < 0x20 or b > 0x7E or b == 0x2A for b in payload):
        raise FrameDecodeError(FrameError.SYNTAX, line)
    if crc16_ccitt_false(payload) != int(line[-4:], 16):
        raise FrameDecodeError(FrameError.CRC, line)
    tokens = payload.decode("ascii").split(" ")
    if (
        len(tokens) < 2
        or len(tokens) > FRAME_MAX_ARGS + 2
        or any(t == "" for t in tokens)
        or not _SEQ.fullmatch(tokens[0])
        or int(tokens[0]) > 0xFFFF
        or not _TYPE.fullmatch(tokens[1])
    ):
        raise FrameDecodeError(FrameError.SYNTAX, line)
    return Frame(int(tokens[0]), tokens[1], tuple(tokens[2:]))


class LineAssembler:
    """Bytes to lines, as firmware/core/frame.c's linebuf: LF ends a line, one CR before it is dropped,
    a line longer than FRAME_MAX_LEN is discarded whole and reported as FrameError.LONG."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._discarding = False

    def feed(self, data: bytes) -> list[bytes | FrameError]:
        """Completed lines (blank ones included) and LONG markers, in order."""
        out: list[bytes | FrameError] = []
        for byte in data:
            if byte == 0x0A:
                if self._discarding:
                    out.append(FrameError.LONG)
                else:
                    if self._buf.endswith(b"\r"):
                        del self._buf[-1]
                    out.append(bytes(self._buf))
                self._buf.clear()
                self._discarding = False
            elif not self._discarding:
                if len(self._buf) >= FRAME_MAX_LEN + (1 if byte == 0x0D else 0):
                    self._discarding = True
                else:
                    self._buf.append(byte)
        return out
