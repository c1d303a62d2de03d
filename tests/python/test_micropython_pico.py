"""The Pico's own code (main.py, bootcheck.py, thermrig_fw/hal_pico.py), unchanged, on MicroPython's unix
port against a simulated RP2040 (firmware/micropython/sim_machine) wired to the plant: the simulated rig's
`micropython-pico` firmware. Only the board is simulated (true hardware); the firmware and the plant are the
real ones. Each chip select reads its own thermocouple, the SHT31 answers at its address with its CRC, the
tach interrupts follow the fans, the PWM duties drive the plant, the watchdog bites; a wiring mistake in the
firmware stops the board with one line. Every function of hal_pico.py is called here."""

from __future__ import annotations

import ast
import itertools
import re
import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from board_files import board_files, replace_in
from campaign_helpers import thermrig
from waiting import advance_and_read, wait_for

from thermrig.dut.pacing import Pacing
from thermrig.link.boot_failure import BootFailed
from thermrig.link.rig_link import RigLink
from thermrig.protocol.messages import Fault
from thermrig.sim.firmware.base import SimError
from thermrig.sim.firmware.micropython import firmware_dir, micropython_binary
from thermrig.sim.server import PlantServer
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

pytestmark = pytest.mark.xdist_group("micropython-pico")  # one worker: the call log adds up in file order
HAL_PICO = firmware_dir() / "thermrig_fw" / "hal_pico.py"


