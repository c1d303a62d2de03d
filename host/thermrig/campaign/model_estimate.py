"""The planner's estimates without history: a plan's runs walked in its order through the campaign's own
phases (campaign.run_phases, through Phases.walk: its equilibrium rule, driven or passive transitions, active
or passive cool-downs, skipped cool-downs, the tail baseline) on the calibrated rig model
(thermrig.dut.rig_model: the simulated rig's plant under the firmware's control, stepped as the phases
read its frames, the drive model's heat in place of fio). Each run's rig time per phase
becomes a recorded run of a History, so the planner reads the model as it reads a rig's manifests (by
transition, by profile and workload) and any other order of the same campaign is estimated from it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from thermrig.campaign.history import History, RunRecord, workload_key
from thermrig.campaign.plan import Plan, RunSpec
from thermrig.campaign.progress import Progress, ProgressDisplay
from thermrig.campaign.run_phases import Phases
from thermrig.campaign.workload_phase import WorkloadPhase
from thermrig.db.recorder import Recorder
from thermrig.db.schema import RunTags
from thermrig.dut.replay import Pattern
from thermrig.dut.rig_model import RigModel, RigModelFactory
from thermrig.fio.workloads import ResolvedWorkload, WorkloadKind, parse_size
from thermrig.testbed import Testbed

MODEL_SOURCE = "the calibrated rig model"
K = WorkloadKind
# Each kind's heat on the drive model: (writes, random). Mixed sweeps write; a lab's own job file (whose
# pattern is fio's to read) counts as sequential writes, the drive at its hottest.
HEAT = {
    K.SEQ_READ: (False, False),
    K.SEQ_WRITE: (True, False),
    K.RAND_READ: (False, True),
    K.RAND_WRITE: (True, True),
    K.MIXED_RANDOM_SWEEP: (True, True),
    K.MIXED_SEQ_SWEEP: (True, False),
    K.CONSISTENCY: (True, True),
    K.SNIA_PRECONDITION: (True, False),
    K.SNIA_STEADY_STATE: (True, True),
    K.LAB: (True, False),
    K.RATE_SEARCH: (True, False),
}

DEFAULT_BS = 128 * 1024
Progressed = Callable[[int, int], None]  # runs walked, of how many


def pattern_of(w: ResolvedWorkload) -> Pattern:
    """The workload's heat as the drive model's steady pattern: reads or writes, random or sequential
    (HEAT), at its block size (a lab's job file: DEFAULT_BS)."""
    write, random = HEAT[w.kind]
    return Pattern(write=write, random=random, bs=parse_size(w.bs) if w.bs else DEFAULT_BS)


class _Unrecorded:
    """A recorder that keeps nothing: the model's runs leave no data."""

    def event(self, kind: str, detail: str = "", at_ns: int | None = None) -> None:
        pass

    def append(self, lines: list[str]) -> None:
        pass


class _Heat:
    """In place of fio: the drive model busy with the workload's pattern for its runtime, in rig time."""

    def __init__(self, model: RigModel, phases: Phases, plan: Plan) -> None:
        self.model, self.phases, self.plan = model, phases, plan
        self.extra_fields: Any = None
        self.equilibrium: Any = None

    def run(self, spec: RunSpec, run_dir: Path, recorder: Recorder, tags: Any) -> dict[str, Any]:
        self.model.heat(pattern_of(spec.workload))
        try:
            self.phases.telemetry(self.plan.phases(spec).workload_s)
        finally:
            self.model.heat(None)
        return {}


def model_history(plan: Plan, factory: RigModelFactory, progressed: Progressed | None = None) -> History:
    """The plan's runs in its order on a fresh rig model (from a cold rig, as a campaign starts), each
    run's phases in rig time as a RunRecord."""
    c = plan.campaign
    model = factory(c.drive.profile)
    try:
        bed = Testbed("model", model.link, model.link.info, None, model.sim)  # type: ignore[arg-type]
        phases = Phases(c, bed, ProgressDisplay(Progress(), None), threading.Event())
        phases.workload = cast(WorkloadPhase, _Heat(model, phases, plan))
        recorder = cast(Recorder, _Unrecorded())
        records: list[RunRecord] = []
        for n, (run, after) in enumerate(zip(plan.runs, (*plan.runs[1:], None), strict=True)):
            tags = RunTags(rig=c.rig_name, run=run.run_id, campaign=c.name)
            out = model.run(lambda run=run, after=after, tags=tags: phases.walk(run, recorder, tags, after))
            rig = out["rig_time_s"]
            records.append(
                RunRecord(
                    rig=c.rig_name,
                    before=plan.before(run),
                    profile=run.profile,
                    workload=workload_key(run.workload.__dict__),
                    rule=c.equilibrium.rule,
                    cooldown_mode=c.cooldown.mode,
                    equilibrium_s=float(rig["equilibrium"]),
                    baseline_s=float(rig["baseline"]),
                    cooldown_s=float(rig["cooldown"]),
                    transition=c.equilibrium.transition,
                    cooldown_skipped=bool(out["cooldown"].get("skipped", False)),
                )
            )
            if progressed is not None:
                progressed(n + 1, len(plan.runs))
    finally:
        model.close()
    return History(c.rig_name, tuple(records), MODEL_SOURCE)
