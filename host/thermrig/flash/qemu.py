"""The emulated board: build the qemu_cortex_m3 image (`make firmware-qemu`) and restart the running
`thermrig sim --firmware zephyr` on it through its control socket, as a flashed MCU reboots."""

from __future__ import annotations

from pathlib import Path

from thermrig.flash.flasher import Flasher, FlashError, built_version, run_tool
from thermrig.flash.platformio import source_checkout
from thermrig.settings import RunningSim, find_tool, running_sim, zephyr_qemu_build


class QemuFlasher(Flasher):
    board = "qemu"

    def _sim(self) -> RunningSim:
        sim = running_sim()
        if sim is None:
            raise FlashError("no emulated rig is running: start one with `thermrig sim --firmware zephyr`")
        if sim.firmware != "zephyr":
            raise FlashError(
                f"the running simulated rig runs {sim.firmware}, not the emulated board: "
                "restart it with `thermrig sim --firmware zephyr`"
            )
        return sim

    def resolve_port(self, port: str | None) -> str:
        sim_port = self._sim().port
        if port is not None and Path(port).resolve() != Path(sim_port).resolve():
            raise FlashError(f"{port} is not the running emulated rig's port ({sim_port})")
        return sim_port

    def steps(self, port: str) -> list[str]:
        return [
            f"build: make -C {source_checkout()} firmware-qemu",
            f"upload: restart the emulated rig on {port} with {find_tool('zephyr-elf')}",
        ]

    def build(self) -> str:
        root = source_checkout()
        run_tool(["make", "--no-print-directory", "-C", str(root), "firmware-qemu"], "build", root)
        # What the build made, not THERMRIG_ZEPHYR_ELF (the upload's image, which may be another).
        return built_version(zephyr_qemu_build() / "zephyr" / "zephyr.elf")

    def upload(self, port: str) -> None:
        reply = self._sim().request({"flash": str(find_tool("zephyr-elf"))}, timeout=60)
        if not reply.get("ok"):
            raise FlashError(f"upload failed: the emulated rig could not restart: {reply.get('error')}")
