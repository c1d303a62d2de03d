"""The faults a simulated rig can suffer, by name (docs/safety.md): what the fault matrix injects and
`thermrig sim`'s control socket accepts. The simulated rig applies them (thermrig.sim.fault_injection)."""

from __future__ import annotations

from enum import StrEnum


class FaultKind(StrEnum):
    TC_OPEN = "tc-open"
    TC_SHORT_GND = "tc-short-gnd"
    TC_SHORT_VCC = "tc-short-vcc"
    TC_STUCK = "tc-stuck"  # value: the frozen reading, C (default: the current one)
    TC_NOISY = "tc-noisy"  # value: extra noise, C (default 4)
    # Bus faults a board's own HAL meets (docs/safety.md). An I2C NAK from the SHT3x is ambient-missing,
    # its CRC errors ambient-crc and ambient-crc-temp, a silent tach tach-missing: the same fault, seen at the bus.
    SPI_ALL_ONES = "spi-all-ones"  # the thermocouple's SPI word reads 0xFFFFFFFF (MISO stuck high)
    SPI_ALL_ZEROS = "spi-all-zeros"  # the word reads 0x00000000 (MISO stuck low, chip unpowered)
    CS_STUCK = "cs-stuck"  # the thermocouple's chip select held low: it answers beside each other chip (AND)
    AMBIENT_MISSING = "ambient-missing"
    AMBIENT_CRC = "ambient-crc"  # the SHT3x's humidity word fails its CRC-8
    AMBIENT_CRC_TEMP = "ambient-crc-temp"  # a bit of its temperature word flipped on the bus: that word's CRC fails
    HEATER_STUCK_ON = "heater-stuck-on"
    HEATER_OPEN = "heater-open"
    PWM_ERROR = "pwm-error"  # an output's PWM driver fails (board build, Pico firmwares); channel 0 heater, 1-2 fans
    FAN_STALL = "fan-stall"
    TACH_MISSING = "tach-missing"
    SERIAL_GARBAGE = "serial-garbage"  # channel 0: into the rig's receiver, 1: toward the host
    SERIAL_SILENCE = "serial-silence"  # value: seconds (default 5)
    USB_UNPLUG = "usb-unplug"  # value: seconds until the device is back (default 2)
    MCU_RESET = "mcu-reset"
    WATCHDOG_RESET = "watchdog-reset"  # the MCU restarted by its watchdog (a hung firmware)
    ROOM_STEP = "room-step"  # value: change of room temperature, C (default +5)
    # The MCU's clock (rigsim only): its uptime jumps forward, or it runs fast beyond its crystal.
    CLOCK_JUMP = "clock-jump"  # value: ms (default 20)
    CLOCK_DRIFT = "clock-drift"  # value: ppm fast (default 2000); cleared: as its crystal again
    TICK_STALL = "tick-stall"  # the MCU's control loop stalls (rigsim only); value: ms (default 300)