def hal_pico_defs() -> list[str]:
    """Every function hal_pico.py defines: `name` at module level, `Class.name` in its classes."""
    tree = ast.parse(HAL_PICO.read_text())
    defs = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            defs.append(node.name)
        elif isinstance(node, ast.ClassDef):
            defs += [
                f"{node.name}.{f.name}" for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
    return defs


@pytest.fixture(scope="module")
def call_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pico") / "hal_pico_calls"


@pytest.fixture(autouse=True)
def log_calls(call_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every board these tests start notes which functions of hal_pico.py it called (pico_sim.py)."""
    monkeypatch.setenv("THERMRIG_PICO_CALLS", str(call_log))
    monkeypatch.setenv("THERMRIG_PICO_DEFS", ",".join(hal_pico_defs()))


@contextmanager
def pico(image: Path | None = None, seed: int = 3) -> Iterator[tuple[SimulatedRig, RigLink]]:
    with (
        SimulatedRig(SimConfig(pacing=Pacing.stepped(), seed=seed, firmware="micropython-pico", image=image)) as sim,
        RigLink(sim.port) as link,
    ):
        link.hello()
        yield sim, link


def test_each_chip_select_reads_its_own_thermocouple_and_the_sht31_answers() -> None:
    with pico() as (sim, link):
        for ch, c in enumerate((30.0, 31.0, 32.0, 33.0)):
            sim.faults.inject("tc-stuck", ch, c)  # each chip's word carries its own temperature
        sim.advance(1.0)

        def temps() -> list[float]:
            tel = link.latest
            return [tel.temps[f"tc{i}"].value for i in range(4)] if tel is not None else []

        def ambient_ok() -> bool:  # read a tick after its measurement started: not in the first frame
            tel = link.latest
            return tel is not None and tel.temps["amb"].status == 0

        assert wait_for(lambda: temps() == [30.0, 31.0, 32.0, 33.0] and ambient_ok()), f"read {link.latest}"
        assert link.latest is not None
        assert abs(link.latest.temps["amb"].value - sim.plant.room_c) < 1.0  # 0x44, its CRCs checked
        sim.faults.inject("tc-open", 2)  # one chip's fault bits reach only its channel
        sim.advance(0.3)

        def statuses() -> list[int]:
            tel = link.latest
            return [int(tel.temps[f"tc{i}"].status) for i in range(4)] if tel is not None else []

        assert wait_for(lambda: statuses()[2:3] == [1]), f"statuses {statuses()}"
        assert statuses() == [0, 0, 1, 0] and temps()[:2] + temps()[3:] == [30.0, 31.0, 33.0]


def test_pwm_duties_drive_the_plant_and_tach_interrupts_follow_the_fans() -> None:
    with pico() as (sim, link):
        link.set(fan0=400, fan1=1000)
        tel = advance_and_read(sim, link, 5.0)  # spin-down and a full RPM window
        assert sim.plant.fan_duty == [0.4, 1.0]  # duty_u16 back to permille, exact
        for i, fan in enumerate(sim.plant.fans):
            assert abs(tel.rpm[f"rpm{i}"].value - fan.rpm) < 0.1 * fan.rpm  # 2 falling edges a turn
        assert tel.rpm["rpm0"].value < tel.rpm["rpm1"].value
        sample = link.ping()  # now_us: the PING's stamp
        assert sample.mcu_us > 0


def test_a_silent_tach_and_a_bad_sht31_crc_are_handled_as_on_the_other_firmwares() -> None:
    with pico() as (sim, link):
        sim.faults.inject("ambient-crc")
        tel = advance_and_read(sim, link, 0.5)
        assert int(tel.temps["amb"].status) == 0x20  # flagged, not a fault
        sim.faults.inject("tach-missing", 1)
        sim.advance(3.5)
        assert wait_for(lambda: stalled(link)), f"no fan stall: {link.latest}"
        assert link.latest is not None and link.latest.fan_pct == {"fan0": 100.0, "fan1": 100.0}


def stalled(link: RigLink) -> bool:
    return link.latest is not None and Fault.FAN_STALL in link.latest.faults


def test_a_pwm_error_restarts_the_board_by_its_watchdog_outputs_safe() -> None:
    """machine.PWM raising (the injected pwm-error) is an unexpected exception: main.py puts every output
    it can in the safe state and stops feeding the watchdog, which resets the MCU: EVT BOOT cause=1024."""
    with pico() as (sim, link):
        link.set(air=3000, heat=1)
        sim.advance(1.0)
        assert sim.plant.heater_duty > 0
        sim.faults.inject("pwm-error", 2)  # fan1's PWM fails
        sim.advance(0.3)
        assert sim.plant.heater_duty == 0.0 and sim.plant.fan_duty[0] == 1.0  # the others safe at once
        sim.faults.clear()
        sim.advance(2.5)  # the watchdog's 2 s

        def rebooted() -> bool:
            tel = link.latest
            return tel is not None and Fault.WATCHDOG in tel.faults

        assert wait_for(rebooted), "no frame with the watchdog fault after the reset"
        assert link.latest is not None and link.latest.uptime_ms < 1000 and link.latest.heater_pct == 0.0


def test_interrupt_for_the_repl_leaves_outputs_safe_and_the_watchdog_fed() -> None:
    """mpremote (or a person) interrupts the firmware to get the REPL, e.g. to flash it: heater off, fans
    full, and a timer keeps feeding the watchdog, which cannot be stopped, so the REPL stays up."""
    with pico() as (sim, link):
        link.set(air=3000, heat=1)
        sim.advance(1.0)
        assert sim.plant.heater_duty > 0
        sim.firmware.proc.send_signal(signal.SIGINT)  # what Ctrl-C on the USB serial raises on a Pico

        def outputs_safe() -> bool:
            sim.advance(0.1)  # the board's next request carries its outputs
            return sim.plant.heater_duty == 0.0

        assert wait_for(outputs_safe, timeout=60)
        stopped = link.latest
        sim.advance(5.0)  # past the watchdog's 2 s: the timer feeds it
        assert sim.firmware.proc.poll() is None
        assert sim.plant.heater_duty == 0.0 and sim.plant.fan_duty == [1.0, 1.0]
        sim.firmware.settle()
        assert link.latest is stopped  # the firmware stays stopped at the REPL: no reboot, no frames


def test_the_uptime_runs_on_through_the_tick_counters_wrap() -> None:
    """ticks_us wraps every 2**30 us (18 min) on an RP2040: with the counter started 1 s before its
    wrap, hal_pico's uptime, telemetry cadence and PING stamps go on as if nothing happened."""
    wrap_soon = (1 << 30) - 1_000_000
    cfg = SimConfig(pacing=Pacing.stepped(), seed=5, firmware="micropython-pico", offset_us=wrap_soon)
    with SimulatedRig(cfg) as sim, RigLink(sim.port) as link:
        link.hello()
        frames = link.subscribe()  # every frame from here on, none missed
        sim.advance(3.0)  # the counter wraps 1 s in
        uptimes = [frames.get(timeout=30).uptime_ms for _ in range(29)]  # on the line: the reader's pace
        assert [b - a for a, b in itertools.pairwise(uptimes)] == [100] * 28
        assert abs(link.ping().mcu_us - uptimes[-1] * 1000) < 200_000


def chip_selects_inverted(image: Path) -> None:
    """The MAX31855 driver selects with a high line and rests low: every other chip answers each read."""
    path = image / "thermrig_fw" / "max31855.py"
    text = path.read_text()
    assert "self.cs(0)" in text and "self.cs(1)" in text
    path.write_text(
        text.replace("self.cs(0)", "self.cs(H)").replace("self.cs(1)", "self.cs(0)").replace("self.cs(H)", "self.cs(1)")
    )


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (replace_in("thermrig_fw/hal_pico.py", "polarity=0, phase=0", "polarity=1, phase=1"), "mode 0"),
        (replace_in("thermrig_fw/hal_pico.py", "baudrate=4_000_000", "baudrate=10_000_000"), "up to 5000000 Hz"),
        (replace_in("thermrig_fw/hal_pico.py", "FAN_PWM_HZ = 25000", "FAN_PWM_HZ = 1000"), "fan0 PWM (GP6) at 1000 Hz"),
        (replace_in("main.py", '"spi": (18, 16)', '"spi": (18, 20)'), "SO are on GP18 and GP16"),
        (replace_in("main.py", '"i2c": (4, 5)', '"i2c": (8, 9)'), "SDA and SCL are on GP4 and GP5"),
        (replace_in("thermrig_fw/hal_pico.py", "SPI(0, baudrate", "SPI(1, baudrate"), "on SPI0, not SPI1"),
        (replace_in("main.py", '"spi": (18, 16)', '"spi": (19, 16)'), "SPI0 has no SCK on GP19 or RX on GP16"),
        (replace_in("main.py", '"i2c": (4, 5)', '"i2c": (4, 6)'), "I2C0 has no SDA on GP4 or SCL on GP6"),
        (
            replace_in("thermrig_fw/hal_pico.py", "polarity=0, phase=0,", "polarity=0, phase=0, firstbit=SPI.LSB,"),
            "firstbit=1: the MAX31855 sends its word MSB first",
        ),
        (replace_in("thermrig_fw/hal_pico.py", "I2C(0, sda", "I2C(1, sda"), "on I2C0, not I2C1"),
        (replace_in("thermrig_fw/hal_pico.py", "freq=100_000", "freq=3_400_000"), "up to 1000000 Hz"),
        (
            replace_in("thermrig_fw/hal_pico.py", "HEATER_PWM_HZ = 100", "HEATER_PWM_HZ = 25000"),
            "heater PWM (GP10) at 25000 Hz",
        ),
    ],
    ids=[
        "spi-mode",
        "spi-clock",
        "fan-pwm-frequency",
        "spi-pins",
        "i2c-pins",
        "spi-bus",
        "spi-pin-function",
        "i2c-pin-function",
        "spi-bit-order",
        "i2c-bus",
        "i2c-clock",
        "heater-pwm-frequency",
    ],
)
def test_a_wiring_mistake_stops_the_board_with_one_line(
    tmp_path: Path, edit: Callable[[Path], None], says: str
) -> None:
    with (
        pytest.raises(SimError, match="pico board: .*" + re.escape(says)),
        pico(board_files(tmp_path, edit)) as (sim, _),
    ):
        sim.advance(0.5)


