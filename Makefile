# thermrig: `make demo` runs the main job on the simulated rig, `make test` runs every suite.
# Both install what they need (Debian packages, the Python venv) and can be run again at any time.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BUILD := build
HOST_BUILD := $(BUILD)/host
ASAN_BUILD := $(BUILD)/asan
COV_BUILD := $(BUILD)/coverage
ARM_BUILD := $(BUILD)/arm
CORE_SRC := $(wildcard firmware/core/*.c)
CORE_HDR := $(wildcard firmware/core/*.h)
export THERMRIG_RIGSIM := $(CURDIR)/$(HOST_BUILD)/rigsim
export THERMRIG_DRIVE_PLUGIN := $(CURDIR)/$(HOST_BUILD)/thermrig_drive.so
export THERMRIG_INFLUXD ?= $(shell go env GOPATH)/bin/influxd
export THERMRIG_INFLUXD2 ?= $(shell go env GOPATH)/bin/influxd2

ARM_CC := arm-none-eabi-gcc
ARM_FLAGS := -std=c11 -Wall -Wextra -Werror -Wpedantic -mcpu=cortex-m4 -mthumb -mfloat-abi=hard \
	-mfpu=fpv4-sp-d16 -Os -ffunction-sections -fdata-sections -fstack-usage -DRIG_BOARD='"cortex-m4f"'
FLASH_BUDGET := 32768
RAM_BUDGET := 8192

.PHONY: firmware
.PHONY: pio
DIST := dist
.PHONY: dist
.PHONY: demo test setup system influxd venv rp2040js build rigsim ctest asan cross size coverage lint pytest conformance beside-images fuzz fuzz-smoke bench calibrate fit clean

# The main job, `thermrig demo`: local InfluxDB, the simulated rig with the virtual 950 Pro, a 2 slots x 2
# profiles sequential-write campaign, then the onset/depth table read back from InfluxDB.
demo: setup rigsim
	$(VENV)/bin/thermrig demo

# Each suite in turn, its wall time printed after it (the figures docs quote). The conformance
# suite mostly waits on its stepped rigs (under a core of CPU on four processes), so it runs beside the
# CPU-bound image builds, fuzz smoke and lint (`beside-images`); pytest on tests/python, whose real-time
# campaigns want the machine, runs alone after them.
# The setup and the host build go first, timed the same way, so the suites' time can be said apart.
TEST_SUITES := ctest asan cross beside-images pytest
test:
	@for suite in setup build $(TEST_SUITES); do \
		start=$$(date +%s); \
		$(MAKE) --no-print-directory $$suite || exit 1; \
		echo "make test: $$suite took $$(( $$(date +%s) - start )) s"; \
		if [ $$suite = setup ]; then after_setup=$$(date +%s); fi; \
	done; \
	echo "make test: everything after the setup took $$(( $$(date +%s) - after_setup )) s"; \
	echo "make test: tests skipped, each as tests/skips.py expects ($(SKIP_LIST), $(CONFORMANCE_SKIP_LIST)):"; \
	listed=0; for list in $(SKIP_LIST) $(CONFORMANCE_SKIP_LIST); do \
		if [ -s $$list ]; then sed 's/^/  /' $$list; listed=1; fi; \
	done; \
	if [ $$listed = 0 ]; then echo "  none"; fi

setup: system influxd venv rp2040js

system:
	@bash scripts/setup_system.sh

influxd:
	@bash scripts/setup_influxd.sh
	@bash scripts/setup_influxd2.sh

venv: $(VENV)/.installed

# The RP2040 emulator's Node packages (firmware/micropython/rp2040js: rp2040js, pinned), with npm ci.
rp2040js:
	@bash scripts/setup_rp2040js.sh

$(VENV)/.installed: host/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e 'host[dev,firmware]'
	touch $@

build rigsim: $(HOST_BUILD)/build.ninja
	cmake --build $(HOST_BUILD)

$(HOST_BUILD)/build.ninja: firmware/CMakeLists.txt
	cmake -S firmware -B $(HOST_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug >/dev/null

ctest: build
	ctest --test-dir $(HOST_BUILD) --output-on-failure --no-tests=error

asan:
	cmake -S firmware -B $(ASAN_BUILD) -G Ninja -DTHERMRIG_SANITIZE=ON >/dev/null
	cmake --build $(ASAN_BUILD)
	ctest --test-dir $(ASAN_BUILD) --output-on-failure --no-tests=error

cross: $(ARM_BUILD)/size_probe.elf

$(ARM_BUILD)/size_probe.elf: $(CORE_SRC) $(CORE_HDR) tests/size/size_probe.c tests/size/cortex_m4.ld
	@mkdir -p $(ARM_BUILD)
	cd $(ARM_BUILD) && $(ARM_CC) $(ARM_FLAGS) -I$(CURDIR)/firmware/core $(addprefix $(CURDIR)/,$(CORE_SRC)) \
		$(CURDIR)/tests/size/size_probe.c -nostartfiles --specs=nano.specs --specs=nosys.specs \
		-Wl,--gc-sections -T $(CURDIR)/tests/size/cortex_m4.ld -o size_probe.elf
	@echo "cross: firmware core built for Cortex-M4F (-Os): $@"

# The core alone against its budget, and each whole Zephyr image (core, glue, kernel, drivers) against 64 / 24 KiB.
IMAGE_FLASH_BUDGET := 65536
IMAGE_RAM_BUDGET := 24576
size: cross firmware
	@$(PYTHON) scripts/report_size.py $(ARM_BUILD)/size_probe.elf $(FLASH_BUDGET) $(RAM_BUDGET) \
		--images $(IMAGE_FLASH_BUDGET) $(IMAGE_RAM_BUDGET) $(foreach b,$(ZEPHYR_BOARDS),$(BUILD)/zephyr/$(b)/zephyr/zephyr.elf)

# The rig firmware's Zephyr images (the pinned Zephyr 3.5.0, Debian's arm-none-eabi-gcc, CMake + Ninja):
# build/zephyr/<board>/zephyr/zephyr.elf. A board is added here and with firmware/zephyr/boards/<board>.overlay.
ZEPHYR_BOARDS := nucleo_f411re nucleo_f446re
firmware: venv
	@bash scripts/build_zephyr.sh $(ZEPHYR_BOARDS)

# The same images as users build them, with PlatformIO (platformio.ini), offline: PlatformIO from PyPI
# and its packages from the pinned archives in build/platformio/core (never ~/.platformio): build/pio/<env>/.
PIO_ENVS := nucleo_f411re nucleo_f446re
pio: venv
	@bash scripts/build_pio.sh $(PIO_ENVS)

# What a lab installs: the agent's wheel (scikit-build-core compiles rigsim, rigsim6 and the nbdkit plugin
# into it; docs/install.md) and the firmware release files with their manifest (docs/firmware.md).
dist: venv firmware
	rm -rf $(DIST)
	$(VENV)/bin/pip wheel --no-deps --no-build-isolation -q -w $(DIST) ./host
	$(PY) scripts/release_files.py $(DIST)/firmware $(BUILD)/zephyr $(ZEPHYR_BOARDS)
	@ls -l $(DIST)/*.whl

# The core's line coverage by the C tests (at least 90 %), then the Nucleo HAL's (rig_hal.c) by the board
# build's runs on native_sim_64 (scripts/board_coverage.py: the conformance suite on it, two variants).
# gcovr reads only the core's coverage build (by default it searches the whole checkout, where the board
# build's counts of an older version of the same sources disagree with the new ones and stop it).
coverage: venv build firmware-qemu
	cmake -S firmware -B $(COV_BUILD) -G Ninja -DTHERMRIG_COVERAGE=ON >/dev/null
	cmake --build $(COV_BUILD)
	find $(COV_BUILD) -name '*.gcda' -delete
	ctest --test-dir $(COV_BUILD) --no-tests=error >/dev/null
	gcovr --root . --filter 'firmware/core/' --object-directory $(COV_BUILD) --fail-under-line 90 \
		--print-summary --txt $(COV_BUILD)/coverage.txt $(COV_BUILD)
	@cat $(COV_BUILD)/coverage.txt
	$(PY) scripts/board_coverage.py

# The linters, and the generated limits: each of their three files as firmware/core/rig_limits.toml gives it.
lint: venv
	$(VENV)/bin/ruff check host tests bench scripts
	$(VENV)/bin/ruff format --check host tests bench scripts
	$(PY) scripts/gen_limits.py --check

# The rig's limits, declared once in firmware/core/rig_limits.toml, written into the C core's rig_config.h,
# the MicroPython firmware's config.py and the host's protocol/limits.py (their marked blocks; checked in,
# so that no firmware build needs Python). `make lint` and tests/python/test_constants.py fail when stale.
.PHONY: limits
limits:
	$(PYTHON) scripts/gen_limits.py

# The Python tests on PYTEST_WORKERS processes (pytest-xdist; the recorded campaign's tests share one, so
# it is recorded once), the longest work first (tests/python/longest_first.py: --no-loadscope-reorder keeps
# that order); PYTEST_WORKERS=0 runs them in this process, one after another. A test may skip only as
# tests/skips.py's list expects it (that test, that reason: what this machine cannot do, or what another
# target runs); any other skip, at collection too, fails the run (--strict-skips). The skips left are
# listed in SKIP_LIST, which make test prints at its end.
# After them, one at a time, the whole conformance suite on the emulated RP2040 (RP2040_SUITE), then the
# campaign on it (RP2040_CAMPAIGN), each with the machine to itself: beside four workers on two cores the
# emulated chip fell behind the host's timeouts; each one's time printed.
PYTEST_WORKERS ?= 4
SKIP_LIST := $(BUILD)/pytest-skips.txt
RP2040_CAMPAIGN := tests/python/test_campaign_rp2040.py
pytest: venv rp2040js build asan firmware-qemu firmware-board firmware-emulator firmware-pico
	rm -f $(SKIP_LIST)
	@start=$$(date +%s); rc=0; \
	$(PY) -m pytest tests/python -q --durations=20 -n $(PYTEST_WORKERS) --dist loadgroup \
		--no-loadscope-reorder --strict-skips --skip-list $(SKIP_LIST) --ignore $(RP2040_CAMPAIGN) || rc=$$?; \
	echo "make test: tests/python took $$(( $$(date +%s) - start )) s"; \
	begun=$$(date +%s); \
	$(RP2040_SUITE) || rc=$$?; \
	echo "make test: the conformance suite on micropython-rp2040 took $$(( $$(date +%s) - begun )) s"; \
	begun=$$(date +%s); \
	$(PY) -m pytest $(RP2040_CAMPAIGN) -q -p no:cacheprovider --strict-skips || rc=$$?; \
	echo "make test: the campaign on micropython-rp2040 took $$(( $$(date +%s) - begun )) s"; \
	exit $$rc

# The conformance suite on rigsim (ASan/UBSan), the Zephyr firmware in QEMU, the board build (the Nucleo's
# HAL on native_sim_64), the MicroPython firmware and the Pico's own HAL on a simulated RP2040
# (micropython-pico): each firmware's checks on one process, in order (the emulated RP2040's, added with
# THERMRIG_CONFORMANCE_RP2040=1, on two: RP2040_SUITE below; CONFORMANCE_WORKERS=0: all in this process).
# Its skips are held as pytest's are (--strict-skips), listed in CONFORMANCE_SKIP_LIST.
CONFORMANCE_WORKERS ?= 5
CONFORMANCE_SKIP_LIST := $(BUILD)/conformance-skips.txt
conformance: venv build asan firmware-qemu firmware-board
	rm -f $(CONFORMANCE_SKIP_LIST)
	THERMRIG_RIGSIM=$(CURDIR)/$(ASAN_BUILD)/rigsim $(PY) -m pytest tests/conformance -q -p no:cacheprovider \
		-n $(CONFORMANCE_WORKERS) --dist loadgroup --strict-skips --skip-list $(CONFORMANCE_SKIP_LIST)

# make test's conformance suite beside firmware, pio, fuzz-smoke, lint and coverage: its output kept in
# build/conformance.log and printed once all are done; each one's time printed, then theirs together.
# A failing suite stops the others (the conformance suite runs in its own process group, set -m while it
# starts, and the group is sent SIGTERM).
CONFORMANCE_LOG := $(BUILD)/conformance.log
# make coverage's gates (the core and rig_hal.c each at least 90 % of their lines) are part of it: about
# 3 min beside the conformance suite on a loaded 2-core machine, the Zephyr images already built.
BESIDE_CONFORMANCE := firmware pio fuzz-smoke lint coverage
beside-images: venv build asan firmware-qemu firmware-board
	@set -m; start=$$(date +%s); \
	( $(MAKE) --no-print-directory conformance; rc=$$?; \
	  echo "make test: conformance took $$(( $$(date +%s) - start )) s"; exit $$rc ) > $(CONFORMANCE_LOG) 2>&1 & \
	conformance=$$!; set +m; trap 'kill -TERM -- -$$conformance 2>/dev/null' EXIT; \
	for suite in $(BESIDE_CONFORMANCE); do \
		begun=$$(date +%s); \
		$(MAKE) --no-print-directory $$suite || exit 1; \
		echo "make test: $$suite took $$(( $$(date +%s) - begun )) s"; \
	done; \
	rc=0; wait $$conformance || rc=$$?; trap - EXIT; \
	echo "tests/conformance, run beside them ($(CONFORMANCE_LOG)):"; cat $(CONFORMANCE_LOG); \
	echo "make test: $(BESIDE_CONFORMANCE) and conformance side by side took $$(( $$(date +%s) - start )) s"; \
	exit $$rc

# The receive path and the virtual-wires codec under libFuzzer with ASan/UBSan: `make fuzz` for a real run (FUZZ_SECONDS, default
# 600), `make fuzz-smoke` (part of make test) for a short one.
FUZZ_SECONDS ?= 600
fuzz: system venv
	bash scripts/fuzz.sh $(FUZZ_SECONDS)
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest tests/python/test_frame_codec.py -q -k "round_trip or arbitrary or chunking"

fuzz-smoke:
	bash scripts/fuzz.sh 20

# Every calibration cell through the whole pipeline, seeds 000 and 004 included (their four campaigns
# take about 70 min, the rest about 40 at 3 at once; 5 run at once here); fails if a cell is out of
# tolerance. `make fit` refits the profiles on the fast replay (tens of minutes) and writes them in place.
calibrate: setup rigsim
	$(VENV)/bin/thermrig calibrate check --jobs 5

fit: venv
	$(VENV)/bin/thermrig calibrate fit --write

# Every benchmark, its figures printed and written into docs/figures.md; BENCHES="bench_a bench_b" runs those only.
BENCHES ?=
bench: setup build
	BENCHES="$(BENCHES)" $(PY) bench/run_all.py

# The Grafana dashboards and provisioning files in docs/grafana, generated from code (docs/grafana.md).
.PHONY: grafana
grafana: venv
	$(VENV)/bin/thermrig grafana --out docs/grafana

# The command reference in docs/cli.md, generated from the command definitions (a test fails when stale).
.PHONY: docs
docs: venv
	$(PY) -m thermrig.cli.reference > docs/cli.md

# The harness diagrams in docs/wiring, drawn with WireViz from hardware/README.md's wiring table.
.PHONY: wiring
wiring: venv
	$(PY) scripts/wiring_diagrams.py

clean:
	rm -rf $(BUILD)

# The Zephyr firmware for the emulated board (qemu_cortex_m3), which `thermrig sim --firmware zephyr`
# and the conformance suite run in QEMU; built like the real boards' images.
export THERMRIG_ZEPHYR_ELF ?= $(CURDIR)/$(BUILD)/zephyr/qemu_cortex_m3/zephyr/zephyr.elf
.PHONY: firmware-qemu
firmware-qemu: venv
	@bash scripts/build_zephyr.sh qemu_cortex_m3

# The board build: the Nucleo's own HAL (firmware/zephyr/src/rig_hal.c) on native_sim_64, its buses'
# devices the plant's (firmware/zephyr/native), which `thermrig sim --firmware zephyr-board` and the
# conformance suite run as a host program.
export THERMRIG_ZEPHYR_BOARD ?= $(CURDIR)/$(BUILD)/zephyr/native_sim_64/zephyr/zephyr.exe
.PHONY: firmware-board
firmware-board: venv
	@bash scripts/build_zephyr.sh native_sim_64

# The Nucleo-F411RE image with the few config changes LabWired's STM32F411 emulator needs
# (firmware/zephyr/boards/nucleo_f411re_emulator.conf, docs/firmware.md): build/zephyr/nucleo_f411re_emulator.
# tests/python/test_stm32_emulator.py (part of make test) boots it, answers HELLO, reads the first
# telemetry, and runs it through control ticks (a step, a jump fault) and with the SHT31 (minutes);
# `make emulator-smoke` runs that file alone.
.PHONY: firmware-emulator emulator-smoke
firmware-emulator: venv
	@bash scripts/build_zephyr.sh nucleo_f411re:emulator

emulator-smoke: venv firmware-emulator
	$(PY) -m pytest tests/python/test_stm32_emulator.py -q -rs -p no:cacheprovider

# Stock MicroPython v1.28.0 for the Raspberry Pi Pico (RPI_PICO), unmodified, built offline from the pinned
# archive (scripts/build_micropython_rp2.sh) into build/micropython-rp2 once; with the RP2040's bootrom,
# what `thermrig sim --firmware micropython-rp2040` runs in rp2040js (docs/micropython.md).
export THERMRIG_PICO_UF2 ?= $(CURDIR)/$(BUILD)/micropython-rp2/firmware.uf2
.PHONY: firmware-pico conformance-rp2040
firmware-pico:
	@bash scripts/build_micropython_rp2.sh

# The whole conformance suite and fault matrix on micropython-rp2040, then a short campaign on it with
# `thermrig run` on the virtual drive (tests/python/test_campaign_rp2040.py, 2-3 minutes), each one's wall
# time printed. make test runs both, after the Python tests, each alone (RP2040_SUITE, RP2040_CAMPAIGN).
# Each emulated chip keeps a core busy, so the suite's checks are shared out between two rigs, each on a
# process of its own (tests/conformance/firmwares.py, SECOND_RIG), each rig's checks in order. A check may
# take minutes of wall time here (hold-lost is 440 s of rig time): each gets RP2040_CHECK_TIMEOUT s.
RP2040_CHECK_TIMEOUT ?= 1200
RP2040_SUITE = env THERMRIG_CONFORMANCE_RP2040=only $(PY) -m pytest tests/conformance -q -p no:cacheprovider \
	-n 2 --dist loadgroup --timeout $(RP2040_CHECK_TIMEOUT)
conformance-rp2040: venv rp2040js build firmware-pico
	@start=$$(date +%s); rc=0; \
	$(RP2040_SUITE) || rc=$$?; \
	echo "make conformance-rp2040: the whole suite on micropython-rp2040 took $$(( $$(date +%s) - start )) s"; \
	start=$$(date +%s); \
	$(PY) -m pytest tests/python/test_campaign_rp2040.py -q -p no:cacheprovider || rc=$$?; \
	echo "make conformance-rp2040: a campaign on micropython-rp2040 took $$(( $$(date +%s) - start )) s"; \
	exit $$rc
