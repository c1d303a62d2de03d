# Runs under MicroPython (the unix port here, or a Pico: `mpremote run bench/micropython_tick.py` with the
# firmware on the board): the control tick's time and heap use, the firmware core alone and with the
# sensor drivers and the tick's timing (thermrig_fw/heap.py), in µs per tick. Prints `key value` lines
# for bench_micropython.py.
import gc
import time

from thermrig_fw.max31855 import Max31855
from thermrig_fw.rig import Rig, Samples
from thermrig_fw.sht3x import Sht3x

TICKS = 2000


class FakeSpi:
    """The chip's word for 22.00 C, as the drivers read it (the bus cost itself is hardware's)."""

    def readinto(self, buf):
        buf[0] = 0x01  # 88 quarter-degrees in D31..D18
        buf[1] = 0x60
        buf[2] = 0x16  # cold junction about 22 C
        buf[3] = 0x00


class FakeI2c:
    def writeto(self, addr, data):
        pass

    def readfrom_into(self, addr, buf):
        buf[0] = 0x66  # about 25 C, 40 % RH, with their CRCs
        buf[1] = 0x66
        buf[2] = 0x93
        buf[3] = 0x66
        buf[4] = 0x66
        buf[5] = 0x93


def setup():
    rig = Rig(b"bench")
    s = Samples()
    tcs = [Max31855(FakeSpi(), lambda v: None) for _ in range(4)]
    sht = Sht3x(FakeI2c())
    rig.heat_enabled = True
    rig.air_target_cc = 2300  # within reach of the 22 C reading: no fault, telemetry every tick
    rig.fans[0].set_duty(400)
    # A collection would free what the ticks allocate before it is counted: the measured ticks run none.
    rig.heap.until_gc = 1 << 29
    return rig, s, tcs, sht


def run(rig, s, tcs, sht, with_drivers):
    t0 = time.ticks_us()
    for k in range(TICKS):
        if with_drivers:
            for i in range(4):
                tcs[i].read_into(s.tc_raw[i])
            s.sht_present = sht.poll(s.sht_raw)
            s.tach[0] = s.tach[1] = 5
        now = (k + 1) * 100
        rig.last_host_ms = now
        rig.step(s, now)
        rig.tx.clear()
        if with_drivers:
            rig.heap.end_of_tick(t0)  # the tick's timing (its collection is pushed out of the run: below)
    return time.ticks_diff(time.ticks_us(), t0)


def main():
    rig, s, tcs, sht = setup()
    run(rig, s, tcs, sht, True)  # warm up: the first ticks fill the RPM window
    gc.collect()
    before = gc.mem_alloc()
    core = run(rig, s, tcs, sht, False)
    full = run(rig, s, tcs, sht, True)
    allocated = gc.mem_alloc() - before
    assert rig.safety.latched == 0 and rig.heater_pm > 0, "the bench must exercise the heating path"
    print("core_us_per_tick", core / TICKS)
    print("tick_us_per_tick", full / TICKS)
    print("alloc_bytes_per_tick", allocated / (2 * TICKS))
    gc.collect()
    print("heap_in_use_bytes", gc.mem_alloc())


main()
