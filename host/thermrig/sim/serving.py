"""`thermrig sim`'s procedure: a simulated rig served until asked to stop, found by the other commands
(the running simulation's state file and its control socket for faults), watched while it serves (its
plant server, its firmware, and the virtual drive, which is served again if nbdkit dies)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

from thermrig.dut.simulation import FIRMWARES
from thermrig.hardware.drive_profiles import drive_names
from thermrig.hardware.profiles import HEATSINKS, SLOTS, ProfileError, load_chassis
from thermrig.settings import RunningSim
from thermrig.sim.control import ControlServer
from thermrig.sim.simulated_rig import SimConfig, SimError, SimulatedRig

WATCH_EVERY_S = 0.5


def check_config(cfg: SimConfig) -> None:
    """One line for a bad setting, before anything starts."""
    if cfg.slot not in SLOTS:
        raise ProfileError(f"unknown slot {cfg.slot!r}; choose one of {', '.join(SLOTS)}")
    if cfg.heatsink not in HEATSINKS:
        raise ProfileError(f"unknown heatsink {cfg.heatsink!r}; choose one of {', '.join(HEATSINKS)}")
    if cfg.firmware not in FIRMWARES:
        raise SimError(f"unknown firmware {cfg.firmware!r}; choose one of {', '.join(FIRMWARES)}")
    if cfg.drive is not None and cfg.drive not in drive_names():
        raise ProfileError(f"unknown drive profile {cfg.drive!r}; choose one of {', '.join(drive_names())}")
    if not 0 < cfg.drive_scale <= 1:
        raise SimError("the virtual drive's scale must be in (0, 1]")
    if cfg.chassis is not None:
        load_chassis(cfg.chassis)  # a missing or malformed chassis file


@dataclass(frozen=True)
class Serving:
    port: str  # the rig's serial port
    drive_uri: str | None  # the virtual drive's NBD URI


def serve(
    cfg: SimConfig, stop: threading.Event, on_ready: Callable[[Serving], None], on_note: Callable[[str], None]
) -> None:
    """Serve the simulated rig until `stop` is set (or Ctrl-C); SystemExit if the firmware exits.
    on_ready: once it serves and other commands can find it; on_note: what happened while serving."""
    check_config(cfg)
    with SimulatedRig(cfg) as rig:
        folder = RunningSim.state_file().parent
        folder.mkdir(parents=True, exist_ok=True)
        control_path = folder / f"sim-{os.getpid()}.sock"
        control = ControlServer(control_path, rig.faults, restart=rig.restart_firmware).start()
        try:
            uri = rig.drive.uri if rig.drive is not None else None
            RunningSim(rig.port, os.getpid(), control_path, cfg.firmware, uri).write()
            on_ready(Serving(rig.port, uri))
            refused = None
            while not stop.wait(WATCH_EVERY_S):
                assert rig.server is not None
                rig.server.check()
                if (status := rig.exit_status()) is not None:
                    raise SystemExit(f"{cfg.firmware} exited with status {status}")
                if rig.drive is not None and (failure := rig.drive.poll()) is not None:
                    # nbdkit 1.32 can abort when a client dies with requests queued (docs/virtual-drive.md):
                    # say so and serve again, the drive's state kept
                    on_note(f"{failure}; serving again at the same URI")
                    rig.drive.restart()
                if rig.drive is not None and (full := rig.drive.refused()) is not None and refused is None:
                    on_note(full)  # once: nbdkit's log has every refusal
                    refused = full
        except KeyboardInterrupt:
            pass
        finally:
            control.close()
            RunningSim.remove()
