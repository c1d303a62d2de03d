"""A campaign on one testbed: what it runs on, opened once (thermrig.testbed: greeted, its heartbeat at
the campaign's pace, its health checked, SAFE however it ends), and the one per-run path (`walk`) that a
local campaign and every lab place's share take: the orchestrator walking the plan, Ctrl-C and SIGTERM
stopping it with the rig safe. The command line renders; the calibration calls run_campaign too."""

from __future__ import annotations

from collections.abc import Callable

from thermrig.campaign.orchestrator import CampaignHooks, Orchestrator
from thermrig.campaign.plan import Plan
from thermrig.campaign.rundir import CampaignState
from thermrig.campaign.spec import Campaign, CampaignError
from thermrig.db.influx_settings import InfluxSettings
from thermrig.dut.pacing import Pacing
from thermrig.fio.runner import FioError
from thermrig.testbed import Kind, LocalDriveSpec, LocalRig, SimulatedRigSpec, open_testbed


class CampaignInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) stopped the campaign; the rig is safe. unsent: the runs whose points wait in
    their spools (`thermrig db drain` sends them)."""

    def __init__(self, unsent: list[str]) -> None:
        super().__init__()
        self.unsent = unsent


def testbed_of(c: Campaign, destroy: bool = False) -> Kind:
    """What a campaign's [rig] and [drive] name: its rig's port, or a simulated rig (the plant paces itself
    with the virtual drive, so the drive can run it at 1x while fio runs and at [rig] speed in between);
    a block device or a file on this machine (checked by the drive guard: `destroy` allows writing over a
    block device), or the simulated rig's virtual drive."""
    local = None
    if not c.drive.is_virtual:
        local = LocalDriveSpec(
            c.drive.target, c.drive.size, c.drive.is_block_device, c.drive.serial, destroy, str(c.path)
        )
    if c.port != "sim":
        return LocalRig(c.port, drive=local)  # a virtual drive needs port = "sim" (spec.py)
    if c.drive.is_virtual:
        return SimulatedRigSpec(
            Pacing.accelerated(c.sim_speed),
            c.sim_firmware,
            drive_profile=c.drive.profile,
            drive_scale=c.drive.scale,
            drive_keep_data=c.drive.keep_data,
            drive_filesystem=bool(c.drive.filesystem),
            drive_file_size=c.drive.size,
        )
    return SimulatedRigSpec(Pacing.of_speed(c.sim_speed), c.sim_firmware, local_drive=local)


def walk(orch: Orchestrator, state: CampaignState) -> Orchestrator:
    """The orchestrator's plan walked: CampaignInterrupted on Ctrl-C or SIGTERM (the run marked aborted,
    the rig safe), CampaignError when fio cannot run at all."""
    try:
        orch.run(state)
    except KeyboardInterrupt:
        orch.stop.set()
        raise CampaignInterrupted(orch.unsent) from None
    except FioError as exc:
        raise CampaignError(str(exc)) from exc
    return orch


def run_campaign(
    plan: Plan,
    state: CampaignState,
    influx: InfluxSettings,
    hooks: CampaignHooks,
    destroy: bool = False,
    on_warning: Callable[[str], None] = lambda text: None,
    stored_gains: bool = False,
) -> Orchestrator:
    """The plan walked on the testbed its campaign names; the orchestrator, for what it left unsent or
    unanalysed. A rig with latched faults is refused before any run. stored_gains: the rig gets the gains
    `thermrig rig tune` stored for it (`thermrig run` asks; the calibration runs the firmware's)."""
    testbed = testbed_of(plan.campaign, destroy)
    with open_testbed(testbed, require_clear=True, stored_gains=stored_gains) as bed:
        for warning in bed.warnings:
            on_warning(warning)
        return walk(Orchestrator(plan, state.folder, bed, influx, hooks), state)
