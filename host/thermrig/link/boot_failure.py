"""A rig whose firmware did not start answers every frame with NAK BOOT and the reason it gives: here in
words, with what to do about it."""

from __future__ import annotations

from urllib.parse import unquote

from thermrig.link.errors import NakError
from thermrig.protocol.messages import Nak


class BootFailed(NakError):
    """The rig's firmware stopped at start-up, its outputs safe: it answers every command with NAK BOOT."""

    def __init__(self, command: str, nak: Nak):
        super().__init__(command, nak)
        self.args = (f"the rig's firmware did not start: {boot_failure_words(nak.detail or '')}",)


def boot_failure_words(reason: str) -> str:
    """The firmware's reason (kind=value, value percent-encoded) as a sentence."""
    kind, _, sent = reason.partition("=")
    value = unquote(sent)
    if kind == "setup":
        return f"the board refused to set up {value}: fix that setting and copy the firmware again"
    if kind == "missing":
        return f"the module {value} is missing on the board: copy the whole firmware folder again"
    if kind == "micropython":
        return f"its MicroPython is too old ({value}): flash a newer MicroPython"
    return reason or "no reason given"
