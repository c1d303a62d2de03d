"""Constants the three codebases share. The limits and timings are declared once, in
firmware/core/rig_limits.toml, and generated into the C core's rig_config.h, the MicroPython firmware's
config.py and the host's protocol/limits.py (scripts/gen_limits.py): each of the three is checked against
the declaration, its text and its values. The rest (fault bits, channel flags, the channel table, identity
numbers, frame sizes) is declared once per language and compared here. A value changed on one side only
fails here."""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from thermrig.protocol import frame, limits
from thermrig.protocol.messages import ChannelStatus, Fault

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "firmware" / "core"
MP_CONFIG = REPO / "firmware" / "micropython" / "thermrig_fw" / "config.py"

_DEFINE = re.compile(r"^#define\s+(\w+)\s+(\S.*?)\s*(?:/\*.*)?$", re.MULTILINE)
_NUMBER = re.compile(r"\(?(-?(?:0x[0-9A-Fa-f]+|[0-9]+(?:\.[0-9]+)?))[uUfF]?\)?")

SCRIPT = REPO / "scripts" / "gen_limits.py"
_spec = importlib.util.spec_from_file_location("gen_limits", SCRIPT)
assert _spec is not None and _spec.loader is not None
gen_limits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_limits)

LIMITS = [limit for group in gen_limits.load(REPO / gen_limits.DECLARATION) for limit in group.limits]
# rig_config.h's numbers that are not limits (the rig's identity and channel map): declared there, and in
# config.py under the same name.
IDENTITY = {"PROTO_VERSION", "NUM_TC", "NUM_FANS", "TC_CHASSIS_AIR"}


def c_defines(header: str) -> dict[str, float]:
    """Every `#define NAME number` of a core header (strings and expressions left out)."""
    values: dict[str, float] = {}
    for name, text in _DEFINE.findall((CORE / header).read_text()):
        if (m := _NUMBER.fullmatch(text)) is not None:
            number = m[1]
            values[name] = float(number) if "." in number else int(number, 0)
    return values


