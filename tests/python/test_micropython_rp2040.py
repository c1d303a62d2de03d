"""Stock MicroPython v1.28.0 for the Pico (make firmware-pico) on an emulated RP2040 (rp2040js): the
`micropython-rp2040` simulated firmware. The board's files are those `thermrig flash --board pico` puts on a
Pico, in a littlefs image; nothing of the firmware or of MicroPython is simulated, only the chips around the
RP2040 and the plant. The conformance suite's short form runs here (the whole suite: make conformance-rp2040)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path

import pytest
from board_files import board_files, replace_in
from firmware_release import write_release

from thermrig.conformance.check_runner import ALL_CHECKS, run_check
from thermrig.conformance.result import Outcome
from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.dut.faults import FaultKind
from thermrig.dut.pacing import Pacing
from thermrig.firmware_identity import micropython_firmware_dir
from thermrig.flash.pico_fs import board_filesystem
from thermrig.link.boot_failure import BootFailed
from thermrig.link.rig_link import RigLink
from thermrig.pico_files import RPI_PICO
from thermrig.protocol.messages import Fault
from thermrig.settings import find_tool
from thermrig.sim.firmware.base import SimError
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.testbed import SimulatedRigSpec, open_testbed

pytestmark = pytest.mark.xdist_group("micropython-rp2040")  # one emulated chip at a time: each wants a core
SHORT_FORM = ("handshake", "telemetry", "fault:tc-open:3", "fault:spi-all-ones:2")


@pytest.fixture(scope="module", autouse=True)
def stock_image() -> None:
    if not find_tool("pico-uf2").is_file():
        pytest.fail(f"{find_tool('pico-uf2')} is missing: run `make firmware-pico` (make test does)")


@contextmanager
def rp2040(image: Path | None = None, seed: int = 3) -> Iterator[tuple[SimulatedRig, RigLink]]:
    cfg = SimConfig(pacing=Pacing.stepped(), seed=seed, firmware="micropython-rp2040", image=image)
    with SimulatedRig(cfg) as sim, RigLink(sim.port) as link:
        link.hello()
        yield sim, link


def test_the_short_conformance_form_passes_on_the_stock_image() -> None:
    """Boot, HELLO, telemetry, one fault and one bus fault, as the whole suite checks them."""
    checks = {c.name: c for c in ALL_CHECKS}
    spec = SimulatedRigSpec(Pacing.stepped(), seed=11, firmware="micropython-rp2040")
    with open_testbed(spec, keepalive=False) as bed:  # as the conformance suite opens its rigs
        target = RigUnderTest(bed, bed.sim)
        for name in SHORT_FORM:
            result = run_check(target, checks[name])
            assert result.outcome is Outcome.PASSED, result.text


def test_rig_selftest_runs_on_it_from_the_cli(isolated_env: dict[str, str], tmp_path: Path) -> None:
    """`thermrig rig selftest --sim --firmware micropython-rp2040` (here two checks: the whole suite is make
    conformance-rp2040's): a handshake and the fault matrix's USB unplug, judged as on any firmware."""
    report = tmp_path / "selftest.json"
    only = ["--only", "handshake", "--only", "fault:usb-unplug", "--json", str(report)]
    res = subprocess.run(
        [sys.executable, "-m", "thermrig.cli", "rig", "selftest", "--sim", "--firmware", "micropython-rp2040", *only],
        capture_output=True,
        text=True,
        timeout=170,
        env={**isolated_env, "COLUMNS": "400"},
    )
    assert res.returncode == 0, res.stdout + res.stderr
    results = {r["name"]: r for r in json.loads(report.read_text())}
    assert {n: r["outcome"] for n, r in results.items()} == {"handshake": "passed", "fault:usb-unplug": "passed"}
    assert "on rp2040-pico" in results["handshake"]["figure"]
    assert "2 passed / 0 n/a / 0 failed" in res.stdout


def test_a_release_boots_from_its_littlefs_image_as_flashed(tmp_path: Path) -> None:
    release = write_release(tmp_path, "0.0.0")  # its Pico files: the real .mpy files and main.py
    image = tmp_path / "fs.img"
    version = board_filesystem(image, release)
    assert image.stat().st_size == RPI_PICO.block_size * RPI_PICO.block_count
    with rp2040(image) as (sim, link):
        assert link.info is not None and link.info.board == "rp2040-pico" and link.info.version == version
        sim.advance(1.0)
        assert link.next_telemetry().heater_pct == 0.0
        boot_s = sim.firmware.pace()["boot_s"]  # type: ignore[attr-defined]
    assert 0.0 < boot_s < 1.0  # bytecode: no compiling at boot (the checkout's .py files take about 1 s)


def test_by_default_the_board_holds_the_checkouts_firmware_as_a_release_does(tmp_path: Path) -> None:
    """No image given: the checkout's board files compiled to .mpy as a release holds them, booting in well
    under the 1 s the host allows a reset; the checkout's .py files (a firmware folder as the image) are the
    second variant, which MicroPython compiles at boot."""
    with rp2040() as (sim, link):
        assert link.info is not None and link.info.board == "rp2040-pico"
        bytecode_boot_s = sim.firmware.pace()["boot_s"]  # type: ignore[attr-defined]
    with rp2040(micropython_firmware_dir()) as (sim, link):
        source_boot_s = sim.firmware.pace()["boot_s"]  # type: ignore[attr-defined]
    assert 0.0 < bytecode_boot_s < 1.0
    assert source_boot_s > bytecode_boot_s


def test_a_reset_chip_starts_at_the_plants_time() -> None:
    """After an MCU reset the fresh chip runs on the plant's clock: nothing of the old chip's running ahead
    to answer the host carries over, so the new chip's uptime half a second after the reset is half a
    second, not the 2 s a chip may lead the plant."""
    with rp2040() as (sim, link):
        sim.advance(5.0)
        link.ping()  # the old chip runs ahead of the plant to answer, in its own time (5 s and more)
        sim.faults.inject(FaultKind.MCU_RESET)
        sim.advance(0.5)
        link.ping()  # every frame before the reply is read
        assert link.stats.mcu_resets == 1
        uptime_ms = link.drain_telemetry()[-1].uptime_ms
    assert uptime_ms <= 800  # 0.5 s of the plant, a step, and the reply's grant


def telemetry_of(seed: int) -> list[str]:
    """A scripted run on the board's files as a release holds them (.mpy): the frames' text, every field but
    none of the host's clock."""
    with rp2040(seed=seed) as (sim, link):
        link.set(air=4000, heat=1, fan0=400)
        frames = []
        for _ in range(3):
            link.ping()
            sim.advance(1.0)
            frames += link.drain_telemetry()
        frames += link.collect_telemetry(30 - len(frames), timeout=5.0)
    return [repr((f.uptime_ms, f.readings, f.heater_pct, f.fan_pct, f.faults)) for f in frames]


def test_a_stepped_run_is_the_same_run_whatever_the_load() -> None:
    """The chip runs exactly the cycles of each plant step: two runs of one script read the same frames."""
    first, second = telemetry_of(5), telemetry_of(5)
    assert len(first) >= 25  # 3 s of 10 Hz frames (the one before the script's first advance aside): no empty compare
    assert first == second


def test_a_wiring_mistake_no_part_could_answer_stops_the_board_with_one_line(tmp_path: Path) -> None:
    """A fan PWM at a frequency no 4-wire fan takes: the board stops and says which pin and why."""
    edit = replace_in("thermrig_fw/hal_pico.py", "FAN_PWM_HZ = 25000", "FAN_PWM_HZ = 1000")
    with (
        pytest.raises(SimError, match="pico board: .*" + re.escape("fan0 PWM (GP6) at 1000 Hz")),
        rp2040(board_files(tmp_path, edit)) as (sim, _),
    ):
        sim.advance(0.5)


SPI_SETUP = "SPI(0, baudrate=4_000_000, polarity=0, phase=0,"


@pytest.mark.parametrize(
    ("spi", "said"),
    [
        # Mode 1: SO sampled on the edge the MAX31855 shifts on, every word a bit late: each chip reads open.
        (
            "SPI(0, baudrate=4_000_000, polarity=0, phase=1,",
            (
                "tc0 (drive_ctrl) reads 0.0 °C, open",
                "tc3 (chassis_air) reads 0.0 °C, open",
                "every thermocouple reads open: check first what they share: the SPI mode (0)",
            ),
        ),
        # 20 MHz, four times the chip's 5 MHz: bits that change from read to read.
        (
            "SPI(0, baudrate=20_000_000, polarity=0, phase=0,",
            ("unstable readings with the rig cold", "the MAX31855 takes up to 5 MHz", "the SPI's baudrate on a Pico"),
        ),
    ],
    ids=["spi-mode-1", "spi-clock-20mhz"],
)
def test_the_thermocouples_read_as_the_bus_drives_them_and_bringup_names_it(
    spi: str, said: tuple[str, ...], isolated_env: dict[str, str], tmp_path: Path
) -> None:
    """The Pico's SPI in another mode than the MAX31855's, or clocked past its 5 MHz: the chips answer as
    real ones would (the board does not stop), and `rig bringup` names the SPI setting."""
    image = board_files(tmp_path, replace_in("thermrig_fw/hal_pico.py", SPI_SETUP, spi))
    bringup = ["rig", "bringup", "--sim", "--firmware", "micropython-rp2040", "--image", str(image)]
    res = subprocess.run(
        [sys.executable, "-m", "thermrig.cli", *bringup],
        capture_output=True,
        text=True,
        timeout=300,
        env={**isolated_env, "COLUMNS": "400"},
    )
    out = " ".join(res.stdout.split())
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAIL room temperature" in out, res.stdout
    for words in said:
        assert words in out, res.stdout
    assert "pico board:" not in res.stderr, res.stderr


def test_a_failing_pwm_slice_is_the_fault_matrixs_pwm_error() -> None:
    """fault:pwm-error:0 on the stock image: the heater's slice stops holding its level; the firmware reads
    back a level it did not write, makes the outputs safe and the watchdog restarts the MCU."""
    check = next(c for c in ALL_CHECKS if c.name == "fault:pwm-error:0")
    spec = SimulatedRigSpec(Pacing.stepped(), seed=11, firmware="micropython-rp2040")
    with open_testbed(spec, keepalive=False) as bed:
        result = run_check(RigUnderTest(bed, bed.sim), check)
    assert result.outcome is Outcome.PASSED, result.text


def test_a_watchdog_timeout_past_the_rp2040s_range_is_refused_by_the_stock_port_too(tmp_path: Path) -> None:
    """The stock rp2 port refuses WDT_MS = 10000 as the simulated RP2040 does: the firmware stops at set-up,
    outputs safe, and the host reads the port's own words."""
    image = board_files(tmp_path, replace_in("thermrig_fw/hal_pico.py", "WDT_MS = 2000", "WDT_MS = 10000"))
    cfg = SimConfig(pacing=Pacing.stepped(), seed=3, firmware="micropython-rp2040", image=image)
    with SimulatedRig(cfg) as sim, RigLink(sim.port) as link:
        with pytest.raises(BootFailed) as failed:
            link.hello(timeout=10.0)
        said = "the rig's firmware did not start: the board refused to set up the watchdog (WDT_MS = 10000 in"
        assert str(failed.value).startswith(said + " hal_pico.py): "), failed.value
        sim.advance(1.0)
        assert sim.plant.heater_duty == 0.0 and sim.plant.fan_duty == [1.0, 1.0]


def test_without_node_the_firmware_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("THERMRIG_NODE", str(tmp_path / "no-node"))
    with (
        pytest.raises(SimError, match=r"Node\.js is not installed"),
        SimulatedRig(SimConfig(pacing=Pacing.stepped(), firmware="micropython-rp2040")),
    ):
        pass


def test_every_byte_value_as_line_noise_resets_the_rig_into_a_safe_restart() -> None:
    """0x00-0xFF in one burst while heating: the Ctrl-C (0x03) in it stops main.py (KeyboardInterrupt, outputs
    safe), the Ctrl-D (0x04) after it soft-resets MicroPython, which runs main.py again: the rig is back
    within a second, heater off, its reset seen by the host."""
    with rp2040() as (sim, link):
        link.set(air=4500, heat=1, fan0=300)
        sim.advance(1.0)
        assert sim.actuators()[0] > 0
        link.write_raw(bytes(range(256)))
        sim.advance(2.0)
        link.drain_telemetry()
        sim.advance(1.0)
        frames = link.drain_telemetry() + link.collect_telemetry(10, timeout=5.0)
        assert len(frames) >= 10, f"{len(frames)} frames in the second after the noise"
        assert link.stats.mcu_resets == 1
        assert sim.actuators() == (0.0, [1.0, 1.0]) and frames[-1].heater_pct == 0


def test_a_lone_ctrl_c_parks_the_rig_at_the_repl_with_its_outputs_safe() -> None:
    """What mpremote sends to flash: KeyboardInterrupt, main.py leaves the outputs safe and a timer feeds the
    watchdog, so the REPL stays up (no telemetry, no reset) for as long as someone uses it."""
    with rp2040() as (sim, link):
        link.set(air=4500, heat=1, fan0=300)
        sim.advance(1.0)
        link.write_raw(b"\x03")
        sim.advance(0.5)
        assert sim.actuators() == (0.0, [1.0, 1.0])
        link.drain_telemetry()
        sim.advance(10.0)  # five watchdog timeouts
        assert link.drain_telemetry() == []
        assert link.stats.mcu_resets == 0 and sim.firmware.pace()["resets"] == 0  # type: ignore[attr-defined]


def test_a_host_that_stops_reading_for_10_s_while_heating_leaves_the_loop_at_10_hz() -> None:
    """The USB host keeps the port open but takes nothing for 10 s: USB CDC's buffer fills. The firmware still
    latches HOST_LOST 3 s after the last host frame and turns the heater off; its ticks keep their 10 Hz (it
    drops the frames the port cannot take rather than waiting up to 500 ms on each, which made it 2 Hz); when
    the host reads again, telemetry resumes at 10 Hz and the host sees one gap, no reset."""
    with rp2040() as (sim, link):
        link.set(air=4500, heat=1, fan0=300)
        sim.advance(1.0)
        assert sim.actuators()[0] > 0
        link.ping()  # its reply comes after every frame of that second: the reader has them all
        before = link.drain_telemetry()[-1]
        sim.firmware.freeze_usb_host(10.0)  # type: ignore[attr-defined]
        sim.advance(4.0)
        assert sim.actuators() == (0.0, [1.0, 1.0])  # HOST_LOST, decided on the board while nobody reads
        held = link.drain_telemetry()
        sim.advance(7.0)  # the host reads again after 10 s
        held += link.drain_telemetry()
        # Frames in flight when the host stopped come first; then the gap of those the port could not take (a
        # reply takes a number of the frames' sequence too: the ticks' stamps tell the gap).
        frames = [before, *(f for f in held if f.seq > before.seq), *link.collect_telemetry(10, timeout=5.0)]
        cut = [i for i in range(1, len(frames)) if frames[i].uptime_ms - frames[i - 1].uptime_ms > 150]
        assert len(cut) == 1, f"gaps in the telemetry after {[frames[i - 1].uptime_ms for i in cut]} ms"
        frames = frames[cut[0] :]
        after = frames[0]
        assert after.faults & Fault.HOST_LOST and after.heater_pct == 0
        frames_per_s = (after.seq - before.seq) * 1000 / (after.uptime_ms - before.uptime_ms)
        assert frames_per_s > 8.5, f"{frames_per_s:.1f} ticks a second while the host did not read"
        steps = {b.uptime_ms - a.uptime_ms for a, b in pairwise(frames)}
        assert max(steps) < 110, f"telemetry after the host reads again every {steps} ms"  # every tick's frame
        link.ping()
        assert link.stats.gaps == 1 and link.stats.mcu_resets == 0


def test_a_usb_unplug_and_replug_while_heating_on_the_bus() -> None:
    """The fault matrix's usb-unplug, the cable out for 5 s while heating (the Pico powered by the rig), pulls the
    cable on the emulated bus too: the host's start-of-frame markers stop and the device's port goes away. The
    loop keeps its 10 Hz (it writes no frame while no host drives the bus: MicroPython's USB CDC would take the
    write and wait 500 ms for room), HOST_LOST turns the heater off on the board; after the replug the host
    enumerates the device again and the link is back at 10 Hz with no MCU reset: one reconnect, one gap."""
    with rp2040() as (sim, link):
        link.set(air=4500, heat=1, fan0=300)
        sim.advance(1.0)
        assert sim.actuators()[0] > 0
        link.ping()  # its reply comes after every frame of that second: the reader has them all
        before = link.drain_telemetry()[-1]
        sim.faults.inject(FaultKind.USB_UNPLUG, value=5.0)
        sim.advance(4.0)
        assert sim.actuators() == (0.0, [1.0, 1.0])
        sim.advance(3.0)
        frames = [f for f in link.drain_telemetry() if f.uptime_ms > before.uptime_ms]
        frames += link.collect_telemetry(10, timeout=5.0)
        after = frames[0]
        assert after.uptime_ms >= before.uptime_ms + 5000 and after.faults & Fault.HOST_LOST
        assert frames[-1].heater_pct == 0
        # A frame a tick (and one a reply: the host's HELLO after the replug): the ticks while the cable was out.
        frames_per_s = (after.seq - before.seq) * 1000 / (after.uptime_ms - before.uptime_ms)
        assert frames_per_s >= 10, f"{frames_per_s:.1f} ticks a second while the cable was out"
        assert max(b.uptime_ms - a.uptime_ms for a, b in pairwise(frames[-10:])) < 110  # every tick's frame
        link.ping()
        assert link.stats.reconnects == 1 and link.stats.mcu_resets == 0
        pace = sim.firmware.pace()  # type: ignore[attr-defined]
        assert (pace["usb_unplugs"], pace["usb_opens"], pace["resets"]) == (1, 2, 0)  # pulled on the bus, opened again


def test_the_heap_report_is_the_chips_own() -> None:
    """MEM while heating: the firmware's own collections (every 10 s, at the end of a tick) timed by the chip's
    clock, each longer than nothing and shorter than the tick, inside a tick that keeps within its 100 ms; and
    free and used bytes that are the heap's allocation table in the chip's SRAM, read from outside."""
    with rp2040() as (sim, link):
        link.set(air=4500, heat=1, fan0=300)
        for _ in range(12):  # the first collection comes at the 100th tick
            link.ping()
            sim.advance(1.0)
        report = link.heap_report()
        table = sim.firmware.heap()  # type: ignore[attr-defined]
    assert table.marked == 0  # not taken in the middle of a collection
    assert report.collections == 1
    assert 0 < report.gc_last_us <= report.gc_max_us < report.tick_max_us < 100_000
    assert report.free + report.used == table.pool < 264 * 1024  # the heap, within the RP2040's SRAM
    assert report.free <= report.free_after_gc < table.pool
    assert abs(report.free - table.free) <= 512  # the reply's own allocations, after gc.mem_free()
    assert 0 < table.largest_free <= table.free
