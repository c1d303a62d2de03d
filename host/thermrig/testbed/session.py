"""open_testbed: a kind's rig end started, its link opened and greeted (a rig of another protocol is
refused; a firmware older than this host said in `warnings`), the heartbeat at the rig's pace, the time
sync told where a simulation changes pace; and SAFE sent on every way out: a normal exit, an exception,
Ctrl-C (SIGINT) and SIGTERM (which stops it as Ctrl-C does). The procedures get the drive, the
simulation and the identity from it, and never build a link themselves."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from thermrig.dut.drive import DriveUnderTest
from thermrig.dut.simulation import SimulationControl
from thermrig.errors import ThermrigError
from thermrig.firmware_identity import older_than_host
from thermrig.link.rig_link import RigLink
from thermrig.link.stored_gains import GainsError, StoredGains, load_gains, rig_key
from thermrig.protocol.limits import TICK_S
from thermrig.protocol.messages import RigInfo
from thermrig.testbed.kinds import Identity, Kind, RigEnd
from thermrig.testbed.signals import signals_held, sigterm_interrupts

T = TypeVar("T")
FAULTS_WAIT_S = 5.0  # require_clear: how long the first telemetry frame may take
SAFE_REACHES_PLANT_S = 2 * TICK_S  # stepped: SAFE's tick, then the plant's tick that takes its outputs

log = logging.getLogger(__name__)


class TestbedError(ThermrigError):
    """The testbed cannot be used as asked (a rig with latched faults, ...)."""

    __test__ = False


@dataclass
class Testbed:
    """An open testbed. `sim`: the simulated rig (None on a real rig): procedures reach it as a
    SimulationControl, the commands that play its plant (the demo, `rig bringup --sim`, `sim step`) as what
    it is; `tags`: what every point recorded here carries besides a run's own."""

    name: str
    link: RigLink
    info: RigInfo
    drive: DriveUnderTest | None = None
    sim: SimulationControl | None = None
    identity: Identity = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    stepped: bool = False
    warnings: list[str] = field(default_factory=list)

    __test__ = False

    @property
    def port(self) -> str:
        return self.link.port

    def run(self, work: Callable[[], T]) -> T:
        """work(), with virtual time advancing alongside on a stepped simulation (and the heartbeat
        between steps); on any other rig, just work()."""
        if self.stepped:
            assert self.sim is not None  # stepped: only a simulation is
            return self.sim.run_alongside(self.link, work)
        return work()

    def safe(self, *, checked: bool = False) -> None:
        """SAFE: heater off, fans full; the one way the host puts a rig in its safe state. Best effort (the
        rig may be gone) unless checked: then a rig that does not ack it raises. On a stepped simulation,
        virtual time then goes on until the plant holds the safe outputs: the firmware acks SAFE at once
        but applies it at its next control tick, and the plant takes a tick's outputs at the tick after."""
        try:
            self.run(lambda: self.link.command("SAFE"))
            if self.sim is not None and self.stepped:
                self.sim.advance(SAFE_REACHES_PLANT_S)
        except Exception:
            if checked:
                raise


@contextlib.contextmanager
def open_testbed(
    spec: Kind,
    *,
    keepalive: bool = True,
    require_clear: bool = False,
    hello_timeout: float = 1.0,
    leave_as_is: bool = False,
    stored_gains: bool = False,
) -> Iterator[Testbed]:
    """The testbed `spec` names, open for the block. keepalive False: no heartbeat (a short command that
    never heats); require_clear: a rig with latched faults (it would refuse to heat) is refused;
    leave_as_is: a normal exit leaves the rig as the block set it (`rig set`, `rig clear`): an
    exception or a signal still leaves it safe; stored_gains: the air-loop gains `thermrig rig tune`
    stored for this rig in the user's data folder are sent after the HELLO and after every re-handshake
    (the commands a user runs on a rig ask for them; a rig opened without them runs its firmware's)."""
    with contextlib.ExitStack() as stack, sigterm_interrupts():
        end: RigEnd = spec.open(stack)
        link = stack.enter_context(RigLink(end.port))
        info = link.hello(timeout=hello_timeout)  # refuses a rig of another protocol (VersionMismatch)
        if stored_gains:
            link.send_gains(_stored_gains(link, info))
        warning = older_than_host(info.version)
        bed = Testbed(
            end.name,
            link,
            info,
            end.drive,
            end.sim,
            end.identity,
            {k: v for k, v in end.tags(info).items() if v},
            end.stepped,
            [warning] if warning is not None else [],
        )
        make_safe = True
        try:
            if keepalive and not end.stepped:
                link.start_keepalive(speed=end.speed)
            if end.sim is not None:  # the time sync restarts its fit where the simulation changes speed
                end.sim.watch_clock(link.follow_pace)
                end.sim.follow_host(link)  # and faster than real time, the simulation waits for its host
            if require_clear:
                _check_clear(bed)
            yield bed
            make_safe = not leave_as_is
        finally:
            if make_safe:
                with signals_held():
                    bed.safe()


def _stored_gains(link: RigLink, info: RigInfo) -> StoredGains | None:
    """The gains stored for the rig that said `info`; None when none are, or their file is broken (said:
    the rig then runs its firmware's)."""
    try:
        return load_gains(rig_key(info, link.usb_serial))
    except GainsError as exc:
        log.warning("%s: the rig keeps its firmware's air-loop gains: %s", link.port, exc)
        return None


def _check_clear(bed: Testbed) -> None:
    faults = bed.run(lambda: bed.link.next_telemetry(FAULTS_WAIT_S)).faults
    if faults:  # latched: it would refuse to heat (NAK STATE)
        raise TestbedError(
            f"its rig at {bed.port} has latched faults {faults.name}: "
            f"`thermrig rig clear --port {bed.port}` once they are seen to"
        )
