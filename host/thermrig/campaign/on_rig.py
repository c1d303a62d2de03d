"""`thermrig run`'s procedure on one rig: the link opened and greeted (a rig of another protocol is
refused), its keepalive at the campaign's pace, the time sync told where a simulation changes pace,
the orchestrator walking the plan, and the rig left safe however it ends. The command line renders."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable
from pathlib import Path

from thermrig.campaign.orchestrator import Orchestrator
from thermrig.campaign.phases import Prompt
from thermrig.campaign.plan import Plan
from thermrig.campaign.progress import Progress
from thermrig.campaign.rundir import CampaignState
from thermrig.campaign.spec import CampaignError
from thermrig.db.settings import InfluxSettings
from thermrig.dut.drive import DriveUnderTest
from thermrig.dut.simulation import SimulationControl
from thermrig.fio.runner import FioError
from thermrig.firmware_identity import older_than_host
from thermrig.link.rig_link import RigLink


class CampaignInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) stopped the campaign; the rig is safe. unsent: the runs whose points wait in
    their spools (`thermrig db drain` sends them)."""

    def __init__(self, unsent: list[str]) -> None:
        super().__init__()
        self.unsent = unsent


def run_on_rig(
    plan: Plan,
    folder: Path,
    state: CampaignState,
    port: str,
    drive: DriveUnderTest,
    sim: SimulationControl | None,
    identity: dict[str, str | None],
    influx: InfluxSettings,
    prompt: Prompt,
    on_progress: Callable[[Progress], None],
    on_warning: Callable[[str], None],
) -> Orchestrator:
    """Walk the plan on the rig at `port`; the orchestrator, for what it left unsent or unanalysed."""
    with RigLink(port) as link:
        info = link.hello()  # refuses a rig of another protocol (VersionMismatch)
        if (warning := older_than_host(info.version)) is not None:
            on_warning(warning)
        link.start_keepalive(speed=plan.campaign.sim_speed if sim is not None else None)
        if sim is not None:  # the time sync restarts its fit where the simulation changes speed
            sim.watch_clock(link.follow_pace)
        orch = Orchestrator(plan, folder, link, influx, drive, sim, prompt, on_progress, identity)
        signal.signal(signal.SIGTERM, lambda *_: orch.stop.set())
        try:
            orch.run(state)
        except KeyboardInterrupt:
            orch.stop.set()
            raise CampaignInterrupted(orch.unsent) from None
        except FioError as exc:
            raise CampaignError(str(exc)) from exc
        finally:
            with contextlib.suppress(Exception):
                link.command("SAFE")
    return orch
