// The Raspberry Pi Pico of the simulated rig as a lab flashes it: stock MicroPython's uf2 and the board's
// littlefs image on an emulated RP2040 (rp2040js), wired to the plant's virtual wires (docs/plant.md) by
// the rig's pin map (board.mjs), its USB CDC port on this process's stdin and stdout (the simulation's
// SerialBridge puts it on a pty).
//
//   node harness.mjs --plant SOCKET --uf2 firmware.uf2 --bootrom rp2040-bootrom-b1.bin --fs fs.img
//                    [--stats PATH] [--profile PATH] [--control PATH]
//
// One clock. When the plant paces (stepped and accelerated runs, "M 0"), each sample's time is the chip's
// target: the core runs exactly the cycles up to it, then the harness asks for the next sample with the
// outputs as the PWM slices drive them; nothing depends on the host's load. When the firmware paces ("M 1"),
// the chip runs against the wall clock (never ahead of it) and exchanges with the plant every 100 ms of
// its own time; --stats says how many simulated seconds it ran per wall second.
// A reset (the plant's "R <cause>", or the chip's watchdog) powers on a fresh chip with the same flash; the
// watchdog's reset leaves WATCHDOG_REASON set, which MicroPython's machine.reset_cause() reads.
// The plant's "P <channel> <0|1>" (pwm-error) makes that output's PWM slice fail, or work again
// (board.mjs), on this chip and on the chips after a reset.
// A test drives the USB host through --control: on SIGUSR2 the harness reads that JSON file, removes it
// (the test waits for that), and applies it at the next plant sample, so a stepped run is the same run:
// {"usb_host_frozen_s": N} makes the host stop taking the device's IN transfers for N s of chip time;
// {"usb_unplugged_s": N} pulls the USB cable for N s (the Pico powered by the rig), then plugs it back.
// {"ram_dump": PATH} writes the chip's 264 KiB of SRAM (from 0x20000000) to PATH at once, before the file
// goes: what the heap holds, read from outside without costing the firmware a cycle.
// Prints {"t0_unix_us": ..., "ppm": 0, "offset_us": 0} on stderr once its clock runs.
import { readFileSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import net from 'node:net';
import { Board, WiringError } from './board.mjs';
import { CdcHost } from './cdc.mjs';
import { boardImage, powerOn, WATCHDOG_REASON_TIMER } from './chip.mjs';
import { Runner } from './run.mjs';

const TICK_NS = 100_000_000; // the plant's step
const WATCHDOG_CAUSE = 1024; // the plant's reset cause for a watchdog reset (FAULT_WATCHDOG)
const SLICE_NS = 2_000_000; // how much chip time runs between looks at the sockets
const MAX_BEHIND_NS = 200_000_000; // real time: how far the chip may fall behind the wall clock and catch up

function options(argv) {
  const opts = { plant: null, uf2: null, bootrom: null, fs: null, stats: null, profile: null, control: null };
  for (let i = 2; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in opts) || i + 1 >= argv.length) {
      throw new Error('usage: node harness.mjs --plant SOCKET --uf2 UF2 --bootrom BIN --fs IMG [--stats PATH] [--profile PATH] [--control PATH]');
    }
    opts[key] = argv[i + 1];
  }
  for (const key of ['plant', 'uf2', 'bootrom']) if (!opts[key]) throw new Error(`--${key} is required`);
  return opts;
}

/** The plant's socket as lines: send(line), and next() resolving to the next line (null once closed). */
function plantLines(path) {
  const sock = net.createConnection(path);
  let buf = '';
  const lines = [];
  const waiting = [];
  let closed = false;
  sock.setEncoding('ascii');
  sock.on('data', (chunk) => {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (waiting.length) waiting.shift()(line);
      else lines.push(line);
    }
  });
  const end = () => {
    closed = true;
    while (waiting.length) waiting.shift()(null);
  };
  sock.on('close', end);
  sock.on('error', end);
  return {
    ready: new Promise((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); }),
    send: (line) => sock.write(line + '\n'),
    next: () => (lines.length ? Promise.resolve(lines.shift()) : closed ? Promise.resolve(null) : new Promise((r) => waiting.push(r))),
  };
}

