#!/usr/bin/env bash
# Install the Debian packages thermrig needs, only those missing. Idempotent; uses sudo when not root.
set -euo pipefail

# command -> Debian package
declare -A NEED=(
  [fio]=fio
  [nvme]=nvme-cli
  [socat]=socat
  [arm-none-eabi-gcc]=gcc-arm-none-eabi
  [gcovr]=gcovr
  [cmake]=cmake
  [ninja]=ninja-build
  [gcc]=gcc
  [clang]=clang
  [go]=golang-go
  [sfdisk]=fdisk
  [qemu-system-arm]=qemu-system-arm  # runs the Zephyr firmware's qemu_cortex_m3 build in the loop
  [dtc]=device-tree-compiler          # the Zephyr build (make firmware-qemu)
  [gperf]=gperf
  [chromium]=chromium  # the report test looks at the HTML report in headless Chromium
  [dot]=graphviz       # WireViz draws the harness diagrams with it (make wiring)
  [nbdkit]=nbdkit      # serves the virtual drive (docs/virtual-drive.md)
  [nbdinfo]=libnbd-bin  # nbdinfo, nbdcopy: third-party NBD clients in the virtual drive's tests
  [nbdfuse]=libnbd-bin  # the virtual drive as a file, for a file system on it (docs/virtual-drive.md)
  [nbdsh]=python3-libnbd  # libnbd's Python bindings (the tests' scripted NBD client)
  [qemu-io]=qemu-utils  # qemu-io, qemu-img: qemu's own NBD client
  [ser2net]=ser2net    # labgrid's exporter serves a rig's serial port over RFC 2217 with it (docs/lab.md)
  [sshd]=openssh-server  # the simulated lab's test PCs answer SSH with it (tests/python/test_lab.py)
  [node]=nodejs  # runs the emulated RP2040 (rp2040js) of the micropython-rp2040 firmware
  [npm]=npm      # installs rp2040js (scripts/setup_rp2040js.sh)
)
missing=()
for cmd in "${!NEED[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${NEED[$cmd]}")
done
# libFuzzer and the sanitizer runtimes come with clang's runtime package.
if ! clang -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null | grep -q /; then
  missing+=(libclang-rt-14-dev)
fi
# The nbdkit plugin's header (the virtual drive's plugin builds where it is present).
[ -f /usr/include/nbdkit-plugin.h ] || missing+=(nbdkit-plugin-dev)
# newlib has no command of its own: look for its nano specs.
if ! arm-none-eabi-gcc -print-file-name=nano.specs 2>/dev/null | grep -q /; then
  missing+=(libnewlib-arm-none-eabi)
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" libnewlib-arm-none-eabi >/dev/null
