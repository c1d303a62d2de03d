"""Firmware release files: what `make dist` writes (scripts/release_files.py: each Nucleo's ELF and BIN,
the Pico's firmware compiled by the real mpy-cross, the manifest), and `thermrig flash --release` /
`--image` uploading them with no build. OpenOCD is the only stand-in (a recording fake on PATH: there is
no board); the rig's serial side is a simulated rig, whose HELLO the flash checks against the manifest."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from firmware_release import BOARDS, write_release

from thermrig.firmware_identity import checkout_version
from thermrig.flash.flasher import FlashError
from thermrig.flash.release import MANIFEST, image_to_flash
from thermrig.link.rig_link import RigLink
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

pytestmark = pytest.mark.timeout(600)  # four `thermrig flash` runs

REPO = Path(__file__).resolve().parents[2]
OLD = "0.0.9+gdeadbee"


def test_the_release_files_and_their_manifest(tmp_path: Path) -> None:
    out = write_release(tmp_path, "0.1.0+g1234567")
    manifest = json.loads((out / MANIFEST).read_text())["files"]
    assert {f["board"] for f in manifest} == {*BOARDS, "pico"}
    for f in manifest:
        data = (out / f["path"]).read_bytes()
        assert f["size"] == len(data) and f["sha256"] == hashlib.sha256(data).hexdigest()
    nucleo = sorted(f["path"] for f in manifest if f["board"] == "nucleo_f446re")
    assert nucleo == ["nucleo_f446re/thermrig-nucleo_f446re.bin", "nucleo_f446re/thermrig-nucleo_f446re.elf"]
    assert {f["version"] for f in manifest if f["board"] in BOARDS} == {"0.1.0+g1234567"}
    assert {f["revision"] for f in manifest if f["board"] in BOARDS} == {"1234567"}
    pico = {f["path"]: f for f in manifest if f["board"] == "pico"}
    source = REPO / "firmware" / "micropython"
    assert (out / "pico" / "main.py").read_bytes() == (source / "main.py").read_bytes()  # booted as source
    assert pico["pico/bootcheck.mpy"]["kind"] == "mpy" and "pico/thermrig_fw/rig.mpy" in pico
    assert not [p for p in pico if "hal_sim" in p or "sim_main" in p or (p.endswith(".py") and p != "pico/main.py")]
    assert all((out / p).read_bytes()[:1] == b"M" for p in pico if p.endswith(".mpy"))  # mpy-cross's header
    assert {f["version"] for f in pico.values()} == {checkout_version()}
    assert checkout_version().encode() in (out / "pico" / "thermrig_fw" / "version.mpy").read_bytes()


def test_the_picos_files_are_the_same_bytes_wherever_they_are_built(tmp_path: Path) -> None:
    """Two releases of one checkout, staged in different temporary folders: the same Pico files, byte for
    byte (a littlefs image of them, and so the emulated Pico's boot, is the same too). A traceback names a
    module by its path on the board."""
    files = []
    for name in ("one", "two"):
        out = write_release(tmp_path, "0.1.0+g1234567", name)
        manifest = json.loads((out / MANIFEST).read_text())["files"]
        files.append({f["path"]: f["sha256"] for f in manifest if f["board"] == "pico"})
    assert files[0] == files[1] and len(files[0]) > 5
    rig = (tmp_path / "one" / "pico" / "thermrig_fw" / "rig.mpy").read_bytes()
    assert b"thermrig_fw/rig.py" in rig and b"/tmp" not in rig


FAKE_OPENOCD = """#!/bin/sh
# Stands in for OpenOCD (no board here): records its arguments; fails when told.
echo "$*" >> "$FAKE_OPENOCD_LOG"
if [ -n "$FAKE_OPENOCD_FAILS" ]; then echo "Error: open failed"; exit 1; fi
"""


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "thermrig", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, env={**env, "COLUMNS": "200"})


def one_line_error(r: subprocess.CompletedProcess[str], *words: str) -> None:
    assert r.returncode in (1, 2), r.stdout + r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    for word in words:
        assert word in r.stderr, r.stderr


@pytest.fixture
def openocd_env(tmp_path: Path, isolated_env: dict[str, str]) -> dict[str, str]:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "openocd").write_text(FAKE_OPENOCD)
    (tools / "openocd").chmod(0o755 | stat.S_IEXEC)
    log = tmp_path / "openocd.log"
    return {**isolated_env, "PATH": f"{tools}:{os.environ['PATH']}", "FAKE_OPENOCD_LOG": str(log)}


def test_flash_a_release_to_a_nucleo_checks_its_files_and_hellos_version(
    openocd_env: dict[str, str], tmp_path: Path
) -> None:
    log = Path(openocd_env["FAKE_OPENOCD_LOG"])
    with SimulatedRig(SimConfig()) as sim:
        with RigLink(sim.port) as link:
            running = link.hello().version  # the release made of what the stand-in board will report
        release = write_release(tmp_path, running)
        elf = release / "nucleo_f446re" / "thermrig-nucleo_f446re.elf"
        r = cli("flash", "--release", str(release), "--board", "nucleo_f446re", "--port", sim.port, env=openocd_env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"flashed: thermrig-core {running}" in r.stdout
        program = f"-f interface/stlink.cfg -f target/stm32f4x.cfg -c program {elf.name} verify reset exit"
        assert log.read_text().splitlines() == [program]

        dry = cli("flash", "--image", str(elf), "--port", sim.port, "--dry-run", env=openocd_env)
        assert dry.returncode == 0 and program in dry.stdout and running in dry.stdout, dry.stderr
        assert len(log.read_text().splitlines()) == 1  # the dry run uploaded nothing

        other = write_release(tmp_path, OLD, "other")
        r = cli("flash", "--release", str(other), "--board", "nucleo_f411re", "--port", sim.port, env=openocd_env)
        one_line_error(r, "version differs", OLD, running)

        r = cli("flash", "--image", str(elf), "--port", sim.port, env={**openocd_env, "FAKE_OPENOCD_FAILS": "1"})
        one_line_error(r, "upload failed", "Error: open failed")
        with RigLink(sim.port) as link:
            assert link.hello().version == running  # the stand-in board runs on, safe


def test_a_release_is_checked_before_anything_is_uploaded(tmp_path: Path) -> None:
    release = write_release(tmp_path, "0.1.0+g1234567")
    elf = release / "nucleo_f446re" / "thermrig-nucleo_f446re.elf"
    assert image_to_flash(None, elf, None) == ("nucleo_f446re", elf, "0.1.0+g1234567")  # board from the manifest
    with pytest.raises(FlashError, match="is the nucleo_f446re firmware of its release, not the nucleo_f411re's"):
        image_to_flash("nucleo_f411re", elf, None)
    with pytest.raises(
        FlashError, match=r"--release needs --board \(the release has: nucleo_f411re, nucleo_f446re, pico\)"
    ):
        image_to_flash(None, None, release)
    with pytest.raises(FlashError, match=r"not a firmware release: no manifest\.json"):
        image_to_flash("pico", None, tmp_path)
    elf.write_bytes(elf.read_bytes()[:-1])  # a damaged download
    with pytest.raises(FlashError, match=f"{elf.name} differs from its manifest"):
        image_to_flash("nucleo_f446re", None, release)
    (release / "pico" / "thermrig_fw" / "rig.mpy").unlink()
    with pytest.raises(FlashError, match=r"rig\.mpy is missing from the release"):
        image_to_flash("pico", None, release)
