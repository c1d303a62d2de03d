#!/usr/bin/env bash
# Build the rig's Zephyr app (zephyr/ + firmware/) for each board given, against the pinned Zephyr 3.5.0
# with Debian's arm-none-eabi-gcc, plain CMake + Ninja, into build/zephyr/<board>/ (make firmware). The
# Zephyr tree comes from the pinned archives or PlatformIO's framework-zephyr (scripts/zephyr_tree.sh).
#
#   scripts/build_zephyr.sh nucleo_f411re nucleo_f446re
#   scripts/build_zephyr.sh nucleo_f411re:emulator
#
# BOARD:VARIANT builds the board's image with firmware/zephyr/boards/BOARD_VARIANT.conf on top of the
# app's config (the overlay stays the board's), into build/zephyr/BOARD_VARIANT/.
#
# Each board's configure output is kept in build/zephyr/<board>/configure.log and the last build's in
# build.log (the tests read both). Configure runs again only when the app's CMake, Kconfig or
# devicetree inputs changed since the last one; Ninja rebuilds what changed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="$root/.venv/bin/python"
overlays="$root/firmware/zephyr/boards"

if [ $# -eq 0 ]; then
  echo "usage: scripts/build_zephyr.sh BOARD..." >&2
  exit 2
fi
mapfile -t tree < <(bash "$root/scripts/zephyr_tree.sh"; echo "rc=$?")
if [ ${#tree[@]} -ne 4 ] || [ "${tree[3]}" != rc=0 ]; then
  exit 1  # zephyr_tree.sh said why, in one line
fi
zephyr_base="${tree[0]}" hal_stm32="${tree[1]}" cmsis="${tree[2]}"
if [ ! -x "$python" ]; then
  echo "firmware: no venv at $root/.venv (the Zephyr build imports its packages): run 'make venv'." >&2
  exit 1
fi
known="$(cd "$overlays" && ls -- *.overlay | sed 's/\.overlay$//' | tr '\n' ' ')"
for target in "$@"; do
  board="${target%%:*}"
  if [ "$target" != "$board" ] && [ ! -f "$overlays/${board}_${target#*:}.conf" ]; then
    echo "firmware: unknown variant '$target': there is no firmware/zephyr/boards/${board}_${target#*:}.conf." >&2
    exit 1
  fi
  if [ ! -f "$overlays/$board.overlay" ] || ! compgen -G "$zephyr_base/boards/*/*/$board.dts" >/dev/null; then
    echo "firmware: unknown board '$board': the boards with an overlay are ${known% }" \
      "(a new board needs firmware/zephyr/boards/$board.overlay, see docs/firmware.md)." >&2
    exit 1
  fi
done

export ZEPHYR_BASE="$zephyr_base" ZEPHYR_TOOLCHAIN_VARIANT=gnuarmemb GNUARMEMB_TOOLCHAIN_PATH=/usr
# Zephyr asks git for its version; the unpacked tree is not a repository, so say it (no warning).
version="$(awk '/^VERSION_MAJOR/{a=$3} /^VERSION_MINOR/{b=$3} /^PATCHLEVEL/{c=$3} END{print "v" a "." b "." c}' \
  "$ZEPHYR_BASE/VERSION")"
for target in "$@"; do
  board="${target%%:*}" name="${target/:/_}" variant=()
  if [ "$target" != "$board" ]; then
    variant=(-DEXTRA_CONF_FILE="$overlays/$name.conf")
  fi
  out="${THERMRIG_ZEPHYR_OUT:-$root/build/zephyr}/$name"
  mkdir -p "$out"
  # THERMRIG_ZEPHYR_ARGS: extra CMake definitions for a variant of a board's image, e.g. the board build
  # with coverage (make coverage) or with a miswiring overlay (the bring-up tests), each in its own
  # THERMRIG_ZEPHYR_OUT. Other arguments than last time's: configure afresh.
  args="${THERMRIG_ZEPHYR_ARGS:-}"
  stale=""
  if [ "$(cat "$out/zephyr-args" 2>/dev/null)" != "$args" ]; then
    rm -rf "$out/CMakeCache.txt" "$out/CMakeFiles" "$out/configure.log"
  fi
  if [ -f "$out/build.ninja" ] && [ -f "$out/configure.log" ]; then
    stale="$(find "$root/zephyr" "$root/firmware/zephyr/boards" "$root/firmware/zephyr/dts" \
      -newer "$out/configure.log" -print -quit)"
  else
    stale=yes
  fi
  # Configured against another Zephyr tree (the archives' or PlatformIO's): configure afresh.
  if [ "$(cat "$out/zephyr-tree" 2>/dev/null)" != "$zephyr_base" ]; then
    stale=yes
    rm -rf "$out/CMakeCache.txt" "$out/CMakeFiles"
  fi
  if [ -n "$stale" ]; then
    echo "firmware: $name: configure"
    if ! cmake -G Ninja -S "$root/zephyr" -B "$out" -DBOARD="$board" "${variant[@]}" -DPython3_EXECUTABLE="$python" \
      -DZEPHYR_MODULES="$hal_stm32;$cmsis" -DBUILD_VERSION="$version" \
      -DUSER_CACHE_DIR="$root/build/zephyr/.cache" $args >"$out/configure.log" 2>&1; then
      tail -n 30 "$out/configure.log" >&2
      rm -f "$out/configure.log"
      echo "firmware: $name: configure failed (log above)." >&2
      exit 1
    fi
    echo "$zephyr_base" >"$out/zephyr-tree"
    echo "$args" >"$out/zephyr-args"
  fi
  echo "firmware: $name: build"
  if ! ninja -C "$out" >"$out/build.log" 2>&1; then
    grep -E -B2 -A6 'error|Error' "$out/build.log" | head -n 60 >&2 || tail -n 30 "$out/build.log" >&2
    echo "firmware: $name: build failed (whole log: $out/build.log)." >&2
    exit 1
  fi
  echo "firmware: $name: $out/zephyr/zephyr.elf"
done
