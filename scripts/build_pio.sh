#!/usr/bin/env bash
# Build platformio.ini's environments offline (make pio): PlatformIO and its packages installed into the
# project-local core dir by setup_platformio.sh, images in build/pio/<env>/firmware.elf, each
# environment's output in build/platformio/<env>.log (not in build/pio, which PlatformIO empties
# whenever platformio.ini changes).
#
#   scripts/build_pio.sh nucleo_f411re nucleo_f446re
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PLATFORMIO_CORE_DIR="$root/build/platformio/core"
# Zephyr's CMake cache stays in the project too (build/platformio/cache/zephyr), not in ~/.cache/zephyr:
# Zephyr 3.5 takes $XDG_CACHE_HOME when it is set and writable.
export XDG_CACHE_HOME="$root/build/platformio/cache"
mkdir -p "$XDG_CACHE_HOME"

cd "$root"
for env in "$@"; do
  if ! grep -q "^\[env:$env\]" platformio.ini; then
    echo "pio: unknown environment '$env': platformio.ini has $(grep -o '^\[env:[^]]*' platformio.ini | cut -d: -f2 | tr '\n' ' ')" >&2
    exit 1
  fi
done
bash "$root/scripts/setup_platformio.sh"
for env in "$@"; do
  echo "pio: $env"
  log="build/platformio/$env.log"
  if ! .venv/bin/pio run -e "$env" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "pio: $env failed (whole log: $log)." >&2
    exit 1
  fi
  grep -E '^(RAM|Flash):|\[SUCCESS\]' "$log"
done
