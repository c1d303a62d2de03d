# The simulated Pico's power switch: runs the Pico's own main.py (unchanged, as the board runs it at
# boot) on MicroPython's unix port, with `machine` and `time` from this folder (rp2040.py: the board,
# its chips wired to the plant). The serial line, USB CDC on a Pico, is this process's stdin/stdout (the
# simulation's SerialBridge socket). An MCU reset (the plant's "R <cause>", or the watchdog when nobody
# fed it) boots main.py again from scratch; when the firmware stops (interrupted to the REPL, or crashed)
# the board's hardware keeps running: timers fire, the watchdog bites. Usage:
#   micropython sim_machine/pico_sim.py --plant SOCKET [--ppm PPM] [--offset-us US] [--firmware DIR]
# (DIR: the board's filesystem, where main.py is; by default the folder above this one).
# Prints {"t0_unix_us": ..., "ppm": ..., "offset_us": ...} on stderr once its clock runs.
# With THERMRIG_PICO_CALLS=PATH and THERMRIG_PICO_DEFS=names, the named functions of hal_pico.py append
# their name to PATH when first called (tests/python/test_micropython_pico.py: every one is called).
import os
import sys
import time  # this folder's: the unix port's own, its ticks on the board's clock

import rp2040

FIRMWARE_MODULES = ("main", "bootcheck", "thermrig_fw")


def options(argv):
    here = sys.path[0]
    sys.path.append(here[: here.rfind("/")] if "/" in here else "..")  # the simulation's sim_options
    from sim_options import parse_options

    defaults = {"plant": None, "ppm": 0.0, "offset_us": 0, "firmware": None}
    convert = {"--plant": str, "--ppm": float, "--offset-us": int, "--firmware": str}
    usage = "--plant SOCKET [--ppm PPM] [--offset-us US] [--firmware DIR]"
    return parse_options(argv, "pico_sim.py", usage, defaults, convert)


def forget_firmware():
    """A reset leaves nothing of the last run: its modules are loaded afresh, as from flash at boot."""
    for name in list(sys.modules):
        if name.split(".")[0] in FIRMWARE_MODULES:
            del sys.modules[name]


def fresh_event_loop(board):
    """asyncio from scratch, its idle wait handing the MCU's idle time to the board's hardware."""
    import asyncio
    import select
    from asyncio import core

    class TaskQueue(core.TaskQueue):
        """A task pushed without a time is due now on the board's clock: the C queue would take the unix
        port's own clock (mp_hal_ticks_ms), which knows nothing of the plant's time."""

        def push(self, task, key=None):
            super().push(task, core.ticks() if key is None else key)

    core.TaskQueue = TaskQueue
    asyncio.new_event_loop()
    q = core._io_queue
    asyncio_wait = q.wait_io_event

    def wait(dt):
        # The plant's socket joins asyncio's poll for this wait (no task waits on it: asyncio drops it
        # from the poll when it fires; dropped here otherwise), so that a sample wakes the loop.
        key = id(board.sock)
        q.map[key] = [None, None, board.sock]
        q.poller.register(board.sock, select.POLLIN)
        asyncio_wait(dt)
        if key in q.map:
            del q.map[key]
            q.poller.unregister(board.sock)

    def idle(dt):
        board.idle(dt, wait)
        # Waiting for I/O alone (dt -1: no task is due at any time), asyncio expects a task woken on return;
        # a sample of the plant's wakes the wait without waking one: the MCU idles on.
        while dt < 0 and not core._task_queue.peek():
            board.idle(dt, wait)

    q.wait_io_event = idle


class CallLog:
    """THERMRIG_PICO_CALLS=PATH and THERMRIG_PICO_DEFS=Class.method,function,...: those functions of
    hal_pico.py are wrapped to note their first call in PATH (hal_pico.py itself is not changed; the unix
    port has no sys.settrace)."""

    def __init__(self, path, defs):
        self.path = path
        self.defs = defs
        self.seen = set()

    def wrap(self, name, fn):
        def called(*args, **kwargs):
            if name not in self.seen:
                self.seen.add(name)
                with open(self.path, "a") as out:
                    out.write(name + "\n")
            return fn(*args, **kwargs)

        return called

    def install(self):
        import thermrig_fw.hal_pico as hal

        for name in self.defs:
            if "." in name:
                cls, attr = name.split(".")
                owner = getattr(hal, cls)
                setattr(owner, attr, self.wrap(name, owner.__dict__[attr]))
            else:
                setattr(hal, name, self.wrap(name, getattr(hal, name)))


def boot(board, calls):
    forget_firmware()
    fresh_event_loop(board)
    if calls is not None:
        calls.install()
    __import__("main")  # runs the firmware, as the Pico runs main.py at boot


def main():
    opts = options(sys.argv)
    here = sys.path[0]
    fs = opts["firmware"] or (here[: here.rfind("/")] if "/" in here else "..")
    sys.path.insert(1, fs)  # the board's filesystem: main.py, bootcheck.py, thermrig_fw
    board = rp2040.board = rp2040.Board(opts["plant"], opts["ppm"], opts["offset_us"], time.time_ns, time.sleep_ms)
    calls_path = os.getenv("THERMRIG_PICO_CALLS")
    calls = CallLog(calls_path, os.getenv("THERMRIG_PICO_DEFS", "").split(",")) if calls_path else None
    while True:
        try:
            try:
                boot(board, calls)
            except Exception as exc:  # uncaught in main.py: a Pico prints it on its serial line, at the REPL
                sys.print_exception(exc, sys.stdout)
            board.idle_forever()
        except rp2040.Reset as reset:
            board.power_on(watchdog=reset.local)
        except rp2040.WiringError as exc:
            sys.stderr.write("%s\n" % exc.args[0])
            sys.exit(3)


main()
