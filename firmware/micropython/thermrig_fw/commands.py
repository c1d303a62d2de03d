# Host commands (firmware/core/rig_cmd.c): HELLO, SET, CLEAR, PING, SAFE; and MEM, this firmware's own.
# SET is validated whole before anything applies. Each command changes the rig and writes its reply's
# body ("ACK s ..." or "NAK s REASON") into the caller's buffer; the rig frames, sends and keeps it.
# Commands are rare (about one a second), so they may allocate; the tick path does not.
import gc

from . import config as c
from .frame import parse_int

# key, min, max: the ranges the firmware enforces whatever the host asks.
_SET_KEYS = (
    (b"air", c.AIR_TARGET_MIN_CC, c.AIR_TARGET_MAX_CC),
    (b"heat", 0, 1),
    (b"hlim", 0, c.FULL_SCALE_PM),
    (b"fan0", 0, c.FULL_SCALE_PM),
    (b"fan1", 0, c.FULL_SCALE_PM),
    (b"rpm0", 0, c.FAN_MAX_RPM),
    (b"rpm1", 0, c.FAN_MAX_RPM),
    (b"rate", 0, c.TEL_MAX_MS),
    (b"kp", 0, c.AIR_KP_MAX),
    (b"ki", 0, c.AIR_KI_MAX),
    (b"kd", 0, c.AIR_KD_MAX),
)
_AIR, _HEAT, _HLIM, _FAN0, _FAN1, _RPM0, _RPM1, _RATE, _KP, _KI, _KD = range(11)
_HELLO_ID = b"fw=" + c.FW_NAME + b" ver=" + c.FW_VERSION


def ack(reply, host_seq):
    reply.s(b"ACK ")
    reply.u(host_seq)


def nak(reply, host_seq, reason, detail=None):
    """A NAK's body; host_seq < 0 writes '-' (the frame could not be read)."""
    reply.s(b"NAK ")
    if host_seq < 0:
        reply.ch(0x2D)
    else:
        reply.u(host_seq)
    reply.ch(0x20)
    reply.s(reason)
    if detail is not None:
        reply.ch(0x20)
        reply.s(detail)


def _hello(rig, f, reply):
    buf = f.buf
    for k in range(2, f.ntok):
        s, e = f.starts[k], f.ends[k]
        if buf[s : min(s + 6, e)] == b"proto=":
            v = parse_int(buf, s + 6, e)
            if v is None or not 0 <= v <= 65535:
                nak(reply, f.seq, b"ARG", b"proto")
                return
            if v != c.PROTO_VERSION:
                nak(reply, f.seq, b"VERSION", b"proto=1")
                return
    ack(reply, f.seq)
    reply.ch(0x20)
    reply.s(_HELLO_ID)
    reply.kv(b"proto", c.PROTO_VERSION)
    reply.s(b" board=")
    reply.s(rig.board)
    reply.kv(b"hto", c.HOST_TIMEOUT_MS)  # how long heating goes without a host frame: the host's keepalive
    reply.s(b" ch=")
    reply.s(c.CHANNEL_MAP)


def _set(rig, f, reply):
    if f.nargs == 0:
        nak(reply, f.seq, b"ARG")
        return
    buf = f.buf
    given = [None] * len(_SET_KEYS)
    for k in range(2, f.ntok):
        s, e = f.starts[k], f.ends[k]
        eq = s
        while eq < e and buf[eq] != 0x3D:
            eq += 1
        key = buf[s:eq] if eq < e else b""
        idx = 0
        while idx < len(_SET_KEYS) and _SET_KEYS[idx][0] != key:
            idx += 1
        if idx == len(_SET_KEYS):
            nak(reply, f.seq, b"ARG")
            return
        name, lo, hi = _SET_KEYS[idx]
        v = parse_int(buf, eq + 1, e)
        if v is None:
            nak(reply, f.seq, b"ARG", name)
            return
        if not lo <= v <= hi or (idx == _RATE and v != 0 and v < c.TEL_MIN_MS):
            nak(reply, f.seq, b"RANGE", name)
            return
        given[idx] = v
    if given[_HEAT] == 1 and rig.safety.tripped():
        nak(reply, f.seq, b"STATE", b"heat")
        return
    if given[_AIR] is not None:
        rig.air_target_cc = given[_AIR]
    if given[_HLIM] is not None:
        rig.heat_limit_pm = given[_HLIM]
        if rig.heater_pm > rig.heat_limit_pm:
            rig.heater_pm = rig.heat_limit_pm  # a lower limit holds from now, not the next step
    if given[_HEAT] is not None:
        if given[_HEAT] == 1 and not rig.heat_enabled:
            rig.pid.reset()
        rig.heat_enabled = given[_HEAT] == 1
    for i in range(c.NUM_FANS):
        if given[_FAN0 + i] is not None:
            rig.fans[i].set_duty(given[_FAN0 + i])
        if given[_RPM0 + i] is not None:
            rig.fans[i].set_rpm(given[_RPM0 + i])
    if given[_RATE] is not None:
        rig.tel_period_ms = given[_RATE]
        rig.next_tel_ms = rig.now_ms
    # New gains take effect at the next step; the integral is in output units, so it carries over.
    if given[_KP] is not None:
        rig.pid.kp = given[_KP]
    if given[_KI] is not None:
        rig.pid.ki = given[_KI]
    if given[_KD] is not None:
        rig.pid.kd = given[_KD]
    ack(reply, f.seq)


def _clear(rig, f, reply):
    rig.safety.clear()
    rig.reported_faults = 0
    rig.heat_enabled = False  # a cleared rig does not resume heating by itself: the host enables it again
    ack(reply, f.seq)


def _ping(rig, f, reply):
    ack(reply, f.seq)
    reply.s(b" us=")
    reply.u(rig.now_us)


def _safe(rig, f, reply):
    rig.go_safe()
    ack(reply, f.seq)


def _mem(rig, f, reply):
    # The heap now (garbage since the last collection counts as used), free after the last collection
    # (read in the tick after it), and the last and longest collection and the longest tick since the start, in µs of the
    # MCU's clock. The C firmwares answer NAK UNKNOWN.
    heap = rig.heap
    ack(reply, f.seq)
    reply.kv(b"free", gc.mem_free())
    reply.kv(b"used", gc.mem_alloc())
    reply.kv(b"gcfree", heap.free_after_gc)
    reply.kv(b"gcs", heap.collections)
    reply.kv(b"gc_us", heap.gc_last_us)
    reply.kv(b"gcmax_us", heap.gc_max_us)
    reply.kv(b"tickmax_us", heap.tick_max_us)


_COMMANDS = (
    (b"HELLO", _hello),
    (b"SET", _set),
    (b"CLEAR", _clear),
    (b"PING", _ping),
    (b"SAFE", _safe),
    (b"MEM", _mem),
)


def dispatch(rig, f, reply):
    for name, fn in _COMMANDS:
        if f.type_is(name):
            fn(rig, f, reply)
            return
    nak(reply, f.seq, b"UNKNOWN")
