"""The step sequence that identifies a rig's chassis (`thermrig rig identify`): at each of two fan levels,
the firmware's heater loop holds the chassis air a few degrees over the room for a while (the heater at
its duty limit until the air gets there), then the heater is off while the air cools; recorded frame by
frame in rig time, so any simulation speed works. The target is one the heater reaches, so the
firmware's safety checks (runaway: air far below target without gaining) stay quiet and every limit
stays in force. What the fit needs is what the rig measured: the heater's and fans' duty, the chassis
air and the room."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from thermrig.errors import ThermrigError
from thermrig.link.rig_link import RigLink
from thermrig.protocol.messages import Telemetry

AIR_CHANNEL = "chassis_air"
ROOM_CHANNEL = "ambient_t"
MAX_TARGET_C = 65.0  # the firmware's highest air target


class StepError(ThermrigError, RuntimeError):
    pass


@dataclass(frozen=True)
class StepPlan:
    fan_pct: tuple[float, ...] = (30.0, 100.0)  # chassis-fan duty of each half of the sequence
    rise_c: float = 8.0  # air target over the room while heating
    heater_pct: float = 100.0  # heater duty limit while heating (bounded power)
    heat_s: float = 600.0  # per fan level: heater on ...
    cool_s: float = 300.0  # ... then off

    def __post_init__(self) -> None:
        if not self.fan_pct or any(not 0 <= f <= 100 for f in self.fan_pct):
            raise StepError(f"fan levels {self.fan_pct} must be duties 0-100 %")
        if len(set(self.fan_pct)) < 2:
            raise StepError("two different fan levels are needed to tell still-air from fan cooling")
        if not 5 <= self.heater_pct <= 100:
            raise StepError(f"heater duty {self.heater_pct} % must be 5-100 %")
        if not 2 <= self.rise_c <= 30:
            raise StepError(f"rise {self.rise_c} °C must be 2-30 °C over the room")
        if self.heat_s <= 0 or self.cool_s <= 0:
            raise StepError("heat_s and cool_s must be positive")

    @property
    def duration_s(self) -> float:
        return len(self.fan_pct) * (self.heat_s + self.cool_s)

    def setting_at(self, t: float) -> tuple[float, bool]:
        """(chassis-fan duty, heater on) at t s into the sequence."""
        period = self.heat_s + self.cool_s
        i = min(int(t // period), len(self.fan_pct) - 1)
        return self.fan_pct[i], (t - i * period) < self.heat_s


@dataclass(frozen=True)
class StepSample:
    t_s: float  # rig time since the sequence started
    heater_pct: float
    fan_pct: tuple[float, float]
    rpm: tuple[float, float]
    air_c: float
    room_c: float


def sample_of(tel: Telemetry, t0_ms: int) -> StepSample:
    return StepSample(
        t_s=(tel.uptime_ms - t0_ms) / 1000.0,
        heater_pct=tel.heater_pct,
        fan_pct=(tel.fan_pct.get("fan0", 0.0), tel.fan_pct.get("fan1", 0.0)),
        rpm=tuple(r.value for r in list(tel.rpm.values())[:2]),  # type: ignore[arg-type]
        air_c=tel.named(AIR_CHANNEL).value,
        room_c=tel.named(ROOM_CHANNEL).value,
    )


def record_steps(
    link: RigLink, plan: StepPlan, progress: Callable[[float, StepSample], None] | None = None
) -> list[StepSample]:
    """Run the sequence on a rig whose link is open and kept alive; the heater is off and the fans full
    afterwards, however it ends. Raises StepError on a fault or lost telemetry."""
    names = link.info.channels.names if link.info is not None else ()
    missing = [ch for ch in (AIR_CHANNEL, ROOM_CHANNEL) if ch not in names]
    if missing:
        raise StepError(f"the rig has no channel {', '.join(missing)}: identification needs chassis air and room")
    q = link.subscribe()
    samples: list[StepSample] = []
    applied: tuple[float, bool] | None = None
    try:
        tel = q.get(timeout=10)
        t0 = tel.uptime_ms
        target = tel.named(ROOM_CHANNEL).value + plan.rise_c
        if target > MAX_TARGET_C:
            raise StepError(
                f"room {target - plan.rise_c:.1f} °C + {plan.rise_c:g} °C is over the {MAX_TARGET_C:g} °C limit"
            )
        while True:
            s = sample_of(tel, t0)
            if s.t_s >= plan.duration_s:
                break
            wanted = plan.setting_at(s.t_s)
            if wanted != applied:
                fan, heat = wanted
                link.set(fan0=round(fan * 10), fan1=round(fan * 10), air=round(target * 100),
                         hlim=round(plan.heater_pct * 10), heat=int(heat))  # fmt: skip
                applied = wanted
            if tel.faults:
                raise StepError(f"the rig reported a fault during identification: {tel.faults!r}")
            samples.append(s)
            if progress is not None:
                progress(s.t_s / plan.duration_s, s)
            try:
                tel = q.get(timeout=10)
            except Exception as exc:
                raise StepError("no telemetry from the rig for 10 s during identification") from exc
    finally:
        link.unsubscribe(q)
        with contextlib.suppress(Exception):
            link.set(heat=0, fan0=1000, fan1=1000)
    return samples
