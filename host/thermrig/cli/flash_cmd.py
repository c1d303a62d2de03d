"""`thermrig flash`: build the firmware for a board (or take a release's image), upload it, wait for the
rig, check its version."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from thermrig.cli.user_errors import user_errors
from thermrig.flash import BOARDS, IMAGE_BOARDS, flasher, image_flasher
from thermrig.flash.procedure import flash as run_flash
from thermrig.flash.release import image_to_flash


@user_errors
def flash(
    board: Annotated[
        str | None,
        typer.Option(
            help=f"Board: {', '.join(BOARDS)} (qemu: the running `thermrig sim --firmware zephyr`). "
            "Default: nucleo_f411re; with --lab, the place's board tag."
        ),
    ] = None,
    port: Annotated[
        str | None,
        typer.Option(
            "--port", "-p", help="Serial port the rig answers on after flashing (default: as `thermrig rig` finds it)."
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds the rig may take to answer after the upload.")] = 20.0,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would be built and uploaded, do nothing.")
    ] = False,
    lab: Annotated[
        str | None,
        typer.Option("--lab", help="Flash a place of this labgrid coordinator (HOST:PORT) instead: see --place."),
    ] = None,
    place: Annotated[str | None, typer.Option("--place", help="With --lab: the place to flash.")] = None,
    image: Annotated[
        Path | None,
        typer.Option(
            help="Upload this image, not a build: a release's file (a Nucleo ELF, the Pico's folder), checked "
            "against the manifest beside it, or any ELF carrying a thermrig version stamp.",
        ),
    ] = None,
    release: Annotated[
        Path | None,
        typer.Option(
            help="Upload the --board's image of this firmware release (the folder `make dist` writes as "
            "dist/firmware, with its manifest.json), not a build.",
        ),
    ] = None,
    ssh_key: Annotated[str, typer.Option("--ssh-key", help="With --lab: the key that logs in to the test PC.")] = "",
) -> None:
    """Build the firmware of this checkout for a board, upload it, and check the rig reports that version.

    Nucleo boards upload with PlatformIO over their ST-LINK; `--board qemu` restarts the running
    emulated rig on the new image. The rig is left in its safe state whatever happens.

    With --release DIR (or --image FILE) nothing is built and no checkout is needed: the release's
    files are checked against its manifest (SHA-256, size), uploaded as they are (OpenOCD over a
    Nucleo's ST-LINK, mpremote to a Pico), and HELLO must report the manifest's version.

    With --lab and --place, the place is acquired, the image uploaded on its test PC over SSH (OpenOCD
    over a Nucleo's ST-LINK, mpremote over a Pico's USB), HELLO's version checked through the place's
    serial port, and the place released (docs/lab.md).
    """
    console = Console()
    if image is not None and release is not None:
        raise typer.BadParameter("--image or --release, not both", param_hint="--image")
    if lab is not None or place is not None:
        _flash_place(console, lab, place, board, image, release, ssh_key, timeout)
        return
    if image is not None or release is not None:
        if board is not None and board not in IMAGE_BOARDS:
            raise typer.BadParameter(f"images are flashed to {', '.join(IMAGE_BOARDS)}", param_hint="--board")
        f = image_flasher(*image_to_flash(board, image, release))
    else:
        f = flasher(board or "nucleo_f411re")
    target = f.resolve_port(port)
    if dry_run:
        for step in f.steps(target):
            console.print(step, soft_wrap=True, highlight=False)
        expected = "the image's version" if image is not None or release is not None else "the version just built"
        console.print(f"check: HELLO on {target} reports {expected}", soft_wrap=True, highlight=False)
        return
    with console.status("flashing") as status:
        info = run_flash(f, target, lambda text: status.update(text), timeout)
    console.print(
        f"[green]flashed[/]: {info.firmware} {info.version} on {info.board}, {target}", soft_wrap=True, highlight=False
    )


def _flash_place(
    console: Console,
    lab: str | None,
    place: str | None,
    board: str | None,
    image: Path | None,
    release: Path | None,
    key: str,
    timeout: float,
) -> None:
    if not lab or not place:
        raise typer.BadParameter("--lab and --place go together", param_hint="--lab")
    if board is not None:
        raise typer.BadParameter("with --lab the board is the place's board tag", param_hint="--board")
    from thermrig.cli.lab_common import labgrid_modules, named_stale

    labgrid_modules()
    from thermrig.lab.flash import flash_place

    with console.status("flashing") as status:
        held, info = flash_place(
            lab, place, image, key, lambda text: status.update(text), timeout, named_stale, release=release
        )
    test_pc = held.ssh.host if held.ssh else "-"
    console.print(
        f"[green]flashed[/]: {info.firmware} {info.version} on place {held.name} ({info.board}, test PC {test_pc}); "
        "released",
        soft_wrap=True,
        highlight=False,
    )
