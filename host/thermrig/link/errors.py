"""What a command to the rig can end in besides its reply: no answer, a refusal, a protocol mismatch."""

from __future__ import annotations

from thermrig.errors import ThermrigError
from thermrig.protocol.messages import Nak, ProtocolError


class RigTimeout(ThermrigError, TimeoutError):
    """The rig did not answer a command in time, after every retry."""


class NakError(ThermrigError, RuntimeError):
    def __init__(self, command: str, nak: Nak):
        detail = f" ({nak.detail})" if nak.detail else ""
        super().__init__(f"rig refused {command}: {nak.reason}{detail}")
        self.nak = nak


class VersionMismatch(ProtocolError):
    """The rig speaks a protocol version this host does not."""
