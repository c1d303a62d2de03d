"""What a campaign on a lab needs before any place is asked for: a coordinator (`thermrig run --lab`'s,
else its [lab] table's), and --destroy where fio writes over a block device on each place's test PC."""

from __future__ import annotations

from thermrig.campaign.lab_table import LabTable
from thermrig.campaign.plan import Plan
from thermrig.campaign.spec import CampaignError
from thermrig.lab.errors import LabError


def preflight(plan: Plan, coordinator: str | None, destroy: bool) -> str:
    """The coordinator the campaign runs on, once it may run there."""
    c = plan.campaign
    address = coordinator or (c.lab or LabTable()).coordinator
    if not address:
        raise LabError(f'{c.path}: [lab] names no coordinator: add coordinator = "HOST:PORT" or pass --lab')
    if c.drive.is_block_device and not destroy:
        raise CampaignError(
            f"{c.path}: [drive] target {c.drive.target} is a block device on each place's test PC and fio "
            "writes over it: pass --destroy"
        )
    return address