@pytest.mark.parametrize(
    ("edit", "check"),
    [
        # Chip selects swapped in the pin map: each channel reads the other's thermocouple.
        (replace_in("main.py", '"tc_cs": (17, 20, 21, 22)', '"tc_cs": (20, 17, 21, 22)'), "swapped"),
        # The SHT31 addressed at 0x45 (its ADDR pin high): nobody answers, the channel shows no data.
        (replace_in("thermrig_fw/sht3x.py", "ADDR = const(0x44)", "ADDR = const(0x45)"), "no-ambient"),
        # Tach without the pull-up: the open collector never pulls a floating line: no edges, a stall.
        (replace_in("thermrig_fw/hal_pico.py", "Pin.IN, Pin.PULL_UP", "Pin.IN"), "no-tach"),
        # The heater's PWM inverted: the heater is driven full at 0 %, the safe state included.
        (
            replace_in(
                "thermrig_fw/hal_pico.py",
                "freq=HEATER_PWM_HZ, duty_u16=0)",
                "freq=HEATER_PWM_HZ, duty_u16=0, invert=True)",
            ),
            "heats-at-zero",
        ),
        # The heater on GP11 (a PWM channel the heater stage is not wired to): it never heats.
        (replace_in("main.py", '"heater": 10', '"heater": 11'), "never-heats"),
        # A fan's PWM inverted: full duty (the boot's and the safe state's) stops it: a stall.
        (
            replace_in(
                "thermrig_fw/hal_pico.py",
                "freq=FAN_PWM_HZ, duty_u16=65535)",
                "freq=FAN_PWM_HZ, duty_u16=65535, invert=True)",
            ),
            "no-tach",
        ),
        # The SHT31's measurement with clock stretching (0x2C06), which the board's bus does not do: a NAK.
        (replace_in("thermrig_fw/sht3x.py", 'b"\\x24\\x00"', 'b"\\x2c\\x06"'), "no-ambient"),
        # Each fan's tach read on the other fan's pin, or each fan's PWM on the other fan: crossed.
        (replace_in("main.py", '"tach": (8, 9)', '"tach": (9, 8)'), "crossed"),
        (replace_in("main.py", '"fans": (6, 7)', '"fans": (7, 6)'), "crossed"),
    ],
    ids=[
        "cs-swapped",
        "sht31-address",
        "tach-pull-up",
        "heater-pwm-inverted",
        "heater-pin",
        "fan-pwm-inverted",
        "sht31-clock-stretching",
        "tach-swapped",
        "fan-pwm-swapped",
    ],
)
def test_a_miswired_firmware_reads_wrong_on_the_board(tmp_path: Path, edit: Callable[[Path], None], check: str) -> None:
    with pico(board_files(tmp_path, edit)) as (sim, link):
        sim.faults.inject("tc-stuck", 0, 30.0)
        sim.faults.inject("tc-stuck", 1, 40.0)
        tel = advance_and_read(sim, link, 3.5)
        if check == "swapped":
            assert (tel.temps["tc0"].value, tel.temps["tc1"].value) == (40.0, 30.0)
        elif check == "no-ambient":
            assert int(tel.temps["amb"].status) == 0x20
        elif check == "heats-at-zero":
            assert tel.heater_pct == 0 and sim.plant.heater_duty == 1.0
        elif check == "never-heats":
            link.set(air=4000, hlim=1000, heat=1)
            tel = advance_and_read(sim, link, 1.0)
            assert tel.heater_pct > 50 and sim.plant.heater_duty == 0.0
        elif check == "crossed":
            link.set(fan0=300, fan1=1000)
            tel = advance_and_read(sim, link, 5.0)
            assert tel.rpm["rpm0"].value > 1.5 * tel.rpm["rpm1"].value, tel.rpm  # each speed is the other fan's
        else:
            assert wait_for(lambda: stalled(link)), f"no fan stall: {link.latest}"


