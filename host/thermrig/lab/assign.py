"""Which place runs which run of a campaign: a run goes to a place whose fixed hardware (its slot,
heatsink, airflow tags) matches the run's physical factors with no operator prompt; to a place where
that hardware is not fixed, the operator sets it up when asked; never to a place whose fixed hardware
differs. A run goes where the operator has the least to set up (a place matching all its hardware
first); among those places, runs are spread so that they finish together (longest run first, each to
the place that frees up first)."""

from __future__ import annotations

from dataclasses import dataclass, field

from thermrig.lab.errors import LabError
from thermrig.lab.rig_place import tag_value

FIXED = ("slot", "heatsink", "airflow")  # the physical factors a place's hardware may fix


@dataclass(frozen=True)
class RunNeed:
    run_id: str
    physical: dict[str, str]  # slot, heatsink, airflow as the campaign plans them
    estimate_s: float


@dataclass(frozen=True)
class PlaceHardware:
    name: str
    tags: dict[str, str]  # the place's tags; its fixed hardware among them

    def takes(self, run: RunNeed) -> int | None:
        """None: the place cannot run it (its fixed hardware differs); else how many of the run's physical
        factors the operator sets up there (0: none, no prompt)."""
        asked = 0
        for key, value in run.physical.items():
            if key not in FIXED:
                continue
            fixed = self.tags.get(key)
            if fixed is None:
                asked += 1
            elif fixed != tag_value(str(value)):
                return None
        return asked


@dataclass
class Lane:
    place: str
    runs: list[str] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)  # the runs the operator sets up at this place
    busy_s: float = 0.0


@dataclass(frozen=True)
class Assignment:
    lanes: tuple[Lane, ...]

    @property
    def makespan_s(self) -> float:
        """The planned wall time with every place working at once."""
        return max((lane.busy_s for lane in self.lanes), default=0.0)

    def place_of(self, run_id: str) -> str:
        return next(lane.place for lane in self.lanes if run_id in lane.runs)


def assign(runs: list[RunNeed], places: list[PlaceHardware]) -> Assignment:
    if not places:
        raise LabError("no place to run on")
    lanes = {p.name: Lane(p.name) for p in places}
    for run in sorted(runs, key=lambda r: (-r.estimate_s, r.run_id)):
        options = [(lanes[p.name], fit) for p in places if (fit := p.takes(run)) is not None]
        if not options:
            want = ", ".join(f"{k}={v}" for k, v in sorted(run.physical.items()) if k in FIXED)
            raise LabError(f"run {run.run_id} needs {want}: no place has that hardware or lets the operator set it")
        lane, asked = min(options, key=lambda o: (o[1], o[0].busy_s, o[0].place))
        lane.runs.append(run.run_id)
        lane.busy_s += run.estimate_s
        if asked:
            lane.prompts.append(run.run_id)
    order = {r.run_id: i for i, r in enumerate(runs)}
    for lane in lanes.values():  # each place walks its runs in the plan's (randomised) order
        lane.runs.sort(key=order.__getitem__)
        lane.prompts.sort(key=order.__getitem__)
    return Assignment(tuple(lanes.values()))
