# The heap: garbage collected at one fixed point of the tick, after its work (control step, outputs,
# telemetry frame), every 10 s, so a collection never lands in the middle of a sensor read or a frame.
# A collection takes about 10 ms on a Pico whatever the garbage (it marks the live objects and sweeps the
# whole heap), so it is not run every tick. The tick allocates nothing; a command about 0.8 KiB. In 10 s
# even ten commands a second leave most of the heap free, so MicroPython's own collection, on an
# allocation that finds no room (at any point of the loop), does not come. Each collection and each tick
# is timed with ticks_us (small ints, no allocation); MEM reports them, with the free heap after the last
# collection (what stays allocated: a leak shows as its fall).
import gc
import time

from micropython import const

GC_EVERY_TICKS = const(100)  # one collection every 10 s at 10 Hz


class Heap:
    def __init__(self):
        self.until_gc = GC_EVERY_TICKS
        self.free_due = False  # the free heap is read in the tick after a collection
        self.collections = 0
        self.free_after_gc = 0  # gc.mem_free() in the tick after the last collection (0 before the first)
        self.gc_last_us = 0  # the last collection
        self.gc_max_us = 0  # the longest collection
        self.tick_max_us = 0  # the longest tick, from its sample to the end of its work

    def end_of_tick(self, started_us):
        """Called at the end of every tick's work; collects garbage every GC_EVERY_TICKS ticks."""
        self.until_gc -= 1
        if self.until_gc <= 0:
            self.until_gc = GC_EVERY_TICKS
            self.collect()
        elif self.free_due:
            # gc.mem_free() walks the whole allocation table, which takes about as long as a collection
            # (9 ms on a Pico): in the next tick, not the collection's.
            self.free_due = False
            self.free_after_gc = gc.mem_free()
        us = time.ticks_diff(time.ticks_us(), started_us)
        if us > self.tick_max_us:
            self.tick_max_us = us

    def collect(self):
        t = time.ticks_us()
        gc.collect()
        us = time.ticks_diff(time.ticks_us(), t)
        self.gc_last_us = us
        if us > self.gc_max_us:
            self.gc_max_us = us
        self.collections += 1
        self.free_due = True