@pytest.mark.parametrize(
    "edit",
    [
        replace_in("thermrig_fw/max31855.py", "finally:\n            self.cs(1)", "finally:\n            pass"),
        chip_selects_inverted,
    ],
    ids=["chip-select-left-low", "chip-select-polarity"],
)
def test_a_chip_select_driven_wrong_stops_the_board_at_a_read(tmp_path: Path, edit: Callable[[Path], None]) -> None:
    """A MAX31855 driver that never raises its chip select again, or selects with a high line: a read has
    two or more chips on MISO, and the board stops there with one line (checked at run time; the other
    wiring checks stop it at set-up)."""
    with pico(board_files(tmp_path, edit)) as (sim, link):
        sim.advance(0.5)
        assert sim.proc.wait(timeout=30) != 0 and link.latest is None
        assert sim.proc.stderr is not None
        err = sim.proc.stderr.read()
        assert re.search(r"pico board: chip selects of thermocouples \[[0-3](, [0-3])+\] low at once", err), err


def bringup(env: dict[str, str], image: Path) -> subprocess.CompletedProcess[str]:
    """`thermrig rig bringup` on a simulated rig whose Pico runs the board files of image."""
    args = ["rig", "bringup", "--sim", "--firmware", "micropython-pico", "--image", str(image)]
    return thermrig(*args, env={**env, "COLUMNS": "400"}, timeout=300)


def test_a_watchdog_timeout_the_rp2040_cannot_hold_stops_the_firmware_safe_and_bringup_names_it(
    tmp_path: Path, isolated_env: dict[str, str]
) -> None:
    """WDT_MS past the RP2040's 8388 ms: the chip refuses the watchdog (ValueError); the firmware stops at
    set-up with its outputs safe and answers every frame NAK BOOT with the chip's words, which bring-up
    prints as one line."""
    image = board_files(tmp_path, replace_in("thermrig_fw/hal_pico.py", "WDT_MS = 2000", "WDT_MS = 10000"))
    refused = "the watchdog (WDT_MS = 10000 in hal_pico.py): WDT timeout 10000 ms: the RP2040 takes 1-8388 ms"
    said = f"the rig's firmware did not start: the board refused to set up {refused}: fix that setting and copy"
    said += " the firmware again"
    with (
        SimulatedRig(SimConfig(pacing=Pacing.stepped(), seed=3, firmware="micropython-pico", image=image)) as sim,
        RigLink(sim.port) as link,
    ):
        with pytest.raises(BootFailed) as failed:
            link.hello()
        assert failed.value.nak.reason == "BOOT"
        assert str(failed.value) == said
        sim.advance(3.0)  # the board idles on, its hardware running, its outputs as safe_pins left them
        assert sim.plant.heater_duty == 0.0 and sim.plant.fan_duty == [1.0, 1.0]
        assert sim.proc.poll() is None
    res = bringup(isolated_env, image)
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.stderr.strip().splitlines() == [f"error: {said}"], res.stderr


