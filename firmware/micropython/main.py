# Entry point on a Raspberry Pi Pico (MicroPython runs main.py at boot). Serial is the USB CDC port.
# The pin map (hardware/README.md) is declared here, the board's one hardware file.
import sys

from machine import Pin

import bootcheck

PINS = {
    "spi": (18, 16),  # SCK, MISO: the four MAX31855 are read-only devices
    "tc_cs": (17, 20, 21, 22),
    "i2c": (4, 5),  # SDA, SCL: the SHT31
    "fans": (6, 7),
    "tach": (8, 9),
    "heater": 10,
}


def safe_pins():
    """Heater off, fans full, with nothing but machine.Pin: works whatever else is missing."""
    Pin(PINS["heater"], Pin.OUT, value=0)
    for p in PINS["fans"]:
        Pin(p, Pin.OUT, value=1)


def main():
    safe_pins()
    stdin = getattr(sys.stdin, "buffer", sys.stdin)
    stdout = getattr(sys.stdout, "buffer", sys.stdout)
    reason = bootcheck.check()
    if reason:
        bootcheck.fail_loop(reason, stdin, stdout)
        return
    import asyncio

    from thermrig_fw.app import App
    from thermrig_fw.hal_pico import PicoHal, SetupError

    try:
        hal = PicoHal(PINS)
    except SetupError as exc:  # a setting the chip refuses (a watchdog timeout past its range): say which
        safe_pins()
        bootcheck.fail_loop(bootcheck.reason("setup", str(exc)), stdin, stdout)
        return
    try:
        asyncio.run(App(hal, stdin, stdout).run())
    except KeyboardInterrupt:
        hal.keep_alive()  # a person or mpremote wants the REPL (e.g. to flash): stay up, outputs safe
    except Exception as exc:
        try:
            hal.safe()  # then the watchdog, no longer fed, resets the MCU into a fresh start
        except OSError:
            safe_pins()  # a PWM that fails (OSError): its pin taken back as a plain GPIO at its safe level
        sys.print_exception(exc)


main()
