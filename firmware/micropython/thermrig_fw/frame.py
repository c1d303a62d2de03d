# Protocol frames (docs/protocol.md): CRC-16/CCITT-FALSE, line assembly, strict decoding, and an encoder
# that writes frames straight into a preallocated transmit buffer (no allocation per frame).
from array import array

from micropython import const

MAX_LEN = const(250)
MAX_ARGS = const(24)
MAX_TYPE_LEN = const(8)

OK = const(0)
ERR_LONG = const(1)
ERR_SYNTAX = const(2)
ERR_CRC = const(3)
ERR_NAMES = (b"OK", b"LONG", b"SYNTAX", b"CRC")

LINE_NONE = const(0)
LINE_READY = const(1)
LINE_LONG = const(2)

_STAR = const(0x2A)
_SPACE = const(0x20)
_HEX = b"0123456789ABCDEF"


def _crc_table():
    table = array("H", bytes(512))
    for i in range(256):
        crc = i << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
        table[i] = crc & 0xFFFF
    return table


# Table-driven: 512 bytes of RAM buy an eighth of the bitwise loop's time per byte.
_CRC_TABLE = _crc_table()


def crc16(buf, start, end):
    table = _CRC_TABLE
    crc = 0xFFFF
    for i in range(start, end):
        crc = ((crc << 8) & 0xFF00) ^ table[(crc >> 8) ^ buf[i]]
    return crc


def parse_int(buf, start, end):
    """Decimal integer with an optional '-', at most 10 digits; None when malformed."""
    neg = start < end and buf[start] == 0x2D
    if neg:
        start += 1
    if start >= end or end - start > 10:
        return None
    v = 0
    for i in range(start, end):
        c = buf[i] - 0x30
        if c < 0 or c > 9:
            return None
        v = v * 10 + c
    return -v if neg else v


class LineBuffer:
    """Collects bytes into lines; an overlong line is discarded whole and reported once, at its LF."""

    def __init__(self):
        self.buf = bytearray(MAX_LEN + 1)  # one spare byte for a CR before the LF
        self.n = 0
        self.discarding = False

    def reset(self):
        self.n = 0
        self.discarding = False

    def push(self, byte):
        if byte == 0x0A:
            if self.discarding:
                self.reset()
                return LINE_LONG
            if self.n > 0 and self.buf[self.n - 1] == 0x0D:
                self.n -= 1
            return LINE_READY
        if self.discarding:
            return LINE_NONE
        if self.n >= MAX_LEN + (1 if byte == 0x0D else 0):
            self.discarding = True
            return LINE_NONE
        self.buf[self.n] = byte
        self.n += 1
        return LINE_NONE


class Frame:
    """A decoded frame: token offsets into the line it was decoded from (token 0 SEQ, 1 TYPE, then args)."""

    def __init__(self):
        self.buf = None
        self.seq = 0
        self.crc = 0
        self.ntok = 0
        self.starts = array("H", bytes(2 * (MAX_ARGS + 2)))
        self.ends = array("H", bytes(2 * (MAX_ARGS + 2)))

    @property
    def nargs(self):
        return self.ntok - 2

    def type_is(self, name):
        return self.token_is(1, name)

    def token_is(self, k, text):
        s, e = self.starts[k], self.ends[k]
        if e - s != len(text):
            return False
        buf = self.buf
        for i in range(e - s):
            if buf[s + i] != text[i]:
                return False
        return True

    def token(self, k):
        return bytes(self.buf[self.starts[k] : self.ends[k]])


def _hex_value(c):
    if 0x30 <= c <= 0x39:
        return c - 0x30
    if 0x41 <= c <= 0x46:
        return c - 0x41 + 10
    return -1


def _seq_ok(buf, s, e):
    if buf[s] == 0x30 and e - s > 1:
        return False  # no leading zeros: one spelling per number
    if buf[s] == 0x2D:
        return False
    v = parse_int(buf, s, e)
    return v is not None and 0 <= v <= 65535


