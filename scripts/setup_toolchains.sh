#!/usr/bin/env bash
# Unpack the pinned Zephyr 3.5.0, PlatformIO ststm32 17.2.0 and MicroPython v1.28.0 rp2 archives
# (checksums verified) into build/toolchains/, once. Offline machines only: with internet access, west or
# PlatformIO fetch the same versions, a Pico takes the official MicroPython uf2, and nothing here is needed.
#
#   scripts/setup_toolchains.sh            unpack (no-op when already done)
#   THERMRIG_TOOLCHAINS=DIR                where the archives are (default: ../shared/toolchains)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="${THERMRIG_TOOLCHAINS:-$root/../shared/toolchains}"
dest="$root/build/toolchains"
stamp="$dest/.unpacked"

unpacked() {
  [ -f "$stamp" ] && [ -d "$dest/zephyr-3.5.0/zephyr" ] && [ -d "$dest/platform-ststm32-17.2.0" ] \
    && { [ ! -f "$src/micropython-1.28.0-rp2.tar.xz" ] || [ -d "$dest/micropython-1.28.0" ]; }
}

if [ ! -f "$src/SHA256SUMS" ]; then
  # Unpacked earlier: the archives need not stay.
  unpacked && exit 0
  echo "setup: the pinned toolchain archives are not at $src: set THERMRIG_TOOLCHAINS to their folder, or on a machine with internet access build with PlatformIO or west (docs/firmware.md)." >&2
  exit 1
fi
# Checked every time (20 ms), so archives that went bad are named even when an earlier unpack exists.
if ! (cd "$src" && sha256sum --quiet -c SHA256SUMS) >/dev/null 2>&1; then
  echo "setup: an archive in $src is missing or does not match its SHA256SUMS (corrupt or replaced): copy the archives again." >&2
  exit 1
fi
# The stamp holds the checksums unpacked, so new archives are unpacked again.
if unpacked && cmp -s "$stamp" "$src/SHA256SUMS"; then
  exit 0
fi
echo "setup: unpacking the pinned toolchain archives into build/toolchains (once)"
rm -rf "$dest.tmp"
mkdir -p "$dest.tmp"
for archive in "$src"/*.tar.xz; do
  tar -xJf "$archive" -C "$dest.tmp"
done
rm -rf "$dest"
mv "$dest.tmp" "$dest"
cp "$src/SHA256SUMS" "$stamp"
