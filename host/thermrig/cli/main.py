"""thermrig: hardware-in-the-loop rig for SSD thermal-throttling experiments."""

from __future__ import annotations

import logging

import typer

from thermrig.cli import calibrate_cmd, campaign_cmds, db_cmds, lab_cmd, rig_cmds, sim_cmd, throttle_cmd
from thermrig.cli.analyze_cmd import analyze
from thermrig.cli.demo_cmd import demo
from thermrig.cli.examples_cmd import examples
from thermrig.cli.flash_cmd import flash
from thermrig.cli.grafana_cmd import grafana
from thermrig.cli.report_cmd import report
from thermrig.firmware_identity import host_version

app = typer.Typer(
    rich_markup_mode=None,
    help="thermrig: control the thermal rig, run the simulated rig, and record SSD throttling experiments.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"max_content_width": 1000},  # help fills the terminal, however wide
)
app.add_typer(rig_cmds.app, name="rig")
app.add_typer(sim_cmd.app, name="sim")
app.add_typer(db_cmds.app, name="db")
app.add_typer(calibrate_cmd.app, name="calibrate")
app.add_typer(lab_cmd.app, name="lab")
app.command("query")(db_cmds.query)
app.command("plan")(campaign_cmds.plan)
app.command("run")(campaign_cmds.run)
app.command("demo")(demo)
app.command("examples")(examples)
app.command("throttle")(throttle_cmd.throttle)
app.command("flash")(flash)
app.command("analyze")(analyze)
app.command("report")(report)
app.command("grafana")(grafana)


class _Echo(logging.Handler):
    """Log records shown to the user on stderr as they happen (typer.echo: the stream of the moment)."""

    def emit(self, record: logging.LogRecord) -> None:
        typer.echo(self.format(record), err=True)


def show_link_notes() -> None:
    """What the link tells the user at connection (the stored air-loop gains it sent), on stderr."""
    log = logging.getLogger("thermrig.link.rig_link")
    log.setLevel(logging.INFO)
    if not any(isinstance(h, _Echo) for h in log.handlers):
        log.addHandler(_Echo())


def _version(value: bool) -> None:
    if value:
        typer.echo(f"thermrig {host_version()}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version,
        is_eager=True,
        help="Show the version and the revision it was built from.",
    ),
) -> None:
    """thermrig command line."""
    show_link_notes()
