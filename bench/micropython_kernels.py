# Runs under MicroPython: the kernels of shaoziyang/micropython_benchmarks' benchmark.py (MIT), whose
# published table gives a Raspberry Pi Pico's times (RP2040 at 125 MHz, MicroPython v1.23.0) for each.
# Each kernel is the same loop, called the same way (a function given the list [count, a, b]), timed
# with ticks_ms around the call after a collection, so this machine's unix port and the Pico time the
# same bytecode (names aside). Prints `key ms` lines for bench_micropython.py.
import gc
import time


def add(p):
    for _i in range(p[0]):
        c = p[1] + p[2]  # noqa: F841 (the store is part of the published kernel's bytecode)


def mul(p):
    for _i in range(p[0]):
        c = p[1] * p[2]  # noqa: F841 (the store is part of the published kernel's bytecode)


def div(p):
    for _i in range(p[0]):
        c = p[1] / p[2]  # noqa: F841 (the store is part of the published kernel's bytecode)


def mandelbrot(p):
    limit = p[0]

    def in_set(c):
        z = 0
        for _i in range(limit):
            z = z * z + c
            if abs(z) > 4:
                return False
        return True

    r = ""
    for v in range(31):
        for u in range(81):
            if in_set((u / 30 - 2) + (v / 15 - 1) * 1j):
                r += " "
            else:
                r += "#"
        r += "\n"


# Integer multiplication is left out: 12345678 * 56781234 is a small int on a 64-bit port but a
# big integer (heap) on the Pico's 32-bit one, so the two would not time the same work.
KERNELS = (
    ("int_add_1e6", add, [1000000, 12345678, 56781234]),
    ("int_div_1e6", div, [1000000, 99999991, 45481]),
    ("float_add_1e6", add, [1000000, 12345678.1234, 56781234.5678]),
    ("float_mul_1e6", mul, [1000000, 12345678.1234, 56781234.5678]),
    ("float_div_1e6", div, [1000000, 99999991.2345, 45481.1357]),
    ("mandelbrot_500", mandelbrot, [500]),
)


def main():
    for name, func, p in KERNELS:
        gc.collect()
        t0 = time.ticks_ms()
        func(p)
        print(name, time.ticks_diff(time.ticks_ms(), t0))


main()
