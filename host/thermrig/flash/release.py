"""Firmware release files (what `make dist` writes into dist/firmware): each board's images with a
manifest (manifest.json) naming, for every file, its board, kind, the version HELLO reports after it is
flashed, the git revision, SHA-256 and size. Flashing from a release needs no build tree: the files are
checked against the manifest, uploaded as they are, and HELLO's version checked against it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from thermrig.firmware_identity import FirmwareVersion
from thermrig.flash.flasher import FlashError, built_version

MANIFEST = "manifest.json"
PICO_FOLDER = "pico"  # the Pico's files, as they go onto its filesystem


@dataclass(frozen=True)
class ReleaseFile:
    board: str
    path: str  # relative to the release folder
    kind: str  # elf, bin (Zephyr images), mpy, py (the MicroPython firmware)
    version: str  # the stamp HELLO reports once it runs
    revision: str | None
    sha256: str
    size: int

    @classmethod
    def of(cls, folder: Path, path: Path, board: str, version: str) -> ReleaseFile:
        data = path.read_bytes()
        kind = path.suffix.lstrip(".")
        revision = FirmwareVersion.parse(version).revision
        digest = hashlib.sha256(data).hexdigest()
        return cls(board, path.relative_to(folder).as_posix(), kind, version, revision, digest, len(data))


@dataclass(frozen=True)
class Release:
    folder: Path
    files: tuple[ReleaseFile, ...]

    def write(self) -> Path:
        path = self.folder / MANIFEST
        entries = [asdict(f) for f in self.files]
        path.write_text(json.dumps({"format": 1, "files": entries}, indent=2) + "\n")
        return path

    @classmethod
    def read(cls, folder: Path) -> Release:
        path = folder / MANIFEST
        try:
            entries = json.loads(path.read_text())["files"]
            return cls(folder, tuple(ReleaseFile(**e) for e in entries))
        except FileNotFoundError as exc:
            raise FlashError(
                f"{folder} is not a firmware release: no {MANIFEST} there (`make dist` writes one)"
            ) from exc
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise FlashError(f"{path}: not a thermrig firmware manifest ({exc})") from exc

    @classmethod
    def holding(cls, image: Path) -> tuple[Release, str] | None:
        """The release an image (a file, or the Pico's folder) belongs to, and the image's board; None
        when no manifest beside it or above it names it."""
        image = image.resolve()
        for folder in image.parents:
            if (folder / MANIFEST).is_file():
                release = cls.read(folder)
                inside = image.relative_to(folder).as_posix()
                boards = {f.board for f in release.files if f.path == inside or f.path.startswith(inside + "/")}
                return (release, boards.pop()) if len(boards) == 1 else None
        return None

    def boards(self) -> list[str]:
        return sorted({f.board for f in self.files})

    def image(self, board: str) -> tuple[Path, str]:
        """What is uploaded to the board (a Nucleo's ELF, the Pico's folder) and the version it reports,
        every file of it checked against the manifest."""
        mine = [f for f in self.files if f.board == board]
        if not mine:
            raise FlashError(
                f"the release in {self.folder} has no firmware for {board} (it has: {', '.join(self.boards())})"
            )
        for f in mine:
            self.check(f)
        versions = {f.version for f in mine}
        if len(versions) != 1:
            raise FlashError(f"{self.folder / MANIFEST}: {board}'s files name different versions: {sorted(versions)}")
        elf = [f for f in mine if f.kind == "elf"]
        if elf:
            return self.folder / elf[0].path, elf[0].version
        return self.folder / PICO_FOLDER, mine[0].version

    def check(self, f: ReleaseFile) -> None:
        path = self.folder / f.path
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise FlashError(f"{path} is missing from the release ({exc.strerror})") from exc
        if len(data) != f.size or hashlib.sha256(data).hexdigest() != f.sha256:
            raise FlashError(f"{path} differs from its manifest (size or SHA-256): a damaged or changed release file")


def image_to_flash(board: str | None, image: Path | None, release: Path | None) -> tuple[str, Path, str]:
    """(board, what to upload, the version HELLO must report) for `--image FILE` or `--release DIR`: from
    the manifest (its files checked), or for an image outside a release, the version it carries (or,
    carrying none, this checkout's or installation's)."""
    if release is not None:
        if board is None:
            raise FlashError(f"--release needs --board (the release has: {', '.join(Release.read(release).boards())})")
        path, version = Release.read(release).image(board)
        return board, path, version
    assert image is not None
    if not image.exists():
        raise FlashError(f"{image} does not exist")
    held = Release.holding(image)
    if held is not None:
        found, its_board = held
        if board is not None and board != its_board:
            raise FlashError(f"{image} is the {its_board} firmware of its release, not the {board}'s")
        path, version = found.image(its_board)
        return its_board, path, version
    if not image.is_file():
        raise FlashError(f"{image} is a folder that no release manifest names: --image takes a release's file")
    return board or "nucleo_f411re", image, built_version(image)
