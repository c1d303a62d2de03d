#!/usr/bin/env bash
# Where the pinned Zephyr 3.5.0 tree comes from, for the CMake builds (scripts/build_zephyr.sh). Prints
# three lines: the Zephyr base, the hal_stm32 module and the CMSIS module. In order:
#
#   1. the pinned archives (THERMRIG_TOOLCHAINS, default ../shared/toolchains), or what they left
#      unpacked in build/toolchains: scripts/setup_toolchains.sh;
#   2. PlatformIO's framework-zephyr 2.30500.231204 (Zephyr 3.5.0, what ststm32 17.2.0 ships) already in
#      the project's PlatformIO core dir (PLATFORMIO_CORE_DIR, default build/platformio/core), with the
#      west projects its install-deps.py clones under _pio/;
#   3. with internet access: PlatformIO fetches that package and install-deps.py its west projects, into
#      the same core dir (never ~/.platformio).
#
# THERMRIG_ZEPHYR_SOURCE=archives|platformio takes one source only (default: the first that works).
# Nothing works: one line on stderr says what is missing and how to get it, exit 1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="${THERMRIG_TOOLCHAINS:-$root/../shared/toolchains}"
core="${PLATFORMIO_CORE_DIR:-$root/build/platformio/core}"
source="${THERMRIG_ZEPHYR_SOURCE:-auto}"
FRAMEWORK=framework-zephyr
FRAMEWORK_VERSION=2.30500.231204
PIO_VERSION=6.2.0

case "$source" in
  auto | archives | platformio) ;;
  *)
    echo "firmware: THERMRIG_ZEPHYR_SOURCE=$source: use archives, platformio or leave it unset." >&2
    exit 2
    ;;
esac

archives() {
  local tree="$root/build/toolchains/zephyr-3.5.0"
  bash "$root/scripts/setup_toolchains.sh" >&2 || return 1
  printf '%s\n' "$tree/zephyr" "$tree/modules/hal/stm32" "$tree/modules/hal/cmsis"
}

# A framework-zephyr package of the pinned version with hal_stm32 and CMSIS beside it.
framework_ready() {
  local fw="$core/packages/$FRAMEWORK"
  [ -f "$fw/package.json" ] && grep -q "\"version\": *\"$FRAMEWORK_VERSION\"" "$fw/package.json" \
    && [ -f "$fw/VERSION" ] && [ -d "$fw/_pio/modules/hal/stm32/stm32cube" ] && [ -d "$fw/_pio/modules/hal/cmsis/CMSIS" ]
}

platformio() {
  local fw="$core/packages/$FRAMEWORK"
  if ! framework_ready; then
    [ "$source" = auto ] || [ "$source" = platformio ] || return 1
    fetch || return 1
  fi
  printf '%s\n' "$fw" "$fw/_pio/modules/hal/stm32" "$fw/_pio/modules/hal/cmsis"
}

# PlatformIO from PyPI, then the framework package and its west projects from their registries/remotes.
fetch() {
  local venv="$root/.venv" fw="$core/packages/$FRAMEWORK"
  [ -x "$venv/bin/python" ] || return 1
  if ! "$venv/bin/pio" --version 2>/dev/null | grep -q "$PIO_VERSION"; then
    "$venv/bin/pip" install -q "platformio==$PIO_VERSION" >/dev/null 2>&1 || return 1
  fi
  mkdir -p "$core"
  PLATFORMIO_CORE_DIR="$core" "$venv/bin/pio" pkg install -g -t "platformio/$FRAMEWORK@$FRAMEWORK_VERSION" \
    >/dev/null 2>&1 || return 1
  "$venv/bin/python" "$fw/scripts/platformio/install-deps.py" --platform ststm32 >/dev/null 2>&1 || return 1
  framework_ready
}

if [ "$source" != platformio ] && { [ -f "$src/SHA256SUMS" ] || [ -f "$root/build/toolchains/.unpacked" ]; }; then
  archives  # corrupt archives stop here with setup_toolchains.sh's own line: never fall back past them
  exit
fi
if [ "$source" != archives ] && platformio; then
  exit 0
fi
if [ "$source" = archives ]; then
  bash "$root/scripts/setup_toolchains.sh"  # its one line: where the archives should be
  exit 1
fi
echo "firmware: no Zephyr 3.5.0 tree: no pinned archives at $src (set THERMRIG_TOOLCHAINS to their folder)" \
  "and no $FRAMEWORK $FRAMEWORK_VERSION in $core, which PlatformIO could not fetch (no internet access?):" \
  "copy the archives from ../shared/toolchains, or run once with internet access (docs/firmware.md)." >&2
exit 1
