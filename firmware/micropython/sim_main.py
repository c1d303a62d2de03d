# Entry point on the unix port: the firmware in the simulated rig, the plant over a Unix socket, the
# serial line on a Unix socket (--serial: the simulated rig's bridge to its pty) or stdin/stdout (as
# USB CDC is on a Pico). Usage:
#   micropython sim_main.py --plant SOCKET [--serial SOCKET] [--ppm PPM] [--offset-us US]
# Prints {"t0_unix_us": ..., "ppm": ..., "offset_us": ...} on stderr once it runs. With
# THERMRIG_MP_HEAP_LOG=PATH in the environment it also appends "<uptime_ms> <heap bytes in use>" to PATH
# every 10 s of MCU time, after a collection (bench/bench_micropython.py: the heap must stay flat).
import sys

import bootcheck
from sim_options import parse_options


def options(argv):
    defaults = {"plant": None, "serial": None, "ppm": 0.0, "offset_us": 0}
    convert = {"--plant": str, "--serial": str, "--ppm": float, "--offset-us": int}
    usage = "--plant SOCKET [--serial SOCKET] [--ppm PPM] [--offset-us US]"
    return parse_options(argv, "sim_main.py", usage, defaults, convert)


def announce(t0_unix_us, opts):
    sys.stderr.write(
        '{"t0_unix_us": %d, "ppm": %f, "offset_us": %d}\n' % (t0_unix_us, opts["ppm"], opts["offset_us"])
    )


def unix_socket(path):
    import socket
    import struct

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(struct.pack("H", socket.AF_UNIX) + path.encode() + b"\x00")
    return sock


async def log_heap(path, hal):
    import asyncio
    import gc

    due = 0
    with open(path, "a") as out:
        while True:
            await asyncio.sleep_ms(20)
            up = hal.now_us()
            if up >= due:
                gc.collect()
                out.write("%d %d\n" % (up // 1000, gc.mem_alloc()))
                out.flush()
                due = up + 10_000_000


def main():
    opts = options(sys.argv)
    if opts["serial"]:
        serial = unix_socket(opts["serial"])
        stdin = stdout = serial
    else:
        stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    reason = bootcheck.check()
    if reason:
        import time

        plant = unix_socket(opts["plant"])
        plant.send(b"A 0 1000 1000\n")  # heater off, fans full: all this board will ever ask
        announce(time.time_ns() // 1000, opts)
        bootcheck.fail_loop(reason, stdin, stdout)
        return
    import asyncio
    import os

    from thermrig_fw.app import App
    from thermrig_fw.hal_sim import SimHal

    hal = SimHal(opts["plant"], opts["ppm"], opts["offset_us"])
    app = App(hal, stdin, stdout)

    async def run():
        await hal.start()
        announce(hal.t0_unix_us, opts)
        heap_log = os.getenv("THERMRIG_MP_HEAP_LOG")
        if heap_log:
            asyncio.create_task(log_heap(heap_log, hal))
        await app.run()

    asyncio.run(run())


main()
