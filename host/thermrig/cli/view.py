"""Rich renderings of the rig's state: the live telemetry table and the HELLO summary."""

from __future__ import annotations

from enum import IntFlag

from rich.console import Group
from rich.table import Table
from rich.text import Text

from thermrig.link.rig_link import RigLink
from thermrig.protocol.channels import ChannelKind
from thermrig.protocol.messages import RigInfo, Telemetry, flag_names


def info_table(info: RigInfo, port: str) -> Table:
    t = Table(title=f"rig on {port}", show_header=False)
    t.add_row("firmware", f"{info.firmware} {info.version}")
    t.add_row("protocol", str(info.proto))
    t.add_row("board", info.board)
    t.add_row("channels", ", ".join(f"{k}={v}" for k, v in info.channels.items()))
    return t


def _status(flags: IntFlag) -> Text:
    name = flag_names(flags)
    return Text(name, style="green" if name == "ok" else "bold red")


_UNITS = {
    ChannelKind.THERMOCOUPLE: ("°C", 2),
    ChannelKind.AMBIENT_T: ("°C", 2),
    ChannelKind.HUMIDITY: ("%RH", 1),
    ChannelKind.FAN_RPM: ("rpm", 0),
}


def telemetry_view(tel: Telemetry, link: RigLink, title: str = "") -> Group:
    ch = Table(title=title or f"rig {link.port}", expand=False)
    ch.add_column("channel")
    ch.add_column("value", justify="right")
    ch.add_column("status")
    for channel in tel.channels.channels:  # the rig's own map, in its order
        reading = tel.readings[channel.key]
        unit, digits = _UNITS[channel.kind]
        ch.add_row(channel.name, f"{reading.value:7.{digits}f} {unit}", _status(reading.status))

    act = Table(show_header=False, expand=False)
    heat = f"{tel.heater_pct:5.1f} % (limit {tel.heat_limit_pct:.0f} %)"
    target = f"air target {tel.air_target_c:.2f} °C" if tel.heat_enabled else "heater disabled"
    act.add_row("heater", heat, target)
    for key, pct in tel.fan_pct.items():
        act.add_row(key, f"{pct:5.1f} %", "")
    faults = Text(flag_names(tel.faults), style="green" if not tel.faults else "bold white on red")
    act.add_row("faults", faults, "SAFE STATE" if tel.safe_state else "")
    sync = link.sync.fit
    if sync is None:
        sync_text = "-"
    elif abs(sync.drift_ppm) > 1e4:  # an accelerated simulation: the MCU clock runs N x the host's
        sync_text = f"MCU clock {1 / sync.rate:.2f}x host, rtt p50 {sync.rtt_p50 * 1e3:.2f} ms"
    else:
        sync_text = f"drift {sync.drift_ppm:+.1f} ppm, rtt p50 {sync.rtt_p50 * 1e3:.2f} ms"
    stats = link.stats
    act.add_row(
        "link",
        f"uptime {tel.uptime_ms / 1000:.1f} s, frames {stats.frames}, lost {stats.lost_frames}",
        f"bad frames in {sum(stats.decode_errors.values())}, rig rx errors {tel.rx_errors}, sync {sync_text}",
    )
    return Group(ch, act)
