"""The calibrated rig as a model the planner runs ahead of time: the simulated rig's plant under the
firmware's control, stepped as its frames are read, whose drive is heated by the drive model instead of
fio (a workload's heat for its runtime, no requests moved).
The planner (campaign.model_estimate) walks a plan's runs through the campaign's own phases on it, so
its equilibrium, transitions and cool-downs are judged by the same code as a real run's. The model is
the simulator's (`testbed/simulated_rig_model.py` builds it); procedures see this protocol only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from thermrig.dut.replay import Pattern
from thermrig.dut.simulation import SimulationControl

T = TypeVar("T")


class RigModel(Protocol):
    """Open (started) while it is used; closed by close()."""

    @property
    def link(self) -> Any:
        """The model's rig link (a RigLink, greeted)."""
        ...

    @property
    def sim(self) -> SimulationControl: ...

    def heat(self, pattern: Pattern | None) -> None:
        """From now on the drive works `pattern` flat out (its modelled power), or idles (None)."""
        ...

    def run(self, work: Callable[[], T]) -> T:
        """work() with the model's time advancing as it reads the link's frames (in the caller's thread), or
        in a thread while the model's time advances alongside it."""
        ...

    def close(self) -> None: ...


RigModelFactory = Callable[[str], RigModel]  # the drive profile (hardware/profiles/drives.toml) -> a started model
