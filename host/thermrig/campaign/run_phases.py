"""The phases of one run, in order: the physical set-up (the operator, or the simulated rig), the chassis
profile, thermal equilibrium, a baseline, the workload, and a cool-down until the drive is back at its
baseline. Each phase is announced as a run event and on the progress display, and its rig time goes
into the manifest (`rig_time_s`, what the planner learns from: campaign.history).

Less waiting for the same result (docs/campaigns.md): the baseline is the equilibrium's settled tail
(`baseline = "tail"`) rather than baseline_s recorded after it; a run whose chassis
condition is the one the previous run cooled down in starts its equilibrium with that cool-down's
telemetry (`carry`; the same condition: the frames are as good as new ones); an active cool-down runs the
slot fan full with the air target lowered until the drive is nearly back, then sets the profile again; a change of
chassis condition is driven (`transition = "driven"`, campaign.transition) and its rig time counted in the
equilibrium's; a run the next one changes condition after has no cool-down (`before_change = "skip"`): the
next run's transition and equilibrium take the drive from where the workload left it (not before a condition
nearly the same, plan.nearly_same: no transition is driven there, so the cool-down is kept and settled)."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from thermrig.campaign.drive_thermal import run_thermal
from thermrig.campaign.equilibrium import COOLDOWN_CHANNEL, Watch, watch_for
from thermrig.campaign.plan import RunSpec, cooldown_skipped, nearly_same
from thermrig.campaign.progress import ProgressDisplay
from thermrig.campaign.spec import Campaign, CampaignError
from thermrig.campaign.trace_player import TracePlayer
from thermrig.campaign.transition import AIR_OVERSHOOT_C, FULL, Drive, Level, Push, drive_for, level_of
from thermrig.campaign.watch_pace import WatchPace
from thermrig.campaign.workload_phase import WorkloadPhase
from thermrig.db.recorder import Recorder
from thermrig.db.schema import RunTags
from thermrig.dut.drive import DriveUnderTest
from thermrig.errors import ThermrigError
from thermrig.hardware.chassis_profiles import ChassisProfile
from thermrig.protocol.messages import Telemetry
from thermrig.testbed import Testbed

Prompt = Callable[[str], None]  # tells the operator what to change and returns once they confirm
COOL_AIR_BACK_C = 1.0  # an active cool-down's air target lowered until the drive is this far above its margin
AIR_CHANNEL = "chassis_air"  # a driven push is not judged while it is still on its way (Push)


def condition_of(spec: RunSpec) -> tuple[Any, ...]:
    """A run's chassis condition: its set-up, profile and slot fan level."""
    return (tuple(sorted(spec.physical.items())), spec.profile, spec.fan1_pct)


