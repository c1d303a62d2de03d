"""The NBD protocol as far as the virtual drive serves it: fixed newstyle handshake with NBD_OPT_GO,
NBD_OPT_INFO, NBD_OPT_EXPORT_NAME, NBD_OPT_LIST and NBD_OPT_ABORT, then simple replies (no structured
replies). Numbers from the NBD protocol document (github.com/NetworkBlockDevice/nbd, doc/proto.md)."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

NBDMAGIC = b"NBDMAGIC"
IHAVEOPT = b"IHAVEOPT"
OPT_REPLY_MAGIC = 0x3E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698

FLAG_FIXED_NEWSTYLE = 1 << 0
FLAG_NO_ZEROES = 1 << 1

OPT_EXPORT_NAME = 1
OPT_ABORT = 2
OPT_LIST = 3
OPT_INFO = 6
OPT_GO = 7

REP_ACK = 1
REP_SERVER = 2
REP_INFO = 3
REP_ERR_UNSUP = (1 << 31) + 1
REP_ERR_INVALID = (1 << 31) + 3

INFO_EXPORT = 0
INFO_BLOCK_SIZE = 3

# transmission flags: flush, FUA, trim and write-zeroes are served (the drive stores no data)
TFLAG_HAS_FLAGS = 1 << 0
TFLAG_SEND_FLUSH = 1 << 2
TFLAG_SEND_FUA = 1 << 3
TFLAG_SEND_TRIM = 1 << 5
TFLAG_SEND_WRITE_ZEROES = 1 << 6
TRANSMISSION_FLAGS = TFLAG_HAS_FLAGS | TFLAG_SEND_FLUSH | TFLAG_SEND_FUA | TFLAG_SEND_TRIM | TFLAG_SEND_WRITE_ZEROES

CMD_READ = 0
CMD_WRITE = 1
CMD_DISC = 2
CMD_FLUSH = 3
CMD_TRIM = 4
CMD_WRITE_ZEROES = 6
CMD_FLAG_NO_HOLE = 1 << 1  # write-zeroes: the client wants the range allocated

EINVAL = 22
ENOSPC = 28
ENOTSUP = 95

REQUEST = struct.Struct(">IHHQQI")  # magic, flags, type, cookie, offset, length: 28 bytes
REPLY = struct.Struct(">IIQ")  # magic, error, cookie: 16 bytes
OPTION = struct.Struct(">8sII")  # IHAVEOPT, option, length

MIN_BLOCK = 512  # requests must be aligned to this (a 512 B sector), as a real namespace's LBA format
PREFERRED_BLOCK = 4096
MAX_PAYLOAD = 32 * 1024 * 1024  # the largest read or write served; libnbd's own limit


class HandshakeError(ConnectionError):
    pass


@dataclass(frozen=True)
class Export:
    name: str
    size: int


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:  # not MSG_WAITALL: the socket has a timeout, so Python keeps it non-blocking
        more = sock.recv(n - len(data))
        if not more:
            raise HandshakeError("client closed during the handshake")
        data += more
    return data


def _opt_reply(sock: socket.socket, option: int, kind: int, data: bytes = b"") -> None:
    sock.sendall(struct.pack(">QIII", OPT_REPLY_MAGIC, option, kind, len(data)) + data)


def _export_info(export: Export) -> bytes:
    return struct.pack(">HQH", INFO_EXPORT, export.size, TRANSMISSION_FLAGS)


def _block_info() -> bytes:
    return struct.pack(">HIII", INFO_BLOCK_SIZE, MIN_BLOCK, PREFERRED_BLOCK, MAX_PAYLOAD)


def handshake(sock: socket.socket, export: Export) -> bool:
    """Negotiate one connection. True: the client entered transmission; False: it aborted or only
    listed. Any export name is accepted (the server has one)."""
    sock.sendall(NBDMAGIC + IHAVEOPT + struct.pack(">H", FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES))
    (client_flags,) = struct.unpack(">I", _recv_exact(sock, 4))
    if client_flags & ~(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES):
        raise HandshakeError(f"unknown client flags {client_flags:#x}")
    while True:
        magic, option, length = OPTION.unpack(_recv_exact(sock, OPTION.size))
        if magic != IHAVEOPT:
            raise HandshakeError("bad option magic")
        if length > 65536:
            raise HandshakeError(f"option {option} with {length} bytes of data")
        data = _recv_exact(sock, length)
        if option == OPT_EXPORT_NAME:  # old-style: no reply header, straight into transmission
            tail = b"" if client_flags & FLAG_NO_ZEROES else bytes(124)
            sock.sendall(struct.pack(">QH", export.size, TRANSMISSION_FLAGS) + tail)
            return True
        if option == OPT_ABORT:
            _opt_reply(sock, option, REP_ACK)
            return False
        if option == OPT_LIST:
            name = export.name.encode()
            _opt_reply(sock, option, REP_SERVER, struct.pack(">I", len(name)) + name)
            _opt_reply(sock, option, REP_ACK)
        elif option in (OPT_INFO, OPT_GO):
            if length < 6 or 4 + struct.unpack(">I", data[:4])[0] + 2 > length:
                _opt_reply(sock, option, REP_ERR_INVALID)
                continue
            _opt_reply(sock, option, REP_INFO, _export_info(export))
            _opt_reply(sock, option, REP_INFO, _block_info())
            _opt_reply(sock, option, REP_ACK)
            if option == OPT_GO:
                return True
        else:  # structured replies, meta contexts, TLS: not served; the client falls back
            _opt_reply(sock, option, REP_ERR_UNSUP)