def _upper_word(buf, s, e):
    if e - s < 1 or e - s > MAX_TYPE_LEN:
        return False
    for i in range(s, e):
        if not 0x41 <= buf[i] <= 0x5A:
            return False
    return True


def decode(buf, n, f):
    """Decode the line buf[:n] (no line ending) into f; returns OK or the error class."""
    if n > MAX_LEN:
        return ERR_LONG
    if n < 8 or buf[n - 5] != _STAR:  # shortest frame: "0 A*HHHH"
        return ERR_SYNTAX
    want = 0
    for i in range(n - 4, n):
        h = _hex_value(buf[i])
        if h < 0:
            return ERR_SYNTAX
        want = (want << 4) | h
    plen = n - 5
    for i in range(plen):
        c = buf[i]
        if c < 0x20 or c > 0x7E or c == _STAR:
            return ERR_SYNTAX
    if crc16(buf, 0, plen) != want:
        return ERR_CRC
    # Split on single spaces; empty tokens (leading, trailing, double spaces) are malformed.
    ntok = 0
    start = 0
    for i in range(plen + 1):
        if i == plen or buf[i] == _SPACE:
            if i == start or ntok >= MAX_ARGS + 2:
                return ERR_SYNTAX
            f.starts[ntok] = start
            f.ends[ntok] = i
            ntok += 1
            start = i + 1
    if ntok < 2 or not _seq_ok(buf, f.starts[0], f.ends[0]) or not _upper_word(buf, f.starts[1], f.ends[1]):
        return ERR_SYNTAX
    f.buf = buf
    f.ntok = ntok
    f.seq = parse_int(buf, f.starts[0], f.ends[0])
    f.crc = want
    return OK


class TxBuffer:
    """Bytes to send. Frames are written in place: begin(), pieces, end() adds '*CRC' and LF; a frame that
    does not fit (buffer or MAX_LEN) is dropped whole and counted."""

    def __init__(self, cap=1024):
        self.buf = bytearray(cap)
        self.n = 0
        self.dropped = 0
        self.start = 0
        self.overflow = False

    def clear(self):
        self.n = 0
        self.overflow = False

    def open(self, seq):
        """Start a frame with its SEQ; the caller writes the rest (a kept reply is resent this way)."""
        self.start = self.n
        self.overflow = False
        self.u(seq)

    def begin(self, seq, type_):
        self.open(seq)
        self.ch(_SPACE)
        self.s(type_)

    def ch(self, c):
        if self.n >= len(self.buf) - 1:
            self.overflow = True
            return
        self.buf[self.n] = c
        self.n += 1

    def s(self, text):
        for c in text:
            self.ch(c)

    def u(self, v):
        digits = 1
        p = 10
        while p <= v:
            p *= 10
            digits += 1
        if self.n + digits >= len(self.buf):
            self.overflow = True
            return
        pos = self.n + digits - 1
        self.n += digits
        buf = self.buf
        while digits:
            buf[pos] = 0x30 + v % 10
            v //= 10
            pos -= 1
            digits -= 1

    def i(self, v):
        if v < 0:
            self.ch(0x2D)
            v = -v
        self.u(v)

    def hex(self, v, digits):
        shift = 4 * (digits - 1)
        while shift >= 0:
            self.ch(_HEX[(v >> shift) & 0xF])
            shift -= 4

    def kv(self, key, v):
        self.ch(_SPACE)
        self.s(key)
        self.ch(0x3D)
        self.i(v)

    def end(self):
        crc = crc16(self.buf, self.start, self.n)
        self.ch(_STAR)
        self.hex(crc, 4)
        if self.overflow or self.n - self.start > MAX_LEN:
            self.n = self.start
            self.dropped += 1
            return False
        self.ch(0x0A)
        if self.overflow:
            self.n = self.start
            self.dropped += 1
            return False
        return True