class Pico {
  constructor(opts) {
    this.opts = opts;
    this.image = boardImage(opts);
    this.wallStart = process.hrtime.bigint();
    this.simBeforeNs = 0; // chip time of the chips before this one (resets)
    this.totals = { cycles: 0, idleNs: 0, resets: 0 };
    this.usb = { unplugs: 0, opens: 0 }; // cable pulls applied, and the host's opens of the port (enumerated, DTR set)
    this.profile = opts.profile ? new Map() : null;
    this.host = []; // host bytes that came before the USB device was up
    this.announced = false;
    this.onOutput = () => {};
    this.answers = { n: 0, max: 0, sum: 0 }; // answers to the host while the plant was held
    this.lateNs = 0; // real time: wall time the chip did not keep up with (given up, not caught up)
    this.bootNs = null; // chip time from power-on to its first word on USB (EVT BOOT)
    this.firstTelNs = null; // ... and to its first telemetry frame
    this.control = null; // the test's request (--control), applied at the next sample
    this.pwmFailing = [false, false, false]; // the plant's pwm-error, per channel: outlives a reset
    this.fromHost = (data) => this.cdc.send(data); // the paced loop holds bytes back while it runs ahead
  }

  power(watchdog) {
    if (this.runner) {
      this.simBeforeNs += this.runner.nanos;
      this.totals.cycles += this.runner.cycles;
      this.totals.idleNs += this.runner.idleNs;
      this.runner.stopped = true;
      this.totals.resets += 1;
    }
    const chip = powerOn(this.image, watchdog ? WATCHDOG_REASON_TIMER : 0);
    const clock = chip.clock;
    this.runner = new Runner(chip, clock);
    this.runner.samples = this.profile;
    this.board = new Board(chip, () => clock.nanos);
    this.pwmFailing.forEach((failing, channel) => failing && this.board.pwmError(channel, true)); // a fresh chip's slice fails too
    const runner = this.runner;
    this.cdc = new CdcHost(chip.usbCtrl, (ns, fn) => runner.at(runner.nanos + ns, fn), () => runner.nanos);
    this.cdc.onConnected = () => (this.usb.opens += 1);
    this.cdc.onData = (data) => {
      writeSync(1, data);
      const now = this.simBeforeNs + this.runner.nanos;
      if (this.bootNs === null) this.bootNs = now;
      if (this.firstTelNs === null && Buffer.from(data).includes(' TEL ')) this.firstTelNs = now;
      this.onOutput();
    };
    this.watchdogBit = false;
    const wdog = chip.peripherals[0x40058];
    wdog.onWatchdogTrigger = () => {
      this.watchdogBit = true;
      this.runner.stopped = true; // the chip resets: nothing after this instruction runs
      // The reset stops the watchdog. Left running, rp2040js's alarm at a count of 0 fires again at once,
      // forever, within the same clock tick: the harness hung at the first watchdog reset of a chip.
      wdog.alarm.enable = false;
    };
  }

  /** The plant's sample: sensors now, the tach pulses spread over the span the chip runs next. */
  sample(parts, spanNs) {
    const [, , w0, w1, w2, w3, sht, t0, t1] = parts;
    if (this.control) this.apply(this.control);
    this.control = null;
    this.board.sample([w0, w1, w2, w3], sht);
    const start = this.runner.nanos;
    [t0, t1].forEach((n, fan) => {
      const pulses = parseInt(n, 10);
      for (let k = 0; k < pulses; k++) {
        this.runner.at(start + ((k + 0.25) * spanNs) / pulses, () => this.board.tach(fan, false));
        this.runner.at(start + ((k + 0.75) * spanNs) / pulses, () => this.board.tach(fan, true));
      }
    });
  }

  /** The plant's "P <channel> <0|1>": that PWM channel's slice fails (or works again) from now on. Returns
   * next, the line after it. */
  pwmError(line, next) {
    const [, channel, on] = line.split(' ');
    const ch = parseInt(channel, 10);
    if (!(ch >= 0 && ch < this.pwmFailing.length)) throw new Error(`bad plant message: ${line}`);
    this.pwmFailing[ch] = on === '1';
    this.board?.pwmError(ch, this.pwmFailing[ch]);
    return next;
  }

