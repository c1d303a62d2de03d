// Running the emulated core for a span of its own time, with the board's timed events (tach edges) in
// between. Time the core spends waiting for an interrupt or event (WFI/WFE) costs no emulation: the clock
// jumps to the next hardware alarm (a timer, a USB transfer, the watchdog) or board event, whichever
// comes first. The counts say where the time went: cycles executed, time skipped waiting.
export class Runner {
  constructor(chip, clock) {
    this.chip = chip;
    this.clock = clock;
    this.events = []; // [ns, fn], in time order
    this.stopped = false; // set by a reset (the watchdog): runUntil returns at once
    this.cycles = 0; // executed on this chip
    this.idleNs = 0; // skipped while the core waited
    this.samples = null; // PC -> count, when profiling
    this.sampleEvery = 64;
  }

  get nanos() {
    return this.clock.nanos;
  }

  at(ns, fn) {
    let i = this.events.length;
    while (i > 0 && this.events[i - 1][0] > ns) i--;
    this.events.splice(i, 0, [ns, fn]);
  }

  runUntil(target) {
    const { chip, clock } = this;
    const core = chip.core;
    let countdown = this.sampleEvery;
    while (clock.nanos < target && !this.stopped) {
      while (this.events.length && this.events[0][0] <= clock.nanos) this.events.shift()[1]();
      const limit = this.events.length ? Math.min(target, this.events[0][0]) : target;
      if (core.waiting) {
        const room = limit - clock.nanos;
        const alarm = clock.nextAlarm ? clock.nextAlarm.nanos - clock.nanos : room;
        const skip = Math.max(0, Math.min(alarm, room));
        clock.tick(skip);
        this.idleNs += skip;
        continue;
      }
      const cycleNs = 1e9 / chip.clkSys;
      for (let i = 0; i < 4096 && !core.waiting && clock.nanos < limit && !this.stopped; i++) {
        if (this.samples && --countdown === 0) {
          countdown = this.sampleEvery;
          const pc = core.PC;
          this.samples.set(pc, (this.samples.get(pc) || 0) + 1);
        }
        const cycles = core.executeInstruction();
        this.cycles += cycles;
        clock.tick(cycles * cycleNs);
      }
    }
    if (!this.stopped) {
      while (this.events.length && this.events[0][0] <= clock.nanos) this.events.shift()[1]();
    }
  }
}