def test_an_sht31_read_before_its_conversion_is_done_reads_no_ambient_and_bringup_says_so(
    tmp_path: Path, isolated_env: dict[str, str]
) -> None:
    """An SHT31 driver that reads the measurement it has just started (no 15 ms between the start command and
    the read): the chip NAKs the read while it converts, every tick, so the ambient channel has no data. No
    wiring or setting reaches this (the firmware reads one 100 ms tick after the start); a driver does."""
    image = board_files(
        tmp_path,
        replace_in(
            "thermrig_fw/sht3x.py",
            "        ok = False\n        if self.started:",
            "        ok = False\n        self.i2c.writeto(self.addr, _MEASURE)\n        self.started = True\n"
            "        if self.started:",
        ),
    )
    with pico(image) as (sim, link):
        tel = advance_and_read(sim, link, 3.5)
        assert int(tel.temps["amb"].status) == 0x20, tel.temps["amb"]
        assert tel.temps["tc0"].status == 0  # the thermocouples read on
    res = bringup(isolated_env, image)
    out = " ".join(res.stdout.split())
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAIL ambient sensor ambient 0.0 °C, 0 % RH (NO_DATA)" in out, res.stdout
    assert "a firmware that reads it sooner than 15 ms after starting a measurement gets no answer either" in out
    assert res.stdout.splitlines()[-1] == "9 of 10 steps passed; failed: ambient sensor", res.stdout


@contextmanager
def bare_board(tmp_path: Path, stdin: int) -> Iterator[PlantServer]:
    """The board on its own (no SerialBridge): pico_sim.py against a plant, stdin as given."""
    sim = SimulatedRig(SimConfig(pacing=Pacing.stepped(), seed=1, firmware="micropython-pico"))  # its plant only
    server = PlantServer(sim.plant, sim.sensors, str(tmp_path / "plant.sock"), Pacing.stepped()).start()
    cmd = [
        str(micropython_binary()),
        str(firmware_dir() / "sim_machine" / "pico_sim.py"),
        "--plant",
        str(tmp_path / "plant.sock"),
    ]
    with subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        try:
            server.wait_ready(timeout=60)
            yield server
        finally:
            proc.kill()
            server.close()


def test_a_pico_without_a_usb_host_runs_with_outputs_safe(tmp_path: Path) -> None:
    """USB not connected (serial input at its end): serial_closed waits a tick at a time; the loop runs,
    the watchdog is fed, the outputs stay in their boot state (heater off, fans full)."""
    with bare_board(tmp_path, subprocess.DEVNULL) as server:
        server.advance(5.0)
        assert server.plant.heater_duty == 0.0 and server.plant.fan_duty == [1.0, 1.0]
        assert server.ticks > 40  # the board kept asking: no watchdog reset stopped it for long


def test_every_function_of_hal_pico_is_called(call_log: Path, request: pytest.FixtureRequest) -> None:
    """Runs last in this file: the boards above noted each hal_pico.py function they called."""
    here = request.node.path
    mine = {item.originalname for item in request.session.items if item.path == here}
    if not {name for name in ALL_TESTS if name in mine} >= set(ALL_TESTS):
        pytest.skip("adds up the calls of this whole file's boards: run the file, not a selection of it")
    called = set(call_log.read_text().split()) if call_log.exists() else set()
    missed = [name for name in hal_pico_defs() if name not in called]
    assert not missed, f"hal_pico.py functions no test calls: {missed}"


def test_the_call_log_names_what_hal_pico_defines() -> None:
    """The listing the check above compares against: it finds the classes' and the module's functions."""
    defs = hal_pico_defs()
    assert {"_u16", "Tach._edge", "Tach.take", "PicoHal.tick", "PicoHal.keep_alive"} <= set(defs)


# The tests whose boards the call check adds up (it skips unless all of them were selected).
ALL_TESTS = [
    name
    for name, obj in list(globals().items())
    if name.startswith("test_") and callable(obj) and name != "test_every_function_of_hal_pico_is_called"
]