  /** The test's request: the USB host stops reading for a while (chip time). */
  apply(control) {
    const frozenNs = (control.usb_host_frozen_s ?? 0) * 1e9;
    if (frozenNs > 0) {
      const cdc = this.cdc;
      cdc.freeze();
      this.runner.at(this.runner.nanos + frozenNs, () => cdc.thaw());
    }
    const unpluggedNs = (control.usb_unplugged_s ?? 0) * 1e9;
    if (unpluggedNs > 0) {
      const cdc = this.cdc;
      cdc.unplug();
      this.usb.unplugs += 1;
      this.runner.at(this.runner.nanos + unpluggedNs, () => cdc.replug());
    }
  }

  outputsLine() {
    return 'A ' + this.board.outputs().join(' ');
  }

  announce() {
    if (this.announced) return;
    this.announced = true;
    process.stderr.write(`{"t0_unix_us": ${Math.round(Date.now() * 1000)}, "ppm": 0.0, "offset_us": 0}\n`);
  }

  /** The chip's first word after host bytes came while the plant was held: how long it took (chip time). */
  answered(ns) {
    this.answers.n += 1;
    this.answers.max = Math.max(this.answers.max, ns);
    this.answers.sum += ns;
  }

  stats() {
    const r = this.runner;
    const wall = Number(process.hrtime.bigint() - this.wallStart) / 1e9;
    const sim = (this.simBeforeNs + r.nanos) / 1e9;
    return {
      sim_s: sim,
      wall_s: wall,
      sim_per_wall: wall > 0 ? sim / wall : 0,
      cycles: this.totals.cycles + r.cycles,
      idle_s: (this.totals.idleNs + r.idleNs) / 1e9,
      resets: this.totals.resets,
      late_s: this.lateNs / 1e9,
      boot_s: this.bootNs / 1e9,
      first_telemetry_s: this.firstTelNs / 1e9,
      answer_ms_mean: this.answers.n ? this.answers.sum / this.answers.n / 1e6 : 0,
      answer_ms_max: this.answers.max / 1e6,
      clk_sys_hz: r.chip.clkSys,
      usb_unplugs: this.usb.unplugs,
      usb_opens: this.usb.opens,
    };
  }

  writeStats() {
    if (this.opts.stats) writeFileSync(this.opts.stats, JSON.stringify(this.stats()) + '\n');
  }

  writeProfile() {
    if (!this.profile) return;
    const pcs = [...this.profile.entries()].sort((a, b) => b[1] - a[1]);
    writeFileSync(this.opts.profile, JSON.stringify({ every: 1, ...this.stats(), pcs }) + '\n');
  }
}

async function boot(pico, wires, cause) {
  wires.send('B');
  const line = await wires.next();
  if (line === null) return null;
  const [kind, realtime, plantCause] = line.split(' ');
  if (kind !== 'M') throw new Error(`bad plant message at boot: ${line}`);
  pico.power(cause === WATCHDOG_CAUSE || parseInt(plantCause, 10) === WATCHDOG_CAUSE);
  return realtime === '1';
}

/** The plant paces: run each sample's span, then ask for the next. While the plant holds its next
 * sample back (a stepped test between two advances) and the host has written, the chip runs ahead of
 * the plant to answer it, as a firmware with its own clock would: GRANT_NS of chip time at a time, again
 * while it has written nothing since, never more than LEAD_NS past the plant's time. The next samples'
 * spans then run only what the chip is behind. */
const GRANT_NS = 10_000_000;
const LEAD_NS = 2_000_000_000;
const BOOT_LIMIT_NS = 10_000_000_000; // a firmware that says nothing for 10 s of chip time: go on without it

