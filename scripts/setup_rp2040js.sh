#!/usr/bin/env bash
# Install the RP2040 emulator's Node packages (rp2040js, pinned by package.json and package-lock.json) into
# firmware/micropython/rp2040js/node_modules with `npm ci`, once (again when the lock file changes). The
# `micropython-rp2040` simulated firmware runs there. No Node or npm: one line says so, exit 1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
harness="$root/firmware/micropython/rp2040js"
stamp="$harness/node_modules/.package-lock.json"
for cmd in node npm; do
  if ! command -v "$cmd" >/dev/null 2>&1; then
    echo "setup: $cmd is missing: the emulated RP2040 (micropython-rp2040) runs on Node 18 or later; install nodejs and npm (make system does)." >&2
    exit 1
  fi
done
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 18 ]; then
  echo "setup: Node $(node --version) is too old: the RP2040 harness needs Node 18 or later." >&2
  exit 1
fi
if [ -f "$stamp" ] && [ "$stamp" -nt "$harness/package-lock.json" ]; then
  exit 0
fi
echo "setup: installing rp2040js into $harness/node_modules (npm ci)"
if ! (cd "$harness" && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
  echo "setup: npm ci in $harness failed (is the npm registry reachable?)." >&2
  exit 1
fi
touch "$stamp"
