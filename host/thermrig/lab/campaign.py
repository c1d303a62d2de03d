"""A campaign on a lab of rigs: the places that match are reserved and held (thermrig.lab.acquired), the
campaign's runs assigned to them (thermrig.lab.assign: a run whose physical factors a place's fixed
hardware has goes there with no operator prompt) and run on every place at once, one worker per place:
each an Orchestrator with the place's rig (its RFC 2217 port) and the drive in its test PC (fio in
client/server mode, thermrig.lab.test_pc_drive), every point tagged with the rig, place, test PC and
firmware. A place that fails its start check is left out and released at once (the campaign fails
only when none is left); each place's comment on the coordinator says how far it is (`lab status`). A
place lost mid-run (its exporter, its fio server or its rig gone) ends that place's share: the run it
was in is named failed, the runs it had not started go to the places still working, the
campaign goes on. Every place is released at the end, on Ctrl-C and after an error; the campaign's
results are written once, when every place is done."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from thermrig.campaign.on_rig import walk
from thermrig.campaign.orchestrator import CampaignHooks, Orchestrator
from thermrig.campaign.plan import Plan, RunSpec
from thermrig.campaign.progress import Progress
from thermrig.campaign.rundir import CampaignState, last_attempt, read_manifest
from thermrig.campaign.summaries import analyse_campaign
from thermrig.db.influx_settings import InfluxSettings
from thermrig.errors import ThermrigError
from thermrig.lab.acquired import HeldPlace, HeldPlaces, comment, holding, note_firmware
from thermrig.lab.assign import Lane, PlaceHardware, RunNeed, assign
from thermrig.lab.client import LabClient
from thermrig.lab.errors import LabError
from thermrig.lab.locks import LockRecord
from thermrig.lab.place_testbed import PlaceTestbed
from thermrig.testbed import Testbed, open_testbed

JOIN_S = 0.5  # how often the main thread looks up from waiting for the places (Ctrl-C, SIGTERM)


class LabEvents(Protocol):
    """Whoever shows a lab campaign: each place's progress, notes (a stale lock released, waiting for
    places, a place lost) and the operator at a place, for the runs whose hardware it does not fix."""

    def progress(self, place: str, progress: Progress) -> None: ...

    def note(self, message: str) -> None: ...

    def prompt(self, place: str, message: str) -> None: ...


@dataclass(frozen=True)
class LabRequest:
    coordinator: str
    tags: dict[str, str]  # tag values as labgrid holds them (rig_place.tag_value)
    places: int = 0  # at most this many places; 0: every place that matches
    ssh_key: str = ""  # logs in to the test PCs (smart-log and fio's forward over SSH); "": ssh's own
    insecure: bool = False  # fio's servers reached straight over the network, not through SSH
    stored_gains: bool = False  # each place's rig gets the gains `thermrig rig tune` stored for it (open_testbed)


@dataclass
class PlaceShare:
    """One place's share of one round: its runs, those it started, and how it ended."""

    place: str
    runs: list[str]
    started: list[str] = field(default_factory=list)
    lost: str | None = None  # why the place stopped working (the rig, its test PC, its exporter)
    aborted: bool = False

    @property
    def lost_run(self) -> str | None:
        return self.started[-1] if self.lost and self.started else None


@dataclass
class LabOutcome:
    places: list[str]
    shares: list[PlaceShare] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # run id -> "place: error", from its manifest
    not_run: list[str] = field(default_factory=list)  # no place left to run them
    unsent: list[str] = field(default_factory=list)
    unanalysed: list[str] = field(default_factory=list)
    campaign_results: bool = False
    aborted: bool = False
    readback_error: str = ""  # a summary's read back failed (its points all in InfluxDB): the query's error

    @property
    def lost(self) -> list[PlaceShare]:
        return [s for s in self.shares if s.lost]

    def failed_places(self) -> list[str]:
        """The places where a run failed (as its manifest says), and those lost: no other."""
        where = {why.split(":", 1)[0] for why in self.failed.values()} | {s.place for s in self.lost}
        return sorted(where - {"?"})


@dataclass
class _LockedState(CampaignState):
    """The campaign's state, marked done from every place's worker."""

    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def mark_done(self, run_id: str) -> None:
        with self.lock:
            super().mark_done(run_id)


@dataclass
class _Place:
    held: HeldPlace  # its tags say which runs it takes
    bed: Testbed

    @property
    def name(self) -> str:
        return self.held.name


def _open_place(held: HeldPlace, plan: Plan, request: LabRequest, stack: contextlib.ExitStack) -> _Place:
    """The place as a testbed (lab.place_testbed), its rig's health checked: one line naming the place and
    what does not answer."""
    try:
        bed = open_testbed(
            PlaceTestbed(held, plan.campaign.drive, request.ssh_key, request.insecure),
            require_clear=True,
            stored_gains=request.stored_gains,
        )
        return _Place(held, stack.enter_context(bed))
    except LabError:
        raise
    except (ThermrigError, OSError) as exc:
        raise LabError(f"place {held.name}: {exc}") from exc