async function paced(pico, wires) {
  let base = null; // plant time (ns) at the chip's power-on
  let plantNs = 0;
  let hostAt = null; // chip time when the chip got the host's last bytes while the plant held back
  let grantUntil = 0;
  let lastOut = -1;
  let waiting = false;
  let lastStats = -Infinity;
  const held = []; // host bytes that came during a grant: the chip gets them when it ends, at a known time
  // A reset powers on a fresh chip, its clock from 0: nothing of the old chip's run-ahead carries over
  // (a grant or a last word in the old chip's time would let the new one run up to LEAD_NS ahead).
  const reboot = async (cause) => {
    const realtime = await boot(pico, wires, cause);
    hostAt = null;
    grantUntil = 0;
    lastOut = -1;
    return realtime;
  };
  const chipOut = pico.onOutput;
  pico.onOutput = () => {
    if (hostAt !== null && lastOut < hostAt) pico.answered(pico.runner.nanos - hostAt);
    lastOut = pico.runner.nanos;
    chipOut();
  };
  let wake = null;
  const early = pico.host.splice(0); // host bytes from before the chip's power-on run: it gets them after its first span
  pico.fromHost = (data) => {
    if (base === null) return early.push(...data);
    if (!waiting) return pico.cdc.send(data);
    held.push(...data);
    if (wake) wake();
  };
  const runAhead = async () => {
    // Between samples: answer the host, in slices, looking at the sockets between them. Host bytes reach
    // the chip only where a grant ends, so the chip's time of their arrival does not depend on the host's.
    while (waiting) {
      const r = pico.runner;
      const cap = plantNs - base + LEAD_NS;
      if (r.nanos >= grantUntil || r.nanos >= cap) {
        if (held.length) {
          pico.cdc.send(held.splice(0));
          hostAt = r.nanos;
          grantUntil = r.nanos + GRANT_NS;
        } else if (hostAt !== null && lastOut < hostAt && r.nanos < cap) {
          grantUntil = r.nanos + GRANT_NS; // nothing written since: keep going
        } else {
          await new Promise((res) => (wake = res));
          wake = null;
        }
        continue;
      }
      r.runUntil(Math.min(grantUntil, cap, r.nanos + SLICE_NS));
      if (pico.watchdogBit) return;
      await new Promise((res) => setImmediate(res));
    }
  };
  for (;;) {
    wires.send(pico.outputsLine());
    waiting = true;
    const ahead = runAhead();
    let line = await wires.next();
    while (line !== null && line.startsWith('P ')) line = pico.pwmError(line, await wires.next());
    waiting = false;
    if (wake) wake();
    await ahead;
    // A grant the sample cut short runs to its end (and on, while the chip has not answered), whenever the
    // sample came: what the chip does before this step does not depend on when the plant answered.
    for (;;) {
      const r = pico.runner;
      const cap = plantNs - base + LEAD_NS;
      if (pico.watchdogBit || base === null) break;
      if (r.nanos < Math.min(grantUntil, cap)) r.runUntil(Math.min(grantUntil, cap));
      else if (hostAt !== null && lastOut < hostAt && r.nanos < cap) grantUntil = r.nanos + GRANT_NS;
      else break;
    }
    hostAt = null;
    if (held.length) pico.cdc.send(held.splice(0));
    if (line === null) return;
    if (pico.watchdogBit) {
      // The watchdog bit while running ahead: the reset happens now, this sample goes to the new chip.
      const at = base + pico.runner.nanos;
      if ((await reboot(WATCHDOG_CAUSE)) === null) return;
      base = at;
    }
    if (line.startsWith('R ')) {
      if ((await reboot(parseInt(line.slice(2), 10))) === null) return;
      base = plantNs;
      continue;
    }
    const parts = line.split(' ');
    if (parts[0] !== 'S' || parts.length !== 9) throw new Error(`bad plant message: ${line}`);
    plantNs = parseInt(parts[1], 10) * 1000;
    await new Promise((r) => setImmediate(r)); // host bytes already here go in before this span runs
    pico.sample(parts, TICK_NS);
    if (base === null) {
      // Power-on: the chip boots with the plant's first sample held, up to its first telemetry frame, as a
      // Pico is plugged in before the host opens its port; its clock is ahead of the plant's from then on.
      // The clock is announced once the rig answers.
      while (pico.firstTelNs === null && pico.runner.nanos < BOOT_LIMIT_NS && !pico.watchdogBit) {
        pico.runner.runUntil(pico.runner.nanos + SLICE_NS);
      }
      // Its ticks then fall mid-step (half a step before each sample's time), not on the samples' edges,
      // where the work of a busier tick would push a frame from one step into the next.
      base = plantNs - pico.runner.nanos + TICK_NS / 2;
      pico.board.outputs(); // the PWM outputs as the plant will read them: a wiring mistake stops us here
      pico.profile?.clear(); // the profile is of the running firmware, not of its boot
      pico.announce();
    }
    while (pico.runner.nanos < plantNs - base) {
      pico.runner.runUntil(plantNs - base);
      if (pico.watchdogBit) {
        const at = base + pico.runner.nanos;
        if ((await reboot(WATCHDOG_CAUSE)) === null) return;
        base = at;
      }
    }
    // Host bytes from before the power-on run reach the chip as those that come while it waits for the
    // next sample: where it stands after this span, whenever the host wrote them (the host opens its port
    // when it will; a Pico is plugged in before).
    if (early.length) held.push(...early.splice(0));
    if (plantNs - lastStats >= 1e9) {
      lastStats = plantNs;
      pico.writeStats(); // once a simulated second: a file write per step costs the step's time
    }
  }
}

