"""Who does what the bring-up asks with their hands: a person at the rig (the CLI's console operator), or
the simulated rig's plant playing the touches (thermrig.sim.bringup_operator). The bring-up knows them only
through this protocol."""

from __future__ import annotations

from typing import Protocol


class Operator(Protocol):
    def touch(self, place: str, channel: str) -> None:
        """Hold the bead at `place` (a channel name: where the wiring table says that bead goes) between
        two fingers until told to let go; `channel` is the telemetry key it should show on."""
        ...

    def let_go(self, place: str) -> None: ...

    def go_ahead(self, question: str) -> bool:
        """Ask before something the operator must be ready for (heat); False skips it."""
        ...
