"""The tune's chassis-air step (+10 °C, 240 s, rigsim stepped, the default chassis) landing 0 to 8 s of rig
time later after HELLO, as a host procedure running beside the stepped rig lands later on a busy machine:
its settle time (±0.5 °C) with the thermocouples' noise and without it. With noise the air the step starts
from and the band's last crossing hang on the frame the step lands at; without it the step is the same
wherever it lands (tests/python/test_tune.py compares its backlog step without noise for that reason).
Usage: bench_step_landing.py."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from common import figure

from thermrig.link.rig_link import RigLink
from thermrig.testbed import SimulatedRigSpec
from thermrig.tune.air_step import air_step

REPO = Path(__file__).resolve().parents[1]
LANDINGS_S = (0, 1, 2, 3, 5, 8)


def settle_s(late_s: int) -> float | None:
    with SimulatedRigSpec().rig() as sim, RigLink(sim.port) as link:
        link.hello()
        for _ in range(late_s):
            link.ping()
            sim.advance(1.0)
        return sim.run_alongside(link, lambda: air_step(link, 10.0, 240.0)).settle_s


def noiseless_hardware() -> Path:
    """A copy of hardware/ whose chassis has thermocouples without noise."""
    folder = Path(tempfile.mkdtemp(prefix="thermrig-bench-landing-")) / "hardware"
    shutil.copytree(REPO / "hardware", folder)
    chassis = folder / "profiles" / "chassis.toml"
    text, n = re.subn(r"(?m)^tc_noise_c = \S+", "tc_noise_c = 0", chassis.read_text())
    if n != 1:
        raise SystemExit("chassis.toml has no tc_noise_c")
    chassis.write_text(text)
    return folder


def main() -> int:
    os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="thermrig-bench-landing-")  # no stored gains
    for label, hardware in (("noise as profiled", None), ("no noise", noiseless_hardware())):
        if hardware is not None:
            os.environ["THERMRIG_HARDWARE_DIR"] = str(hardware)
        settled = [settle_s(late) for late in LANDINGS_S]
        shown = ", ".join("never" if s is None else f"{s:.1f}" for s in settled)
        known = [s for s in settled if s is not None]
        spread = f"{max(known) - min(known):.1f} s" if known else "-"
        figure(f"{label}: settle s, landing {', '.join(map(str, LANDINGS_S))} s late", shown)
        figure(f"{label}: spread", spread)
    return 0


if __name__ == "__main__":
    sys.exit(main())
