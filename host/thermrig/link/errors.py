"""What a command to the rig can end in besides its reply: no answer, a refusal, a protocol mismatch."""

from __future__ import annotations

from thermrig.errors import ThermrigError
from thermrig.protocol.messages import Nak, ProtocolError


class RigTimeout(ThermrigError, TimeoutError):
    """The rig did not answer a command in time, after every retry."""


class NakError(ThermrigError, RuntimeError):
    """The rig refused a command. latched: the faults its latest telemetry had latched, named, when it
    refused to heat for them (NAK STATE): the words say which, and what to do."""

    def __init__(self, command: str, nak: Nak, latched: str = ""):
        detail = f" ({nak.detail})" if nak.detail else ""
        why = f": the rig refuses to heat while {latched} is latched; find its cause, then `thermrig rig clear`"
        super().__init__(f"rig refused {command}: {nak.reason}{detail}{why if latched else ''}")
        self.nak = nak
        self.latched = latched


class VersionMismatch(ProtocolError):
    """The rig speaks a protocol version this host does not."""
