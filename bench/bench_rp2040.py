"""Stock MicroPython on the emulated RP2040 (micropython-rp2040, make firmware-pico): boot time, the tick's
cost in cycles of the 125 MHz core, simulated seconds per wall second stepped and in real time while the
rig heats under its host (as the machine is, then beside two CPU burners), and where the core's cycles go
(sampled PCs named by firmware.elf's symbols)."""

from __future__ import annotations

import bisect
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from common import burners, figure

from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.settings import find_tool
from thermrig.sim.firmware.base import SimError
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

HEAT_S = int(os.environ.get("BENCH_RP2040_HEAT_S", "20"))  # simulated seconds of heating measured
REALTIME_S = float(os.environ.get("BENCH_RP2040_REALTIME_S", "10"))  # wall seconds in real time
TICK_S = 0.1


def symbols(elf: Path) -> tuple[list[int], list[str]]:
    """The ELF's function symbols by address (arm-none-eabi-nm), for naming sampled PCs."""
    out = subprocess.run(["arm-none-eabi-nm", "-n", "--defined-only", str(elf)], capture_output=True, text=True)
    addrs, names = [], []
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            addrs.append(int(parts[0], 16) & ~1)
            names.append(parts[2])
    return addrs, names


def where(profile: Path, elf: Path, top: int = 12) -> list[tuple[str, float]]:
    data = json.loads(profile.read_text())
    addrs, names = symbols(elf)
    counts: Counter[str] = Counter()
    for pc, n in data["pcs"]:
        i = bisect.bisect_right(addrs, pc) - 1
        name = names[i] if i >= 0 and pc < 0x20000000 else ("(RAM code)" if pc >= 0x20000000 else "(bootrom)")
        if pc < 0x4000:
            name = "(bootrom)"
        counts[name] += n
    total = sum(counts.values()) or 1
    return [(name, 100.0 * n / total) for name, n in counts.most_common(top)]


def heat(link: RigLink) -> None:
    link.set(air=4500, heat=1, fan0=300)


def stepped(profile: Path | None) -> dict[str, float]:
    if profile is not None:
        os.environ["THERMRIG_RP2040_PROFILE"] = str(profile)
    cfg = SimConfig(pacing=Pacing.stepped(), seed=3, firmware="micropython-rp2040")
    with SimulatedRig(cfg) as sim, RigLink(sim.port) as link:
        link.hello()
        heat(link)
        sim.advance(2.0)
        before = sim.firmware.pace()  # type: ignore[attr-defined]
        wall = time.monotonic()
        for _ in range(HEAT_S):
            link.ping()
            sim.advance(1.0)
        wall = time.monotonic() - wall
        after = sim.firmware.pace()  # type: ignore[attr-defined]
        heater = sim.plant.heater_duty
    os.environ.pop("THERMRIG_RP2040_PROFILE", None)
    ticks = HEAT_S / TICK_S
    return {
        "boot_s": before["boot_s"],
        "first_telemetry_s": before["first_telemetry_s"],
        "answer_ms_mean": after["answer_ms_mean"],
        "answer_ms_max": after["answer_ms_max"],
        "sim_per_wall": HEAT_S / wall,
        "tick_cycles": (after["cycles"] - before["cycles"]) / ticks,
        "idle": (after["idle_s"] - before["idle_s"]) / HEAT_S,
        "heater": heater,
    }


def realtime() -> dict[str, float]:
    cfg = SimConfig(pacing=Pacing.realtime(), seed=3, firmware="micropython-rp2040")
    with SimulatedRig(cfg) as sim, RigLink(sim.port) as link:
        link.hello(timeout=5.0)
        heat(link)
        link.start_keepalive()
        time.sleep(2.0)
        before = sim.firmware.pace()  # type: ignore[attr-defined]
        time.sleep(REALTIME_S)
        after = sim.firmware.pace()  # type: ignore[attr-defined]
    return {"sim_per_wall": (after["sim_s"] - before["sim_s"]) / (after["wall_s"] - before["wall_s"])}


def main() -> int:
    uf2 = find_tool("pico-uf2")
    if not uf2.is_file():
        print(f"  skipped: no {uf2}: run make firmware-pico")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp) / "profile.json"
        try:
            s = stepped(profile)
        except SimError as exc:
            print(f"  skipped: {exc}")
            return 0
        figure("power-on to EVT BOOT (checkout's files as a release's .mpy)", f"{s['boot_s']:.2f} s", "simulated")
        figure("power-on to the first telemetry frame", f"{s['first_telemetry_s']:.2f} s", "watchdog: 2 s")
        answer = f"{s['answer_ms_mean']:.1f} / {s['answer_ms_max']:.1f} ms"
        figure("answer to a command, chip time (mean / max)", answer, "")
        figure("cycles per 100 ms tick while heating (125 MHz core)", f"{s['tick_cycles'] / 1e6:.2f} M", "")
        figure("  as time of the tick", f"{s['tick_cycles'] / 125e6 * 1000:.1f} ms", "of 100 ms")
        figure("core asleep (WFE/WFI, skipped)", f"{s['idle'] * 100:.0f} %", "")
        figure(f"stepped: simulated s per wall s, heating {HEAT_S} s", f"{s['sim_per_wall']:.2f}", "target >= 1")
        r = realtime()
        figure(f"real time: simulated s per wall s over {REALTIME_S:.0f} s", f"{r['sim_per_wall']:.2f}", "1 at most")
        with burners(2):
            b = stepped(None)
            figure("beside two CPU burners: stepped, simulated s per wall s", f"{b['sim_per_wall']:.2f}", "")
            figure("  tick cycles (the same run whatever the load)", f"{b['tick_cycles'] / 1e6:.2f} M", "")
            rb = realtime()
            figure("  real time, simulated s per wall s", f"{rb['sim_per_wall']:.2f}", "1 at most")
        if profile.is_file():
            print("  where the executed cycles go (sampled PCs, stepped run):")
            for name, pct in where(profile, uf2.with_name("firmware.elf")):
                figure(f"    {name}", f"{pct:.1f} %", "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
