#!/usr/bin/env bash
# Install PlatformIO (PyPI) in the venv and, with no network, every package `pio run` would download for
# platformio.ini (ststm32 17.2.0 + Zephyr), from local folders, into the project's own core dir
# build/platformio/core (never ~/.platformio). Offline machines only: with internet access, plain
# `pio run -e <board>` fetches the same versions itself. Idempotent; `make pio` runs it.
#
# What each package is made of here (ststm32 17.2.0's platform.json says what Zephyr asks for):
#   platformio/ststm32            the pinned platform archive (build/toolchains)
#   framework-zephyr 2.30500.231204  the pinned Zephyr 3.5.0 tree; _pio/ holds the west projects its
#                                 install-deps.py would clone (hal_stm32 and cmsis real, the rest empty)
#   toolchain-gccarmnoneeabi      Debian's arm-none-eabi-gcc 12.2 (links), in the ~1.120301 slot
#   tool-cmake, -ninja, -dtc, -gperf  Debian's binaries (links)
#   tool-scons 4.41101.0          the PyPI scons 4.11.1 wheel with a scons.py entry point
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv"
pio_dir="$root/build/platformio"
local_dir="$pio_dir/local"
tree="$root/build/toolchains/zephyr-3.5.0"
export PLATFORMIO_CORE_DIR="$pio_dir/core"
PIO_VERSION=6.2.0
SCONS_VERSION=4.11.1
stamp="$pio_dir/.installed-$PIO_VERSION"

# No pinned archives (and nothing unpacked from them): a machine with internet access, where `pio run`
# fetches ststm32 17.2.0 and its Zephyr itself; fetch the platform now so that no access is one line.
src="${THERMRIG_TOOLCHAINS:-$root/../shared/toolchains}"
if [ ! -f "$src/SHA256SUMS" ] && [ ! -f "$root/build/toolchains/.unpacked" ]; then
  if ! "$venv/bin/pio" --version 2>/dev/null | grep -q "$PIO_VERSION"; then
    "$venv/bin/pip" install -q "platformio==$PIO_VERSION" >/dev/null 2>&1 || true
  fi
  if ! "$venv/bin/pio" pkg install -g -p platformio/ststm32@17.2.0 >/dev/null 2>&1; then
    echo "pio: no pinned archives at $src (set THERMRIG_TOOLCHAINS to their folder) and PlatformIO could not" \
      "fetch ststm32 17.2.0 (no internet access?): copy the archives from ../shared/toolchains, or run with" \
      "internet access (docs/firmware.md)." >&2
    exit 1
  fi
  exit 0
fi
bash "$root/scripts/setup_toolchains.sh"
if [ -f "$stamp" ] && [ "$stamp" -nt "$root/build/toolchains/.unpacked" ] && [ -x "$venv/bin/pio" ]; then
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "pio: no venv at $venv: run 'make venv'." >&2
  exit 1
fi
if ! "$venv/bin/pio" --version 2>/dev/null | grep -q "$PIO_VERSION"; then
  echo "pio: installing PlatformIO $PIO_VERSION from PyPI into the venv"
  "$venv/bin/pip" install -q "platformio==$PIO_VERSION"
fi
echo "pio: installing the offline packages into build/platformio/core"
rm -rf "$pio_dir"
mkdir -p "$local_dir" "$PLATFORMIO_CORE_DIR"

# package.json and .piopm (PlatformIO's install record; owner platformio, as its registry would write).
describe() { # DIR TYPE NAME VERSION DESCRIPTION
  printf '{"name": "%s", "version": "%s", "description": "%s", "system": ["linux_x86_64"]}\n' \
    "$3" "$4" "$5" >"$1/package.json"
  printf '{"type": "%s", "name": "%s", "version": "%s", "spec": {"owner": "platformio", "id": null, "name": "%s", "requirements": null, "uri": null}}\n' \
    "$2" "$3" "$4" "$3" >"$1/.piopm"
}