def _without_place(place: str, message: str) -> str:
    """An error as said after the place's name (most name it already)."""
    return message.removeprefix(f"place {place}: ")


def _needs(plan: Plan, runs: list[RunSpec]) -> list[RunNeed]:
    return [RunNeed(r.run_id, {k: str(v) for k, v in r.physical.items()}, plan.estimate_s(r)) for r in runs]


class LabCampaign:
    """A campaign's plan run on the places a request holds, for the length of run()."""

    def __init__(
        self, plan: Plan, state: CampaignState, influx: InfluxSettings, request: LabRequest, events: LabEvents
    ) -> None:
        self.plan = plan
        self.state = _LockedState(state.folder, state.seed, state.completed, state.started)
        self.influx = influx
        self.request = request
        self.events = events
        self.stop = threading.Event()  # Ctrl-C, SIGTERM: every place stops its run, rig safe
        self._orchestrators: list[Orchestrator] = []
        self._unsent: list[str] = []  # every place's runs whose points wait in their spool
        self._unanalysed: list[str] = []
        self._readback_error = ""  # the last summary read back that failed on any place: its error
        self._client: LabClient | None = None  # the coordinator, from the main thread only
        self._status: dict[str, str] = {}  # place -> how far it is, from its worker
        self._posted: dict[str, str] = {}  # place -> what its comment on the coordinator says
        self._status_lock = threading.Lock()

    @property
    def purpose(self) -> str:
        return f"run {self.plan.campaign.name}"

    def run(self) -> LabOutcome:
        """Hold, check, run, release. A place that fails its start check is left out (said in one line);
        LabError before any run when no place is left. KeyboardInterrupt (after every place has stopped
        and been released) when stopped."""
        with contextlib.ExitStack() as stack:
            held = stack.enter_context(self._held())
            places = self._checked(held, stack)
            outcome = LabOutcome(sorted(p.name for p in places))
            self._rounds(places, outcome)
        self._conclude(outcome)
        if outcome.aborted:
            raise KeyboardInterrupt
        return outcome

    def _checked(self, held: HeldPlaces, stack: contextlib.ExitStack) -> list[_Place]:
        """Each held place opened and checked (its rig's HELLO noted in its firmware tag, a rig older than
        this host warned of); a place that fails is left out, in one line, and let go at once: its rig
        link closed (SAFE first), the place released and its reservation cancelled for others to have."""
        places, failed, several = [], [], len(held) > 1
        for h in list(held):
            opened = contextlib.ExitStack()
            try:
                place = _open_place(h, self.plan, self.request, opened)
            except LabError as exc:
                opened.close()
                held.let_go(h.name)
                failed.append(str(exc))
                if several:
                    self.events.note(f"place {h.name} left out: {_without_place(h.name, str(exc))}")
                continue
            stack.enter_context(opened)
            places.append(place)
            if self._client is not None:
                with contextlib.suppress(LabError):
                    note_firmware(self._client, place.name, place.bed.info.version)
            for warning in place.bed.warnings:
                self.events.note(f"place {place.name}: {warning}")
        if not places:
            raise LabError(failed[0] if len(failed) == 1 else "no place passed its start check: " + "; ".join(failed))
        return places

    def _post_status(self) -> None:
        """Each place's comment on the coordinator says how far it is (`lab status`), as it changes."""
        with self._status_lock:
            changed = {p: t for p, t in self._status.items() if self._posted.get(p) != t}
        for place, text in changed.items():
            if self._client is not None:
                with contextlib.suppress(LabError):
                    self._client.set_comment(place, text)
            self._posted[place] = text

    @contextlib.contextmanager
    def _held(self) -> Iterator[HeldPlaces]:
        def stale(record: LockRecord) -> None:
            self.events.note(
                f"released stale lock on place {record.place} (left by pid {record.pid}, {record.purpose})"
            )

        with LabClient(self.request.coordinator) as client:
            self._client = client
            try:
                with holding(
                    client, self.purpose, tags=self.request.tags, count=self.request.places, on_stale=stale,
                    on_wait=self.events.note, ssh_key=self.request.ssh_key,
                ) as held:  # fmt: skip
                    yield held
            finally:
                self._client = None

    def _rounds(self, places: list[_Place], outcome: LabOutcome) -> None:
        """Assign what is left to the places still working, run them all at once; again while a place was
        lost and others can take its runs."""
        started: set[str] = set()
        first = True
        while places and not outcome.aborted:
            todo = [r for r in self.plan.runs if r.run_id not in self.state.completed and r.run_id not in started]
            hardware = [PlaceHardware(p.name, p.held.tags) for p in places]
            needs = _needs(self.plan, todo)
            if not first:  # after a loss: what the places left can take (assign refuses the rest)
                needs = [n for n in needs if any(h.takes(n) is not None for h in hardware)]
            if not needs:
                break
            split = assign(needs, hardware)  # first round: a run no place can take is one line, nothing run
            shares = self._round(places, split.lanes)
            outcome.shares += shares
            for share in shares:
                started.update(share.started)
            outcome.aborted = any(s.aborted for s in shares) or self.stop.is_set()
            lost = {s.place for s in shares if s.lost}
            if not lost:
                break
            places = [p for p in places if p.name not in lost]
            first = False
        left = [r.run_id for r in self.plan.runs if r.run_id not in self.state.completed and r.run_id not in started]
        outcome.not_run = [] if outcome.aborted else left

    def _round(self, places: list[_Place], lanes: tuple[Lane, ...]) -> list[PlaceShare]:
        by_name = {p.name: p for p in places}
        specs = {r.run_id: r for r in self.plan.runs}
        work: list[tuple[_Place, Lane, PlaceShare, Orchestrator]] = []
        for lane in lanes:
            if not lane.runs:
                continue
            place = by_name[lane.place]
            share = PlaceShare(place.name, list(lane.runs))
            orch = self._orchestrator(place, lane, share, [specs[r] for r in lane.runs])
            work.append((place, lane, share, orch))
        self._orchestrators = [w[3] for w in work]
        threads = [
            threading.Thread(target=self._work, args=(w[2], w[3]), name=f"place-{w[0].name}", daemon=True) for w in work
        ]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(JOIN_S)
                    self._post_status()
                    if self.stop.is_set():
                        self._stop_all()
        except KeyboardInterrupt:
            self._stop_all()
            for t in threads:
                t.join()
            for share in (w[2] for w in work):
                share.aborted = True
        return [w[2] for w in work]

    def _stop_all(self) -> None:
        self.stop.set()
        for orch in self._orchestrators:
            orch.stop.set()

    def _orchestrator(self, place: _Place, lane: Lane, share: PlaceShare, runs: list[RunSpec]) -> Orchestrator:
        def progress(pr: Progress) -> None:
            if pr.run is not None and (not share.started or share.started[-1] != pr.run.run_id):
                share.started.append(pr.run.run_id)
            if pr.run is not None and pr.phase != "done":
                done = len(self.state.completed)
                with self._status_lock:
                    self._status[place.name] = (
                        f"{comment(self.purpose)}: run {len(share.started)} of {len(share.runs)} here "
                        f"({pr.run.run_id}), {pr.phase}; {done}/{len(self.plan.runs)} done"
                    )
            self.events.progress(place.name, pr)

        def prompt(message: str) -> None:  # only where the place does not fix the run's hardware
            current = share.started[-1] if share.started else None
            if current in lane.prompts:
                self.events.prompt(place.name, message)

        hooks = CampaignHooks(
            prompt if lane.prompts else None, progress
        )  # a place that fixes every run's hardware: nothing to ask
        share_plan = dataclasses.replace(self.plan, runs=tuple(runs))
        return Orchestrator(share_plan, self.state.folder, place.bed, self.influx, hooks, whole_campaign=False)

    def _work(self, share: PlaceShare, orch: Orchestrator) -> None:
        try:
            walk(orch, self.state)  # the same per-run path as a campaign on one rig
        except KeyboardInterrupt:  # its stop was set: Ctrl-C, SIGTERM
            share.aborted = True
        except (ThermrigError, OSError) as exc:
            share.lost = str(exc)
        except Exception as exc:  # a bug on one place: the others go on; the run names it
            share.lost = f"{type(exc).__name__}: {exc}"
        finally:
            self._merge(orch)
        if share.lost:  # said at once; its runs not started go to the others once they finish their share
            during = f" during run {share.lost_run}" if share.lost_run else ""
            why = _without_place(share.place, share.lost)
            self.events.note(f"place {share.place} lost{during}: {why}; the other places go on")

    def _merge(self, orch: Orchestrator) -> None:
        with self.state.lock:
            self._unsent += orch.unsent
            self._unanalysed += orch.unanalysed
            self._readback_error = orch.readback_error or self._readback_error

    def _conclude(self, outcome: LabOutcome) -> None:
        outcome.unsent, outcome.unanalysed = list(self._unsent), list(self._unanalysed)
        for spec in self.plan.runs:
            if spec.run_id in self.state.completed:
                continue
            manifest = read_manifest(last_attempt(self.state.folder, spec.run_id)) or {}
            if manifest.get("status") == "failed":
                where = manifest.get("lab", {}).get("place", "?")
                outcome.failed[spec.run_id] = f"{where}: {_without_place(where, manifest.get('error') or 'failed')}"
        outcome.readback_error = self._readback_error
        if not outcome.aborted:
            readback = analyse_campaign(self.influx, self.plan.campaign.name)
            outcome.campaign_results = bool(readback)
            outcome.readback_error = outcome.readback_error or readback.error
