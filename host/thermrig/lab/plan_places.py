"""`thermrig lab plan`: a campaign's planned runs shared out over a lab's places (lab.assign): the places
of a coordinator that match the tags, or a number of places alike that fix no hardware."""

from __future__ import annotations

from dataclasses import dataclass

from thermrig.campaign.plan import Plan
from thermrig.lab.assign import FIXED, Assignment, PlaceHardware, RunNeed, assign
from thermrig.lab.errors import LabError


@dataclass(frozen=True)
class PlacesPlan:
    places: list[PlaceHardware]
    assignment: Assignment  # a lane per place, in the same order
    one_place_s: float  # every run on one place, one after another

    def fixed(self, place: PlaceHardware) -> str:
        """The hardware the place fixes, as KEY=VALUE words ("" where it fixes none)."""
        return " ".join(f"{k}={v}" for k, v in sorted(place.tags.items()) if k in FIXED)


def plan_places(plan: Plan, coordinator: str = "", tags: dict[str, str] | None = None, count: int = 1) -> PlacesPlan:
    """The plan's runs over the places at coordinator whose tags include tags (labgrid's values,
    rig_place.tag_value), or without a coordinator over count places that fix nothing."""
    runs = [RunNeed(r.run_id, {k: str(v) for k, v in r.physical.items()}, plan.estimate_s(r)) for r in plan.runs]
    if coordinator:
        from thermrig.lab.client import LabClient  # labgrid: only when a lab is asked

        with LabClient(coordinator) as client:
            places = [PlaceHardware(n, client.place(n).tags) for n in client.matching(tags or {})]
        if not places:
            raise LabError(f"no place at {coordinator} matches the tags")
    else:
        places = [PlaceHardware(f"place-{i + 1}", {}) for i in range(count)]
    return PlacesPlan(places, assign(runs, places), sum(r.estimate_s for r in runs))
