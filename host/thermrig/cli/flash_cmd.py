"""`thermrig flash`: build the firmware for a board, upload it, wait for the rig, check its version."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from thermrig.cli.errors import user_errors
from thermrig.flash import BOARDS, flasher
from thermrig.flash.runner import flash as run_flash


@user_errors
def flash(
    board: Annotated[
        str, typer.Option(help=f"Board: {', '.join(BOARDS)} (qemu: the running `thermrig sim --firmware zephyr`).")
    ] = "nucleo_f411re",
    port: Annotated[
        str | None,
        typer.Option(help="Serial port the rig answers on after flashing (default: as `thermrig rig` finds it)."),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds the rig may take to answer after the upload.")] = 20.0,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would be built and uploaded, do nothing.")
    ] = False,
) -> None:
    """Build the firmware of this checkout for a board, upload it, and check the rig reports that version.

    Nucleo boards upload with PlatformIO over their ST-LINK; `--board qemu` restarts the running
    emulated rig on the new image. The rig is left in its safe state whatever happens.
    """
    console = Console()
    f = flasher(board)
    target = f.resolve_port(port)
    if dry_run:
        for step in f.steps(target):
            console.print(step, soft_wrap=True, highlight=False)
        console.print(f"check: HELLO on {target} reports the version just built", soft_wrap=True, highlight=False)
        return
    with console.status("flashing") as status:
        info = run_flash(f, target, lambda text: status.update(text), timeout)
    console.print(
        f"[green]flashed[/]: {info.firmware} {info.version} on {info.board}, {target}", soft_wrap=True, highlight=False
    )
