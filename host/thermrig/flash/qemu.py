"""The emulated board: build the qemu_cortex_m3 image (`make firmware-qemu`) and restart the running
`thermrig sim --firmware zephyr` on it through its control socket, as a flashed MCU reboots."""

from __future__ import annotations

import json
import os
from pathlib import Path

from thermrig.config import sim_state_file
from thermrig.flash.base import Flasher, FlashError, run_tool, stamped_version
from thermrig.paths import REPO_ROOT
from thermrig.sim.control import request
from thermrig.sim.firmware.zephyr import zephyr_image

BUILD_DIR = REPO_ROOT / "build" / "zephyr" / "qemu_cortex_m3"


class QemuFlasher(Flasher):
    board = "qemu"

    def _sim(self) -> dict[str, str]:
        try:
            state = json.loads(sim_state_file().read_text())
            os.kill(int(state["pid"]), 0)
        except (OSError, ValueError, KeyError) as exc:
            raise FlashError("no emulated rig is running: start one with `thermrig sim --firmware zephyr`") from exc
        if state.get("firmware") != "zephyr":
            raise FlashError(
                f"the running simulated rig runs {state.get('firmware', 'rigsim')}, not the emulated board: "
                "restart it with `thermrig sim --firmware zephyr`"
            )
        return state

    def resolve_port(self, port: str | None) -> str:
        sim_port = self._sim()["port"]
        if port is not None and Path(port).resolve() != Path(sim_port).resolve():
            raise FlashError(f"{port} is not the running emulated rig's port ({sim_port})")
        return sim_port

    def steps(self, port: str) -> list[str]:
        return [
            f"build: make -C {REPO_ROOT} firmware-qemu",
            f"upload: restart the emulated rig on {port} with {zephyr_image()}",
        ]

    def build(self) -> str:
        run_tool(["make", "--no-print-directory", "-C", str(REPO_ROOT), "firmware-qemu"], "build", REPO_ROOT)
        return stamped_version(BUILD_DIR / "rig_version.h")

    def upload(self, port: str) -> None:
        reply = request(Path(self._sim()["control"]), {"flash": str(zephyr_image())}, timeout=60)
        if not reply.get("ok"):
            raise FlashError(f"upload failed: the emulated rig could not restart: {reply.get('error')}")