@functools.cache
def mp_config() -> dict[str, object]:
    """config.py's assignments, `NAME = const(x)` read as x."""
    values: dict[str, object] = {}
    for node in ast.parse(MP_CONFIG.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "const":
                value = value.args[0]
            try:
                values[node.targets[0].id] = ast.literal_eval(value)
            except ValueError:
                continue  # computed from another module (FW_VERSION)
    return values


def prefixed(values: dict[str, float], prefix: str) -> dict[str, float]:
    return {name.removeprefix(prefix): v for name, v in values.items() if name.startswith(prefix)}


def test_the_headers_are_read() -> None:
    """The parser finds what the comparisons below rely on (an empty read would compare nothing)."""
    config = c_defines("rig_config.h")
    assert config["RIG_HOST_TIMEOUT_MS"] == 3000 and config["RIG_TC_MIN_CC"] == -2000
    assert config["RIG_AIR_KP"] == 400.0 and len(prefixed(c_defines("safety.h"), "FAULT_")) == 13
    assert mp_config()["TC_MAX_CC"] == (11000, 9000, 9000, 7000)


def test_fault_bits_agree() -> None:
    c_faults = prefixed(c_defines("safety.h"), "FAULT_")
    assert {f.name: f.value for f in Fault} == c_faults
    assert prefixed(mp_config(), "FAULT_") == c_faults  # type: ignore[arg-type]


def test_channel_status_flags_agree() -> None:
    c_flags = prefixed(c_defines("safety.h"), "CH_")
    assert {f.name: f.value for f in ChannelStatus} == c_flags
    assert prefixed(mp_config(), "CH_") == c_flags  # type: ignore[arg-type]


def test_the_micropython_firmware_has_the_identity_numbers_of_rig_config() -> None:
    c_config, mp = prefixed(c_defines("rig_config.h"), "RIG_"), mp_config()
    for name in sorted(IDENTITY):
        assert mp.get(name) == c_config[name], f"RIG_{name} = {c_config[name]}, config.py {name} = {mp.get(name)}"


def test_the_channel_table_agrees() -> None:
    """rig_channels.c's thermocouples (the default four) against config.py's map and limits."""
    table = re.findall(r'TC\((\d), "(\w+)", (\d+)\)', (CORE / "rig_channels.c").read_text())
    mp = mp_config()
    four = [(int(n), name, int(max_cc)) for n, name, max_cc in table][: int(mp["NUM_TC"])]  # type: ignore[call-overload]
    assert [max_cc for _, _, max_cc in four] == list(mp["TC_MAX_CC"])  # type: ignore[call-overload]
    mp_map = mp["CHANNEL_MAP"].decode()  # type: ignore[attr-defined]
    assert [f"tc{n}:{name}" for n, name, _ in four] == mp_map.split(",")[: len(four)]


def test_the_three_files_are_what_the_declaration_gives() -> None:
    """Each generated block as scripts/gen_limits.py writes it from rig_limits.toml, and nothing else."""
    assert gen_limits.stale(REPO) == [], f"edited by hand, or {gen_limits.DECLARATION} was: run `make limits`"


def test_every_limit_of_rig_config_is_declared() -> None:
    """rig_config.h's numbers are its identity and the declared limits: none added beside the declaration."""
    assert set(prefixed(c_defines("rig_config.h"), "RIG_")) == IDENTITY | {limit.name for limit in LIMITS}


@pytest.mark.parametrize("limit", LIMITS, ids=lambda limit: limit.name)
def test_each_file_has_the_declared_value(limit: gen_limits.Limit) -> None:
    """The value each language sees, of the type it had before the declaration (C float or integer, the
    MicroPython firmware's integers, the host's floats in its own units): the block's text aside."""
    c_value = c_defines("rig_config.h")[f"RIG_{limit.name}"]
    assert (c_value, type(c_value)) == (limit.value, type(limit.value))
    mp_value = mp_config()[limit.mp_name]
    assert (mp_value, type(mp_value)) == (limit.mp_value, int)
    if limit.host_name is not None:
        host_value = getattr(limits, limit.host_name)
        assert (host_value, type(host_value)) == (limit.host_value, type(limit.host_value))


def test_the_hosts_units() -> None:
    """The host's names and scales as they were written before the declaration: seconds, degC, tenths."""
    assert (limits.TICK_S, limits.HOST_TIMEOUT_S, limits.FAN_STALL_S, limits.STUCK_WINDOW_S) == (0.1, 3.0, 3.0, 20.0)
    assert (limits.AIR_TARGET_MAX_C, limits.VERIFY_MAX_ERROR_C_S, limits.AIR_KI_MAX) == (65.0, 120.0, 200.0)
    assert isinstance(limits.FULL_SCALE_PM, int) and isinstance(limits.TEL_MAX_MS, int)


def _copy_of_the_generated_files(root: Path) -> None:
    """The declaration and its three files under `root`, generated there (whatever the checkout's state)."""
    for rel in (gen_limits.DECLARATION, *gen_limits.TARGETS):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, root / rel)
    assert gen_limits.main(["--root", str(root)]) == 0


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} in {path}"
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    ("target", "old", "new"),
    [
        (gen_limits.C_HEADER, "#define RIG_HOLD_PERIOD_MS 40000u", "#define RIG_HOLD_PERIOD_MS 41000u"),
        (gen_limits.MP_CONFIG, "HOLD_PERIOD_MS = const(40000)", "HOLD_PERIOD_MS = const(41000)"),
        (gen_limits.HOST_LIMITS, "HOLD_PERIOD_S = 40.0", "HOLD_PERIOD_S = 41.0"),
        (gen_limits.HOST_LIMITS, "HOLD_PERIOD_S = 40.0", "HOLD_PERIOD_S = 40"),  # the type is the host's too
    ],
)
def test_a_value_changed_in_one_file_is_stale(tmp_path: Path, target: str, old: str, new: str) -> None:
    _copy_of_the_generated_files(tmp_path)
    assert gen_limits.stale(tmp_path) == []
    _edit(tmp_path / target, old, new)
    assert gen_limits.stale(tmp_path) == [target]
    check = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--root", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 1 and f"{target}: stale" in check.stderr
    assert f"-{new}" in check.stderr and f"+{old}" in check.stderr  # the diff shows what the declaration gives


def test_a_value_changed_in_the_declaration_is_written_into_all_three(tmp_path: Path) -> None:
    _copy_of_the_generated_files(tmp_path)
    _edit(tmp_path / gen_limits.DECLARATION, "value = 40000", "value = 41000")
    assert gen_limits.stale(tmp_path) == list(gen_limits.TARGETS)
    assert gen_limits.main(["--root", str(tmp_path)]) == 0
    assert gen_limits.stale(tmp_path) == []
    assert "#define RIG_HOLD_PERIOD_MS 41000u\n" in (tmp_path / gen_limits.C_HEADER).read_text()
    assert "HOLD_PERIOD_MS = const(41000)\n" in (tmp_path / gen_limits.MP_CONFIG).read_text()
    assert "HOLD_PERIOD_S = 41.0\n" in (tmp_path / gen_limits.HOST_LIMITS).read_text()
    for rel in gen_limits.TARGETS:  # around the block, each file as it was
        before, _, _ = (REPO / rel).read_text().partition(gen_limits.BEGIN)
        _, _, after = (REPO / rel).read_text().partition(gen_limits.END)
        now = (tmp_path / rel).read_text()
        assert now.startswith(before) and now.endswith(after), rel


def test_the_protocol_version_agrees() -> None:
    assert c_defines("rig_config.h")["RIG_PROTO_VERSION"] == frame.PROTO_VERSION


def test_the_hosts_frame_limits_are_the_codecs() -> None:
    c_frame = c_defines("frame.h")
    assert (
        c_frame["FRAME_MAX_LEN"],
        c_frame["FRAME_MAX_ARGS"],
        c_frame["FRAME_MAX_TYPE_LEN"],
    ) == (frame.FRAME_MAX_LEN, frame.FRAME_MAX_ARGS, frame.FRAME_MAX_TYPE_LEN)
