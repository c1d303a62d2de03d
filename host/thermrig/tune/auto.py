"""`thermrig rig tune`'s procedure: the relay, the model fitted to it, the gains from the model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from thermrig.link.rig_link import RigLink
from thermrig.link.stored_gains import Gains
from thermrig.protocol.messages import Telemetry
from thermrig.tune.model import Fopdt, fit_fopdt, simc_gains
from thermrig.tune.relay import RelayPlan, RelayRecord, relay


@dataclass(frozen=True)
class TuneResult:
    gains: Gains  # bounded to what the firmware takes
    model: Fopdt
    record: RelayRecord
    before: Gains  # what the rig ran before (stored gains, or the firmware's defaults); set again after

    def note(self, plan: RelayPlan) -> str:
        """One line for the gains file: how they were found."""
        ku, tu, a = self.record.ultimate()
        return (
            f"relay {plan.heater_pct:g} % heater around room + {plan.rise_c:g} °C at fan {plan.fan_pct:g} %: "
            f"Ku {ku:.0f}, Tu {tu:.0f} s, amplitude {a:.2f} °C; model {self.model.describe()}; SIMC"
        )


def auto_tune(link: RigLink, plan: RelayPlan, progress: Callable[[str, Telemetry], None] | None = None) -> TuneResult:
    """Tune the chassis-air loop of a rig whose link is open (HELLO done) and kept alive. The rig keeps
    running the gains it had; storing and sending the new ones is the caller's choice."""
    before = link.gains.gains if link.gains is not None else Gains.firmware_default()
    record = relay(link, plan, before, progress)
    model = fit_fopdt(record)
    return TuneResult(simc_gains(model).bounded(), model, record, before)