# The platform: a hard-linked copy of the unpacked archive, so its install record stays out of it.
cp -al "$root/build/toolchains/platform-ststm32-17.2.0" "$local_dir/platform-ststm32"
printf '{"type": "platform", "name": "ststm32", "version": "17.2.0", "spec": {"owner": "platformio", "id": null, "name": "ststm32", "requirements": null, "uri": null}}\n' \
  >"$local_dir/platform-ststm32/.piopm"

gcc="$local_dir/toolchain-gccarmnoneeabi"
mkdir -p "$gcc/bin"
for tool in /usr/bin/arm-none-eabi-*; do
  ln -s "$tool" "$gcc/bin/"
done
ln -s /usr/arm-none-eabi "$gcc/arm-none-eabi"
describe "$gcc" tool toolchain-gccarmnoneeabi 1.120301.0 "Debian's gcc-arm-none-eabi $(arm-none-eabi-gcc -dumpversion)"

mkdir -p "$local_dir/tool-cmake/bin"
ln -s "$(command -v cmake)" "$local_dir/tool-cmake/bin/cmake"
describe "$local_dir/tool-cmake" tool tool-cmake 3.21.0 "Debian's cmake $(cmake --version | awk 'NR==1{print $3}')"
# The Zephyr builder puts these package folders themselves on PATH: the binary sits at the root.
for pair in ninja:tool-ninja:1.11.1 dtc:tool-dtc:1.4.7 gperf:tool-gperf:3.1.0; do
  IFS=: read -r bin name version <<<"$pair"
  mkdir -p "$local_dir/$name"
  ln -s "$(command -v "$bin")" "$local_dir/$name/$bin"
  describe "$local_dir/$name" tool "$name" "$version" "Debian's $bin"
done

scons="$local_dir/tool-scons"
"$venv/bin/pip" install -q --no-deps --target "$scons" "scons==$SCONS_VERSION"
printf '# Entry point PlatformIO runs (tool-scons/scons.py): the SCons package installed beside it.\nimport sys\n\nfrom SCons.Script import main\n\nsys.exit(main())\n' \
  >"$scons/scons.py"
describe "$scons" tool tool-scons 4.41101.0 "SCons $SCONS_VERSION from PyPI"

# Zephyr as PlatformIO's framework-zephyr: hard links to the unpacked tree (same files, no copy).
zephyr="$local_dir/framework-zephyr"
cp -al "$tree/zephyr" "$zephyr"
describe "$zephyr" framework framework-zephyr 2.30500.231204 "Zephyr 3.5.0 (the pinned archive)"
"$venv/bin/python" - "$zephyr" "$tree/modules" <<'EOF'
# Fill _pio/ with every west project install-deps.py checks for ststm32, and its state.json.
import json, os, shutil, subprocess, sys
import yaml
zephyr, modules = sys.argv[1], sys.argv[2]
manifest = yaml.safe_load(open(os.path.join(zephyr, "west.yml")))["manifest"]
state = {}
for project in manifest["projects"]:
    name, path = project["name"], project.get("path", project["name"])
    if (name.startswith("hal_") and name[4:] not in ("st", "stm32")) or path.startswith("tool") \
            or name.startswith("nrf_hw_"):
        continue
    dest = os.path.join(zephyr, "_pio", path)
    real = {"hal_stm32": "hal/stm32", "cmsis": "hal/cmsis"}.get(name)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    if real:
        subprocess.run(["cp", "-al", os.path.join(modules, real), dest], check=True)
    else:
        os.makedirs(dest)  # no zephyr/module.yml: Zephyr's module scan skips it
    state[name] = project["revision"]
json.dump(state, open(os.path.join(zephyr, "_pio", "state.json"), "w"), indent=2)
EOF

pio="$venv/bin/pio"
"$pio" settings set enable_telemetry No >/dev/null
"$pio" settings set check_platformio_interval 3650 >/dev/null
"$pio" pkg install -g -p "symlink://$local_dir/platform-ststm32" --skip-dependencies >/dev/null
for name in toolchain-gccarmnoneeabi tool-cmake tool-ninja tool-dtc tool-gperf tool-scons framework-zephyr; do
  "$pio" pkg install -g -t "symlink://$local_dir/$name" >/dev/null
done
touch "$stamp"
