"""The MicroPython firmware's own account of its heap and loop (its MEM command): free and used heap bytes,
and the longest garbage collection and tick, timed by the board's µs clock. The C firmwares answer
NAK UNKNOWN: a C firmware has no heap."""

from __future__ import annotations

from dataclasses import dataclass

from thermrig.protocol.frame import Frame
from thermrig.protocol.messages import ProtocolError


@dataclass(frozen=True)
class HeapReport:
    free: int  # bytes free now (gc.mem_free(): garbage since the last collection counts as used)
    used: int  # bytes allocated now (gc.mem_alloc())
    free_after_gc: int  # bytes free after the last collection, read in the next tick (0 before the first)
    collections: int  # collections at the tick's fixed point since the start
    gc_last_us: int  # the last one's time
    gc_max_us: int  # the longest one
    tick_max_us: int  # the longest tick, from its sample to the end of its work (its collection included)

    @property
    def heap(self) -> int:
        """The heap's size for objects."""
        return self.free + self.used

    @classmethod
    def from_ack(cls, frame: Frame) -> HeapReport:
        kv = frame.kv()
        try:
            values = [int(kv[k]) for k in ("free", "used", "gcfree", "gcs", "gc_us", "gcmax_us", "tickmax_us")]
        except (KeyError, ValueError) as exc:
            raise ProtocolError(f"malformed MEM reply: {' '.join(frame.args)}") from exc
        if min(values) < 0:
            raise ProtocolError(f"malformed MEM reply: {' '.join(frame.args)}")
        return cls(*values)