/** The firmware paces: the chip runs against the wall clock, never ahead of it. */
async function realtime(pico, wires) {
  let anchor = null; // [chip ns, wall ns]
  let nextSample = 0;
  let lastStats = 0;
  const wallNs = () => Number(process.hrtime.bigint());
  for (;;) {
    const r = pico.runner;
    if (r.nanos >= nextSample) {
      wires.send(pico.outputsLine());
      let line = await wires.next();
      while (line !== null && line.startsWith('P ')) line = pico.pwmError(line, await wires.next());
      if (line === null) return;
      if (line.startsWith('R ')) {
        if ((await boot(pico, wires, parseInt(line.slice(2), 10))) === null) return;
        anchor = null;
        nextSample = 0;
        continue;
      }
      const parts = line.split(' ');
      if (anchor === null) {
        anchor = [r.nanos, wallNs()];
        pico.announce();
      }
      pico.sample(parts, TICK_NS);
      nextSample += TICK_NS;
    }
    let allowed = anchor[0] + (wallNs() - anchor[1]);
    if (allowed - r.nanos > MAX_BEHIND_NS) {
      // Too slow for real time (a busy host, or busy code): the chip's clock falls behind the wall's and
      // stays behind (re-anchored), rather than running faster than real time to catch up.
      pico.lateNs += allowed - r.nanos;
      anchor = [r.nanos, wallNs()];
      allowed = r.nanos;
    }
    const target = Math.min(nextSample, allowed, r.nanos + SLICE_NS);
    if (target > r.nanos) r.runUntil(target);
    if (pico.watchdogBit) {
      if ((await boot(pico, wires, WATCHDOG_CAUSE)) === null) return;
      anchor = null;
      nextSample = 0;
      continue;
    }
    if (wallNs() - lastStats > 1e9) {
      lastStats = wallNs();
      pico.writeStats();
    }
    const ahead = r.nanos - (anchor[0] + (wallNs() - anchor[1]));
    if (ahead > 1e6) await new Promise((res) => setTimeout(res, ahead / 1e6));
    else await new Promise((res) => setImmediate(res));
  }
}

async function main() {
  const opts = options(process.argv);
  const pico = new Pico(opts);
  const wires = plantLines(opts.plant);
  await wires.ready;
  const stdin = new net.Socket({ fd: 0, readable: true, writable: false });
  stdin.on('data', (data) => (pico.cdc ? pico.fromHost(data) : pico.host.push(...data)));
  stdin.on('error', () => {});
  const stop = () => {
    pico.writeStats();
    pico.writeProfile();
    process.exit(0);
  };
  process.on('SIGUSR2', () => {
    if (!opts.control) return;
    const request = JSON.parse(readFileSync(opts.control, 'utf8'));
    if (request.ram_dump) writeFileSync(request.ram_dump, pico.runner.chip.sram);
    pico.control = request;
    unlinkSync(opts.control);
  });
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const rt = await boot(pico, wires, 0);
  if (rt === null) return stop();
  if (rt && pico.host.length) pico.fromHost(pico.host.splice(0)); // the paced loop takes them itself
  await (rt ? realtime(pico, wires) : paced(pico, wires));
  stop();
}

main().catch((err) => {
  process.stderr.write(`${err instanceof WiringError ? err.message : err.stack}\n`);
  process.exit(err instanceof WiringError ? 3 : 1);
});
