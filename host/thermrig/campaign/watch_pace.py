"""The simulated rig's pace around a run's phases: the campaign's speed (`[rig] speed`) while the host
watches the rig (equilibrium, baseline, cool-down, a driven transition), real time between them.

Between two watches the host does its own work: it writes the run's manifest and summaries, analyses
fio's logs, sets the drive's thermal configuration, starts the next run. On a real rig that takes what
it takes, a second or so of the drive's time. At 8x it took eight times as much of the simulated
drive's time, and as much more again on a busy machine, whose host is slower: where the next run's
equilibrium began, and so its result, moved with the host's load. At 1x it costs the simulated drive
what it costs a real one. While fio runs the virtual drive serves at 1x as well (SimulatedDrive)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from thermrig.dut.pacing import Pacing
from thermrig.dut.simulation import SimulationControl

BETWEEN_WATCHES = Pacing.accelerated(1.0)


class WatchPace:
    """watching(): the campaign's pace for as long as the block runs, BETWEEN_WATCHES after it. Nothing
    for a rig not simulated, or simulated in real time or stepped (its pace is the campaign's already)."""

    def __init__(self, sim: SimulationControl | None) -> None:
        pacing = sim.pacing if sim is not None else None
        accelerated = pacing is not None and pacing.mode == "accelerated" and pacing != BETWEEN_WATCHES
        self.sim = sim if accelerated else None
        self.fast = pacing if accelerated else None

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        if self.sim is None or self.fast is None:
            yield
            return
        self.sim.set_pacing(self.fast)
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):  # a simulation gone failed the watch: that error is the one
                self.sim.set_pacing(BETWEEN_WATCHES)
            raise
        self.sim.set_pacing(BETWEEN_WATCHES)
