"""Constants the three codebases share, declared once per language and compared here: the C headers
(firmware/core: fault bits, channel flags, limits, timeouts, full scale, frame sizes) against the
MicroPython firmware's config.py and the host's protocol package. A value changed on one side only
fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from thermrig.protocol import frame, limits
from thermrig.protocol.messages import ChannelStatus, Fault

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "firmware" / "core"
MP_CONFIG = REPO / "firmware" / "micropython" / "thermrig_fw" / "config.py"

_DEFINE = re.compile(r"^#define\s+(\w+)\s+(\S.*?)\s*(?:/\*.*)?$", re.MULTILINE)
_NUMBER = re.compile(r"\(?(-?(?:0x[0-9A-Fa-f]+|[0-9]+(?:\.[0-9]+)?))[uUfF]?\)?")

# rig_config.h's numbers that the MicroPython firmware keeps under another name or unit, or not at all.
MP_ELSEWHERE = {
    "AIR_D_FILTER_S": ("AIR_D_FILTER_MS", 1000),  # the integer PID takes its D filter in ms
}


def c_defines(header: str) -> dict[str, float]:
    """Every `#define NAME number` of a core header (strings and expressions left out)."""
    values: dict[str, float] = {}
    for name, text in _DEFINE.findall((CORE / header).read_text()):
        if (m := _NUMBER.fullmatch(text)) is not None:
            number = m[1]
            values[name] = float(number) if "." in number else int(number, 0)
    return values


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


def test_the_micropython_firmware_has_every_number_of_rig_config() -> None:
    mp = mp_config()
    for name, value in prefixed(c_defines("rig_config.h"), "RIG_").items():
        mp_name, factor = MP_ELSEWHERE.get(name, (name, 1))
        assert mp_name in mp, f"rig_config.h's RIG_{name} has no {mp_name} in the MicroPython config.py"
        assert mp[mp_name] == value * factor, f"RIG_{name} = {value}, config.py {mp_name} = {mp[mp_name]}"


def test_the_channel_table_agrees() -> None:
    """rig_channels.c's thermocouples (the default four) against config.py's map and limits."""
    table = re.findall(r'TC\((\d), "(\w+)", (\d+)\)', (CORE / "rig_channels.c").read_text())
    mp = mp_config()
    four = [(int(n), name, int(max_cc)) for n, name, max_cc in table][: int(mp["NUM_TC"])]  # type: ignore[call-overload]
    assert [max_cc for _, _, max_cc in four] == list(mp["TC_MAX_CC"])  # type: ignore[call-overload]
    mp_map = mp["CHANNEL_MAP"].decode()  # type: ignore[attr-defined]
    assert [f"tc{n}:{name}" for n, name, _ in four] == mp_map.split(",")[: len(four)]


@pytest.mark.parametrize(
    ("host", "c_name", "scale"),
    [
        (limits.FULL_SCALE_PM, "RIG_FULL_SCALE_PM", 1),
        (limits.TICK_S, "RIG_TICK_MS", 1000),
        (limits.AIR_TARGET_MIN_C, "RIG_AIR_TARGET_MIN_CC", 100),
        (limits.AIR_TARGET_MAX_C, "RIG_AIR_TARGET_MAX_CC", 100),
        (limits.HOST_TIMEOUT_S, "RIG_HOST_TIMEOUT_MS", 1000),
        (limits.TC_MAX_JUMP_C, "RIG_TC_MAX_JUMP_CC", 100),
        (limits.VERIFY_HYST_C, "RIG_VERIFY_HYST_CC", 100),
        (limits.VERIFY_MAX_ERROR_C_S, "RIG_VERIFY_MAX_ERROR_CC_S", 100),
        (limits.VERIFY_GAIN_C, "RIG_VERIFY_GAIN_CC", 100),
        (limits.VERIFY_GAIN_TIME_S, "RIG_VERIFY_GAIN_TIME_MS", 1000),
        (limits.HOLD_HYST_C, "RIG_HOLD_HYST_CC", 100),
        (limits.HOLD_PERIOD_S, "RIG_HOLD_PERIOD_MS", 1000),
        (limits.STUCK_SETTLE_S, "RIG_STUCK_SETTLE_MS", 1000),
        (limits.STUCK_WINDOW_S, "RIG_STUCK_WINDOW_S", 1),
        (limits.STUCK_RISE_C, "RIG_STUCK_RISE_CC", 100),
        (limits.TEL_MIN_MS, "RIG_TEL_MIN_MS", 1),
        (limits.TEL_MAX_MS, "RIG_TEL_MAX_MS", 1),
        (limits.TEL_DEFAULT_MS, "RIG_TEL_DEFAULT_MS", 1),
        (limits.FAN_MAX_RPM, "RIG_FAN_MAX_RPM", 1),
        (limits.FAN_STALL_S, "RIG_FAN_STALL_MS", 1000),
        (limits.AIR_KP, "RIG_AIR_KP", 1),
        (limits.AIR_KI, "RIG_AIR_KI", 1),
        (limits.AIR_KD, "RIG_AIR_KD", 1),
        (limits.GAIN_SCALE, "RIG_GAIN_SCALE", 1),
        (limits.AIR_KP_MAX, "RIG_AIR_KP_MAX", 10),
        (limits.AIR_KI_MAX, "RIG_AIR_KI_MAX", 10),
        (limits.AIR_KD_MAX, "RIG_AIR_KD_MAX", 10),
        (frame.PROTO_VERSION, "RIG_PROTO_VERSION", 1),
    ],
)
def test_the_hosts_limits_are_the_firmwares(host: float, c_name: str, scale: int) -> None:
    assert round(host * scale) == c_defines("rig_config.h")[c_name]


def test_the_hosts_frame_limits_are_the_codecs() -> None:
    c_frame = c_defines("frame.h")
    assert (
        c_frame["FRAME_MAX_LEN"],
        c_frame["FRAME_MAX_ARGS"],
        c_frame["FRAME_MAX_TYPE_LEN"],
    ) == (frame.FRAME_MAX_LEN, frame.FRAME_MAX_ARGS, frame.FRAME_MAX_TYPE_LEN)
