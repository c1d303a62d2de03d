# The firmware's tasks (asyncio): the tick (paced by the HAL: sample, control step, outputs, telemetry) and
# the serial link.
# The same code runs on a Pico (hal_pico) and on the unix port against the plant (hal_sim).
import asyncio
import select
import time

from .rig import Rig, Samples


class App:
    def __init__(self, hal, serial_in, serial_out):
        self.hal = hal
        self.rig = Rig(hal.board)
        self.samples = Samples()
        self.serial_in = serial_in
        self.serial_out = serial_out
        self.out_poll = select.poll()
        self.out_poll.register(serial_out, select.POLLOUT)
        self.rx_buf = bytearray(256)
        hal.on_reset = self.reset

    def reset(self, cause):
        """Power-on or an MCU reset (the simulation's "R <cause>"): the rig starts over in its safe state."""
        self.rig.init(cause)
        self.rig.report_boot()
        self.flush()  # EVT BOOT goes out before anything else can fail (a PWM that raises at its first duty)
        self.hal.apply(self.rig.heater_pm, self.rig.fan_pm)

    def flush(self):
        # A host that keeps the port open but does not read: USB CDC's buffer fills, and a write then
        # waits for room, up to 500 ms a frame on MicroPython's rp2 port, which slowed the loop to 2 Hz.
        # So a frame goes out only while the port can take bytes; otherwise it is dropped (the host sees
        # the gap in the uptime stamps). ipoll and write's length argument: no allocation per tick. With the
        # USB cable out the port says it can (MicroPython keeps the latest bytes for the next host) while a
        # write waits just the same: so also only while a host drives the bus (hal.host_on_bus).
        tx = self.rig.tx
        if tx.n:
            if self.hal.host_on_bus():
                for _ in self.out_poll.ipoll(0):
                    self.serial_out.write(tx.buf, tx.n)  # (buf, max_len): a memoryview slice would be a heap object
                    break
            tx.clear()

    async def ticking(self):
        # One task, the tick from its wait to its collection. It awaits only the HAL's tick, which on a
        # Pico is asyncio's sleep itself (a singleton): no coroutine object is made per tick, so the tick
        # allocates nothing (an asyncio.Event handing the tick between two tasks would make some each tick).
        rig = self.rig
        hal = self.hal
        samples = self.samples
        while True:
            await hal.tick()  # the next 100 ms tick (on the plant: its next sample)
            started_us = time.ticks_us()
            hal.sample(samples)
            rig.step(samples, hal.now_ms())
            hal.apply(rig.heater_pm, rig.fan_pm)
            hal.feed()
            self.flush()
            rig.heap.end_of_tick(started_us)  # the tick's garbage collection, timed

    async def link(self):
        # A blocking stream's readinto() waits to fill the whole buffer (USB CDC on a Pico, a socket
        # here), so: wait for one byte, then take only what is already there, one byte at a time.
        serial = self.serial_in
        reader = asyncio.StreamReader(serial)
        poller = select.poll()
        poller.register(serial, select.POLLIN)
        buf = self.rx_buf
        one = bytearray(1)
        while True:
            if not await reader.readinto(one):
                await self.hal.serial_closed()
                continue
            buf[0] = one[0]
            n = 1
            while n < len(buf) and poller.poll(0) and serial.readinto(one):
                buf[n] = one[0]
                n += 1
            # Stamped on arrival: a PING's us= is the time its LF came in, not when the reply leaves.
            self.rig.rx(buf, n, self.hal.now_us())
            self.flush()

    async def run(self):
        self.reset(self.hal.reset_cause())
        await asyncio.gather(self.ticking(), self.link())