class Phases:
    """Walks one run's phases; remembers the physical set-up between runs so it is changed only when the
    plan changes it."""

    def __init__(
        self,
        campaign: Campaign,
        bed: Testbed,
        display: ProgressDisplay,
        stop: threading.Event,
        prompt: Prompt | None = None,
    ) -> None:
        """bed: the rig's link, the drive under test and, when simulated, the simulation's control."""
        link, drive, sim = bed.link, cast(DriveUnderTest, bed.drive), bed.sim  # the orchestrator checked it
        self.campaign = campaign
        self.link = link
        self.display = display
        self.stop = stop
        self.sim = sim
        self.pace = WatchPace(sim)  # a simulated rig at the campaign's speed while watched, at 1x between
        self.prompt = prompt
        self._physical: dict[str, Any] | None = None
        self.drive = drive
        self._carry: tuple[tuple[Any, ...], list[Telemetry]] | None = None  # the last cool-down's condition, frames
        self._last_watch: Watch | None = None
        self._level: Level | None = None  # where the previous run left the chassis and the drive
        self._uptime_ms = 0  # of the latest frame seen
        self._phase_ns = 0  # when the latest phase began (UTC ns)
        self.workload = WorkloadPhase(campaign, drive, display, stop)
        self.workload.equilibrium = self._wait_equilibrium  # rate_search, between its steps

    def _phase(self, recorder: Recorder, name: str, detail: str = "", at_ns: int | None = None) -> None:
        """at_ns: it began earlier, on telemetry already recorded (never before the previous phase)."""
        now = time.time_ns()
        at_ns = None if at_ns is None else min(now, max(at_ns, self._phase_ns + 1))
        self._phase_ns = now if at_ns is None else at_ns
        recorder.event("phase", f"{name} {detail}".strip(), at_ns)
        self.display.show(name, detail)

    def _utc_ns(self, uptime_ms: int) -> int | None:
        sync = self.link.sync
        return None if sync.fit is None else round(sync.to_utc(uptime_ms * 1000) * 1e9)

    def run(
        self, spec: RunSpec, run_dir: Path, recorder: Recorder, tags: RunTags, next_run: RunSpec | None = None
    ) -> dict[str, Any]:
        """Every phase of one run, the run's HCTM level set on the drive throughout (the drive's own value
        restored after); what each measured and the drive's thermal configuration, for the manifest.
        next_run: the run after this one, if any (whether its chassis condition differs)."""
        with run_thermal(self.drive, spec.hctm, recorder.append, tags) as thermal:
            return {"drive_thermal": thermal, **self._phases(spec, run_dir, recorder, tags, next_run)}

    def walk(self, spec: RunSpec, recorder: Recorder, tags: RunTags, next_run: RunSpec | None) -> dict[str, Any]:
        """Every phase of one run as run() walks them, on a rig whose drive has no thermal configuration to
        set (the planner's rig model, campaign.model_estimate): what run() returns but `drive_thermal`,
        the workload phase the one given as `workload` (the model's heat in place of fio)."""
        return self._phases(spec, Path("."), recorder, tags, next_run)

    def telemetry(self, seconds_rig: float) -> list[Telemetry]:
        """The rig's telemetry for seconds_rig of rig time, a simulated rig at the campaign's pace
        meanwhile: what a workload phase that runs no fio (the planner's heat) spends its runtime on."""
        return self._frames(seconds_rig)

    def _phases(
        self, spec: RunSpec, run_dir: Path, recorder: Recorder, tags: RunTags, next_run: RunSpec | None
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        rig_time: dict[str, float] = {}
        self._setup_physical(spec)
        profile = self.campaign.profiles[spec.profile]
        args = profile.set_args()
        if spec.fan1_pct is not None:
            args["fan1"] = round(spec.fan1_pct * 10)
        condition = condition_of(spec)
        carried, self._carry = self._carry, None
        previous, self._level = self._level, None
        driven = None
        if previous is not None and self.campaign.equilibrium.transition == "driven":
            now_c = self._frames(0.0)[-1].named(COOLDOWN_CHANNEL).value  # where the drive is now
            drive = drive_for(previous, level_of(spec.physical, profile, args, now_c), args)
            if drive is not None:
                driven = self._drive_transition(recorder, drive, args, spec.profile)
        self.link.set(**args)
        self._phase(recorder, "equilibrium", spec.profile)
        out["equilibrium"] = self._wait_equilibrium(carried[1] if carried and carried[0] == condition else None)
        out["equilibrium"]["transition"] = self.campaign.equilibrium.transition
        if driven is not None:  # its rig time is the equilibrium's: the planner learns the two as one
            out["equilibrium"]["driven"] = driven
            out["equilibrium"]["after_s"] += driven["after_s"]
        rig_time["equilibrium"] = out["equilibrium"]["after_s"]
        baseline, rig_time["baseline"] = self._baseline(recorder)
        self._level = level_of(spec.physical, profile, args, baseline)
        out["baseline_drive_ctrl_c"] = baseline
        player = TracePlayer(self.link, profile.trace) if profile.trace is not None else None
        workload_from = self._uptime_ms
        try:
            if player is not None:
                self._lead_in(player, recorder, spec, profile)
            self._phase(recorder, "workload", spec.workload.name)
            out["workload_result"] = self.workload.run(spec, run_dir, recorder, tags)
        finally:
            if player is not None:
                out["trace"] = {"source": player.trace.source, **player.stop()}
                self.workload.extra_fields = None
                with contextlib.suppress(ThermrigError, OSError):  # a rig gone: the run fails on its own
                    self.link.set(**args)  # back to the trace's start: the cool-down's reference
        if cooldown_skipped(self.campaign, spec, next_run):
            self._phase(recorder, "cooldown", "skipped: the next run is in another chassis condition")
            frames = self._frames(0.0)
            out["cooldown"] = {"back_to_baseline": False, "after_s": 0.0, "mode": self.campaign.cooldown.mode}
            out["cooldown"]["skipped"] = True
        else:
            self._phase(recorder, "cooldown", self.campaign.cooldown.mode)
            same_next = next_run is not None and (
                condition_of(next_run) == condition or nearly_same(self.campaign, spec, next_run)
            )
            out["cooldown"], frames = self._cooldown(baseline, args, settle=same_next, lower_air=profile.trace is None)
        if frames:
            rig_time["workload"] = max(0.0, (frames[0].uptime_ms - workload_from) / 1000)
        rig_time["cooldown"] = out["cooldown"].get("fans_full_s", out["cooldown"]["after_s"])
        out["rig_time_s"] = rig_time
        if (
            self.campaign.equilibrium.carry
            and out["cooldown"]["mode"] == "passive"
            and "skipped" not in out["cooldown"]
        ):
            self._carry = (condition, frames)  # an active cool-down's frames are of another condition
        return out

    def _drive_transition(self, recorder: Recorder, drive: Drive, args: dict[str, int], profile: str) -> dict[str, Any]:
        """Push the chassis toward the new condition until the drive nears its level, then the profile's
        own settings again (set by the caller too, before the equilibrium is judged)."""
        self._phase(recorder, "transition", f"{profile}: {drive.describe()}")
        self.link.set(**drive.push)
        push = Push(drive.until_c, drive.warms, drive.air_c)

        def over(t: Telemetry) -> bool:  # at the level, or no longer getting there
            c = t.named(COOLDOWN_CHANNEL).value
            return drive.done(c) or push.stalled(t.uptime_ms / 1000, c, t.named(AIR_CHANNEL).value)

        try:
            frames = self._frames(self.campaign.equilibrium.timeout_s, over)
        finally:
            with contextlib.suppress(ThermrigError, OSError):  # a rig gone: the run fails on its own
                self.link.set(**args)
        seconds = (frames[-1].uptime_ms - frames[0].uptime_ms) / 1000 if frames else 0.0
        last_c = frames[-1].named(COOLDOWN_CHANNEL).value if frames else float("nan")
        reached = bool(frames) and drive.done(last_c)
        out = {"after_s": seconds, "until_drive_ctrl_c": round(drive.until_c, 2), "warms": drive.warms}
        return {**out, "reached": reached, "stalled": bool(frames) and not reached, "drive_ctrl_c": round(last_c, 2)}

    def _lead_in(self, player: TracePlayer, recorder: Recorder, spec: RunSpec, profile: ChassisProfile) -> None:
        """Play the profile's trace from here; the workload starts workload_at_s into it (rig time)."""
        player.start()
        self.workload.extra_fields = player.tracking
        if profile.workload_at_s > 0:
            self._phase(recorder, "trace", f"{spec.profile} to {profile.workload_at_s:g} s")
            self._frames(profile.workload_at_s + 60, lambda _: player.elapsed_s() >= profile.workload_at_s)

    def _setup_physical(self, spec: RunSpec) -> None:
        if spec.physical == self._physical:
            return
        if self.sim is not None:
            self.sim.set_physical(spec.physical.get("slot"), spec.physical.get("heatsink"))
        elif self.prompt is not None and spec.physical:
            wanted = ", ".join(f"{k} = {v}" for k, v in spec.physical.items())
            self.display.show("operator", wanted)
            self.prompt(f"Set up the rig: {wanted}. Confirm when done.")
        self._physical = dict(spec.physical)

    def _frames(self, seconds_rig: float, until: Callable[[Telemetry], bool] | None = None) -> list[Telemetry]:
        """Telemetry for up to seconds_rig of rig time, or until the predicate holds; a simulated rig at the
        campaign's speed meanwhile (WatchPace), not for the one frame of seconds_rig 0 without a predicate."""
        with self.pace.watching() if seconds_rig > 0 or until is not None else contextlib.nullcontext():
            return self._watch(seconds_rig, until)

    def _watch(self, seconds_rig: float, until: Callable[[Telemetry], bool] | None) -> list[Telemetry]:
        q = self.link.subscribe()
        frames: list[Telemetry] = []
        try:
            start = None
            while not self.stop.is_set():
                try:
                    tel = q.get(timeout=5.0)
                except queue.Empty as exc:
                    raise CampaignError(f"no telemetry from the rig on {self.link.port} for 5 s") from exc
                if tel.faults:
                    raise CampaignError(f"the rig faulted: {tel.faults!r}; the run stops (rig is safe)")
                frames.append(tel)
                self._uptime_ms = tel.uptime_ms
                self.display.progress.latest = tel
                start = start if start is not None else tel.uptime_ms
                if (until is not None and until(tel)) or tel.uptime_ms - start >= seconds_rig * 1000:
                    break
                if len(frames) % 10 == 0:
                    self.display.show()
        finally:
            self.link.unsubscribe(q)
        if self.stop.is_set():
            raise KeyboardInterrupt
        return frames

    def _wait_equilibrium(self, carried: list[Telemetry] | None = None) -> dict[str, Any]:
        """Until the campaign's rule holds; carried: telemetry of this same condition just before."""
        rule = self.campaign.equilibrium
        watch = watch_for(rule)
        for tel in carried or ():
            watch.add(tel)
        self._last_watch = watch

        def settled(tel: Telemetry) -> bool:
            watch.add(tel)
            if len(watch.samples) % 10 == 0:
                rates = watch.rates_c_per_min()
                self.display.show(detail=", ".join(f"{k} {v:+.2f} °C/min" for k, v in rates.items()))
            return watch.reached()

        frames = [] if watch.reached() else self._frames(rule.timeout_s, settled)
        reached = watch.reached()
        seconds = (frames[-1].uptime_ms - frames[0].uptime_ms) / 1000 if frames else 0.0
        out = {"reached": reached, "after_s": seconds, "rule": rule.rule, "rates_c_per_min": watch.rates_c_per_min()}
        if carried:
            out["carried_s"] = (carried[-1].uptime_ms - carried[0].uptime_ms) / 1000
        return out

    def _baseline(self, recorder: Recorder) -> tuple[float, float]:
        """The drive controller's mean, and the rig time spent on it: none when the equilibrium's settled
        tail holds baseline_s of it (baseline = "tail"), else baseline_s recorded now."""
        seconds = self.campaign.baseline_s
        if self.campaign.baseline == "tail" and self._last_watch is not None:
            tail = self._last_watch.tail_mean(COOLDOWN_CHANNEL, seconds)
            if tail is not None:  # its event where the tail began: the analysis reads the baseline from there
                at = self._utc_ns(self._uptime_ms - round(seconds * 1000))
                self._phase(recorder, "baseline", f"the equilibrium's last {seconds:g} s", at)
                return tail, 0.0
        self._phase(recorder, "baseline")
        frames = self._frames(seconds)
        spent = (frames[-1].uptime_ms - frames[0].uptime_ms) / 1000 if frames else 0.0
        return sum(f.named(COOLDOWN_CHANNEL).value for f in frames) / len(frames), spent

    def _cooldown(
        self, baseline: float, args: dict[str, int], settle: bool = True, lower_air: bool = True
    ) -> tuple[dict[str, Any], list[Telemetry]]:
        """Until the drive controller is back within the margin of its baseline (`after_s`, what the
        recovery figure measures); active: the slot fan full meanwhile, the chassis fan at the profile's
        duty, and the air target AIR_OVERSHOOT_C below the profile's (the heater gives less, the air around
        the drive cools) until the drive is within COOL_AIR_BACK_C of the margin; then the air target is the
        profile's again with the heater's limit full, so the air is back by the time the drive is; at the
        end the profile set again. Not lower_air (a traced profile: its runs' air targets are the trace's,
        and the cool-down holds its start) nor with the heater off: the slot fan alone. Lowered until the
        margin itself, the air was still short of its target when the drive got there and the drive went on
        cooling under the warming air (the next equilibrium stopped up to 0.4 °C below the level in trials on
        the stepped rig). settle (the next run is in this
        condition): the slot fan full on past the margin until the drive is within the equilibrium's
        tolerance of its baseline (or stops getting nearer, Push), `fans_full_s` in all, counted in the
        cool-down's rig time. Set back at the margin, the drive's board is still warm and the next
        equilibrium's rule stops on a tail that looks flat over one window, most of a degree above the
        level (0.65 and 0.73 °C in the Puget sample). Not the chassis fan: at full it pulls the air of a
        hot profile below its target (more than the heater makes up), and the next equilibrium waits for
        it to heat again."""
        rule = self.campaign.cooldown
        active = rule.mode == "active"
        back_c = baseline + rule.margin_c
        settled_c = baseline + self.campaign.equilibrium.rate_c_per_min * self.campaign.equilibrium.window_s / 60
        dip = active and lower_air and "air" in args
        if active:
            lowered = {"air": max(0, args["air"] - round(AIR_OVERSHOOT_C * 100))} if dip else {}
            self.link.set(**{**args, "fan1": FULL, **lowered})
        try:
            frames: list[Telemetry] = []
            if dip:
                frames = self._frames(
                    rule.timeout_s, lambda t: t.named(COOLDOWN_CHANNEL).value <= back_c + COOL_AIR_BACK_C
                )
                self.link.set(**{**args, "fan1": FULL, "hlim": FULL})
            spent = (frames[-1].uptime_ms - frames[0].uptime_ms) / 1000 if frames else 0.0
            frames += self._frames(
                max(0.0, rule.timeout_s - spent), lambda t: t.named(COOLDOWN_CHANNEL).value <= back_c
            )
            back = frames[-1].named(COOLDOWN_CHANNEL).value <= back_c if frames else False
            seconds = (frames[-1].uptime_ms - frames[0].uptime_ms) / 1000 if frames else 0.0
            out: dict[str, Any] = {"back_to_baseline": back, "after_s": seconds, "mode": rule.mode}
            if dip:
                out["air_lowered_c"] = AIR_OVERSHOOT_C
                out["air_lowered_until_c"] = round(back_c + COOL_AIR_BACK_C, 2)
            if settle and active and back and settled_c < back_c:
                push = Push(settled_c, warms=False)
                frames += self._frames(
                    max(0.0, rule.timeout_s - seconds),
                    lambda t: (
                        (c := t.named(COOLDOWN_CHANNEL).value) <= settled_c or push.stalled(t.uptime_ms / 1000, c)
                    ),
                )
                out["fans_full_s"] = (frames[-1].uptime_ms - frames[0].uptime_ms) / 1000
                out["fans_full_until_c"] = round(settled_c, 2)
        finally:
            if active:
                with contextlib.suppress(ThermrigError, OSError):  # a rig gone: the run fails on its own
                    self.link.set(**args)
        return out, frames
