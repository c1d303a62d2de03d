"""The pins a built Zephyr image gives the rig and the pins its board uses for anything else, read from
the image's own devicetree (build/zephyr/<board>/zephyr/zephyr.dts) with Zephyr's dtlib."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from zephyr_boards import TOOLCHAINS

sys.path.insert(0, str(TOOLCHAINS / "zephyr" / "scripts" / "dts" / "python-devicetree" / "src"))
from devicetree import dtlib  # Zephyr's own devicetree parser, from the pinned tree

# STM32_PINMUX(port, line, mode) in zephyr/dt-bindings/pinctrl/stm32-pinctrl.h
PORT_SHIFT, LINE_SHIFT = 9, 5


@dataclass(frozen=True)
class PinUse:
    pin: str  # "PA5"
    owner: str  # the devicetree node (and property) that claims it


def _enabled(node: dtlib.Node) -> bool:
    while node is not None:
        status = node.props.get("status")
        if status is not None and status.to_string() not in ("okay", "ok"):
            return False
        node = node.parent
    return True


def _gpio_port(controller: dtlib.Node) -> str:
    for label in controller.labels:
        m = re.fullmatch(r"gpio([a-k])", label)
        if m:
            return m.group(1).upper()
    raise ValueError(f"{controller.path} is not an STM32 GPIO port")


def _specifiers(dt: dtlib.DT, prop: dtlib.Property, cells: str) -> list[tuple[dtlib.Node, list[int]]]:
    """A phandle-array (`<&ctrl a b>, <&ctrl c d>`) as (controller node, its argument cells)."""
    words = [int.from_bytes(prop.value[i : i + 4], "big") for i in range(0, len(prop.value), 4)]
    out = []
    while words:
        ctrl = dt.phandle2node[words[0]]
        n = ctrl.props[cells].to_num()
        out.append((ctrl, words[1 : 1 + n]))
        words = words[1 + n :]
    return out


def node_pins(dt: dtlib.DT, node: dtlib.Node) -> list[PinUse]:
    """The pins a node claims: its default pinctrl state and its `gpios` / `*-gpios` properties."""
    uses = []
    if "pinctrl-0" in node.props:
        for state in node.props["pinctrl-0"].to_nodes():
            mux = state.props["pinmux"].to_num()
            pin = f"P{chr(ord('A') + ((mux >> PORT_SHIFT) & 0xF))}{(mux >> LINE_SHIFT) & 0xF}"
            uses.append(PinUse(pin, f"{node.path} pinctrl {state.name}"))
    for name, prop in node.props.items():
        if name == "gpios" or name.endswith("-gpios"):
            for i, (ctrl, args) in enumerate(_specifiers(dt, prop, "#gpio-cells")):
                uses.append(PinUse(f"P{_gpio_port(ctrl)}{args[0]}", f"{node.path} {name}[{i}]"))
    return uses


def rig_nodes(dt: dtlib.DT) -> list[dtlib.Node]:
    """The nodes the firmware uses (firmware/zephyr/src): its serial link, the zephyr,user node and its
    PWMs, and the buses of the thermocouples and the ambient sensor."""
    user = dt.get_node("/zephyr,user")
    pwms = [ctrl for ctrl, _ in _specifiers(dt, user.props["pwms"], "#pwm-cells")]
    serial = dt.get_node("/chosen").props["thermrig,serial"].to_path()
    buses = [dt.label2node[label].parent for label in ("tc0", "tc1", "tc2", "tc3", "ambient")]
    unique: dict[str, dtlib.Node] = {}
    for node in [serial, user, *pwms, *buses]:
        unique.setdefault(node.path, node)
    return list(unique.values())


def load(board_build: Path) -> dtlib.DT:
    return dtlib.DT(str(board_build / "zephyr" / "zephyr.dts"))


def rig_pins(dt: dtlib.DT) -> list[PinUse]:
    return [use for node in rig_nodes(dt) for use in node_pins(dt, node)]


def other_pins(dt: dtlib.DT) -> list[PinUse]:
    """Pins every other enabled node claims (LEDs, buttons, peripherals the board turns on)."""
    mine = {node.path for node in rig_nodes(dt)}
    return [
        use
        for node in dt.node_iter()
        if node.path not in mine and _enabled(node) and "pinmux" not in node.props
        for use in node_pins(dt, node)
    ]
