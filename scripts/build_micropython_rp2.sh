#!/usr/bin/env bash
# Build stock MicroPython v1.28.0 for the Raspberry Pi Pico (rp2 port, BOARD=RPI_PICO), unmodified and
# offline, from the pinned archive micropython-1.28.0-rp2.tar.xz (make firmware-pico). The archive comes
# from THERMRIG_TOOLCHAINS (default ../shared/toolchains), unpacked and checked by
# scripts/setup_toolchains.sh into build/toolchains/. A lab with internet access flashes the official
# v1.28.0 uf2 instead (docs/micropython.md).
#
# Output, built once and kept (nothing is rebuilt while it exists; `rm -rf build/micropython-rp2` to
# build again): build/micropython-rp2/firmware.uf2, firmware.elf, and rp2040-bootrom-b1.bin (the RP2040's
# mask ROM that the emulator boots from). Logs: build/micropython-rp2/*.log.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/build/micropython-rp2"
tools="$root/build/toolchains"
mp="$tools/micropython-1.28.0"

if [ -f "$out/firmware.uf2" ] && [ -f "$out/firmware.elf" ] && [ -f "$out/rp2040-bootrom-b1.bin" ]; then
  echo "firmware-pico: $out/firmware.uf2 (built; rm -rf $out to build again)"
  exit 0
fi
bash "$root/scripts/setup_toolchains.sh" || exit 1
if [ ! -d "$mp/ports/rp2" ] || [ ! -d "$tools/picotool-2.2.0" ] || [ ! -f "$tools/rp2040-bootrom-b1.bin" ]; then
  echo "firmware-pico: no MicroPython v1.28.0 rp2 sources in $tools: the toolchain archives lack" \
    "micropython-1.28.0-rp2.tar.xz (copy it from ../shared/toolchains, or flash the official v1.28.0 uf2, docs/micropython.md)." >&2
  exit 1
fi
for cmd in arm-none-eabi-gcc cmake make g++; do
  command -v "$cmd" >/dev/null || { echo "firmware-pico: $cmd is missing: run 'make setup'." >&2; exit 1; }
done
mkdir -p "$out"
jobs="${THERMRIG_JOBS:-2}"
step() {  # step NAME COMMAND...: run it with its output in NAME.log, the log's tail on failure
  local name="$1"; shift
  local begun; begun=$(date +%s)
  if ! "$@" >"$out/$name.log" 2>&1; then
    tail -n 30 "$out/$name.log" >&2
    echo "firmware-pico: $name failed (whole log: $out/$name.log)." >&2
    exit 1
  fi
  echo "firmware-pico: $name took $(( $(date +%s) - begun )) s"
}
# picotool: pico-sdk 2.x writes the uf2 with it and would clone it from GitHub when none is found.
if [ ! -f "$out/picotool/picotool/picotoolConfig.cmake" ]; then
  step picotool-configure cmake -S "$tools/picotool-2.2.0" -B "$out/picotool-build" \
    -DPICO_SDK_PATH="$mp/lib/pico-sdk" -DPICOTOOL_NO_LIBUSB=1 -DPICOTOOL_FLAT_INSTALL=1 \
    -DCMAKE_INSTALL_PREFIX="$out/picotool"
  step picotool make -C "$out/picotool-build" -j"$jobs" install
fi
step mpy-cross make -C "$mp/mpy-cross" -j"$jobs"
# GIT_CEILING_DIRECTORIES: the version string comes from py/mpconfig.h ("v1.28.0"), not from this
# project's git tag, which `git describe` would find above the unpacked tree.
step firmware env PICOTOOL_FETCH_FROM_GIT_PATH="$out/picotool" GIT_CEILING_DIRECTORIES="$tools" \
  make -C "$mp/ports/rp2" BOARD=RPI_PICO BUILD="$out/build-RPI_PICO" -j"$jobs"
cp "$out/build-RPI_PICO/firmware.elf" "$out/firmware.elf"
cp "$tools/rp2040-bootrom-b1.bin" "$out/rp2040-bootrom-b1.bin"
cp "$out/build-RPI_PICO/firmware.uf2" "$out/firmware.uf2.tmp"
mv "$out/firmware.uf2.tmp" "$out/firmware.uf2"
echo "firmware-pico: $out/firmware.uf2"
