// The rig's wiring around the Pico (hardware/README.md), independent of main.py's pin map: the four
// MAX31855 on SPI0 behind their own chip selects, the SHT31 on I2C0, the heater and fan PWM outputs, the
// fans' tach lines. The chips answer with what the plant's last sample said, as they answer the bus they
// are driven by: read in another SPI mode than 0 a MAX31855's word arrives a bit late, and clocked past its
// 5 MHz its bits come garbled (bring-up names both). What no chip could answer at all (the SHT31's
// address and command aside, which it NAKs) stops the simulation with one line (WiringError): chips on
// the wrong pins, two chip selects low at once, PWM frequencies the heater's switch or the fans cannot take.
// A PWM slice can be made to fail (the plant's pwm-error): its channel's compare level stays 0, whatever
// is written to it, so its output stops, and the level the firmware reads back is not the one it wrote.
import { I2CMode } from 'rp2040js';

export const TC_CS = [17, 20, 21, 22]; // GPIO of thermocouple channel 0..3
export const SPI0_SCK = 18;
export const SPI0_MISO = 16;
export const I2C0_SDA = 4;
export const I2C0_SCL = 5;
export const SHT31_ADDR = 0x44;
export const HEATER = 10;
export const FANS = [6, 7];
export const TACHS = [8, 9];
const FUNC_SPI = 1;
const FUNC_I2C = 3;
const FUNC_PWM = 4;
const FUNC_SIO = 5;
const MAX31855_MAX_HZ = 5_000_000;
const SHT3X_MAX_HZ = 1_000_000;
const SHT3X_COMMANDS = ['2400', '240b', '2416']; // single shot, no clock stretching
export const SHT3X_CONVERSION_NS = 15_500_000; // high repeatability, datasheet maximum
const FAN_HZ = [21_000, 28_000];
const HEATER_HZ = [1, 1_000];
const NO_CHIP = [0xff, 0xff, 0xff, 0xff]; // MISO undriven
const PWM_OUTPUTS = [HEATER, FANS[0], FANS[1]]; // the plant's pwm-error channels 0-2
const CC = 0x0c; // a slice's compare register, within its 0x14 bytes: channel A's level low, B's high

/** xorshift32: which bits of an overclocked read come unstable, the same sequence on every run. */
function xorshift(state) {
  let x = state;
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  return x >>> 0;
}

/** The 32-bit word a MAX31855 puts on SO as this bus reads it. SCK's idle level or clock phase other than
 * mode 0 samples SO on the falling edge, the edge on which the chip shifts its next bit out (SO valid up to
 * 40 ns after it; nothing holds the old bit), or after it (mode 3): each bit a clock late, D31 lost and
 * MISO's pull-up read last. Past 5 MHz SO is sampled while it still changes: a quarter of the bits, at
 * random, read as the bit before them. jitter(): the next random 32 bits. */
export function busWord(word, mode, hz, jitter) {
  let w = word >>> 0;
  if (hz > MAX31855_MAX_HZ) {
    const late = (jitter() & jitter()) >>> 0;
    const before = ((w >>> 1) | (w & 0x80000000)) >>> 0;
    w = ((w & ~late) | (before & late)) >>> 0;
  }
  if (mode !== 0) w = ((w << 1) | 1) >>> 0;
  return w;
}

export class WiringError extends Error {}

function wiring(message) {
  throw new WiringError(`pico board: ${message}`);
}

function hex(s) {
  const out = [];
  for (let i = 0; i < s.length; i += 2) out.push(parseInt(s.slice(i, i + 2), 16));
  return out;
}

export class Board {
  /** chip: an RP2040 (rp2040js); now(): its clock in ns. */
  constructor(chip, now) {
    this.chip = chip;
    this.now = now;
    this.words = TC_CS.map(() => NO_CHIP); // no sample yet
    this.sht = null; // the SHT31's 6 bytes, or null when it does not answer
    this.shtDue = null; // a started measurement: when it is ready (ns)
    this.shtCommand = [];
    this.shtRead = 0;
    this.shtReading = false;
    this.shifted = TC_CS.map(() => 0); // bytes each MAX31855 has shifted out since its CS fell
    this.reading = TC_CS.map(() => NO_CHIP); // the word each is shifting out, as the bus reads it
    this.jitterState = 0x2545f491;
    this.pwmFailing = [false, false, false]; // heater, fan0, fan1: the plant's pwm-error
    this.wireSpi();
    this.wirePwm();
    this.wireI2c();
  }

  /** The plant's sample: the four thermocouple words (hex) and the SHT31's bytes (hex or '-'). */
  sample(words, sht) {
    this.words = words.map(hex);
    this.sht = sht === '-' ? null : hex(sht);
  }

  csLow(pin) {
    const g = this.chip.gpio[pin];
    return g.functionSelect === FUNC_SIO && g.outputEnable && !g.outputValue;
  }

  wireSpi() {
    const spi = this.chip.spi[0];
    TC_CS.forEach((pin, ch) => {
      this.chip.gpio[pin].addListener(() => {
        if (this.csLow(pin)) this.shifted[ch] = 0; // CS falls: the chip latches a conversion, MSB first
      });
    });
    spi.onTransmit = () => {
      const selected = TC_CS.map((pin, ch) => (this.csLow(pin) ? ch : -1)).filter((ch) => ch >= 0);
      if (selected.length > 1) wiring(`chip selects of thermocouples ${selected} low at once: their SO outputs fight on MISO`);
      if (!selected.length) return spi.completeTransmit(0xff);
      if (this.chip.gpio[SPI0_SCK].functionSelect !== FUNC_SPI || this.chip.gpio[SPI0_MISO].functionSelect !== FUNC_SPI) {
        wiring(`the MAX31855s' SCK and SO are on GP${SPI0_SCK} and GP${SPI0_MISO}: those pins are not SPI0's`);
      }
      if (spi.dataBits !== 8) wiring(`SPI with ${spi.dataBits}-bit words: the firmware reads the MAX31855 in bytes`);
      const ch = selected[0];
      const i = this.shifted[ch]++;
      if (i === 0) this.reading[ch] = this.read(ch, spi);
      spi.completeTransmit(i < 4 ? this.reading[ch][i] : 0);
    };
  }

  /** Thermocouple ch's word as the bus, in its mode and at its clock, reads it: four bytes. */
  read(ch, spi) {
    const [b0, b1, b2, b3] = this.words[ch];
    const word = ((b0 << 24) | (b1 << 16) | (b2 << 8) | b3) >>> 0;
    const jitter = () => (this.jitterState = xorshift(this.jitterState));
    const w = busWord(word, spi.spiMode, spi.clockFrequency, jitter);
    return [w >>> 24, (w >>> 16) & 0xff, (w >>> 8) & 0xff, w & 0xff];
  }

  /** The PWM slices: a failing channel's compare level is held at 0 (writes to it are lost). */
  wirePwm() {
    this.chip.pwm.channels.forEach((slice) => {
      const write = slice.writeRegister.bind(slice);
      slice.writeRegister = (offset, value) => write(offset, offset === CC ? this.heldLevel(slice.index, value) : value);
    });
  }

  /** The compare value slice index takes: its failing channels' halves at 0. */
  heldLevel(index, value) {
    let v = value >>> 0;
    PWM_OUTPUTS.forEach((pin, channel) => {
      if (this.pwmFailing[channel] && ((pin >> 1) & 7) === index) v &= pin & 1 ? 0x0000ffff : 0xffff0000;
    });
    return v >>> 0;
  }

  /** The plant's pwm-error: channel (0 heater, 1-2 fans) fails, or works again (its level then 0 until
   * the firmware writes one). */
  pwmError(channel, failing) {
    this.pwmFailing[channel] = failing;
    const slice = this.chip.pwm.channels[(PWM_OUTPUTS[channel] >> 1) & 7];
    slice.writeRegister(CC, slice.cc);
  }

  wireI2c() {
    const i2c = this.chip.i2c[0];
    i2c.onStart = () => i2c.completeStart();
    i2c.onConnect = (address, mode) => {
      const g = this.chip.gpio;
      if (g[I2C0_SDA].functionSelect !== FUNC_I2C || g[I2C0_SCL].functionSelect !== FUNC_I2C) {
        wiring(`the SHT31's SDA and SCL are on GP${I2C0_SDA} and GP${I2C0_SCL}: those pins are not I2C0's`);
      }
      const period = i2c.sclLowPeriod + i2c.sclHighPeriod;
      if (period && this.chip.clkPeri / period > SHT3X_MAX_HZ * 1.05) {
        wiring(`I2C at ${Math.round(this.chip.clkPeri / period)} Hz: the SHT31 takes up to ${SHT3X_MAX_HZ} Hz`);
      }
      if (address !== SHT31_ADDR || this.sht === null) return i2c.completeConnect(false); // nobody acknowledges
      if (mode === I2CMode.Read) {
        // Still converting (or nothing started): without clock stretching the SHT31 NAKs its address.
        if (this.shtDue === null || this.now() < this.shtDue) return i2c.completeConnect(false);
        this.shtDue = null;
        this.shtRead = 0;
        this.shtReading = true;
      } else {
        this.shtCommand = [];
        this.shtReading = false;
      }
      i2c.completeConnect(true);
    };
    i2c.onWriteByte = (value) => {
      this.shtCommand.push(value);
      const cmd = this.shtCommand.map((b) => b.toString(16).padStart(2, '0')).join('');
      if (this.shtCommand.length === 2 && !SHT3X_COMMANDS.includes(cmd)) return i2c.completeWrite(false);
      if (this.shtCommand.length > 2) return i2c.completeWrite(false);
      if (this.shtCommand.length === 2) this.shtDue = this.now() + SHT3X_CONVERSION_NS;
      i2c.completeWrite(true);
    };
    i2c.onReadByte = () => {
      const i = this.shtRead++;
      i2c.completeRead(this.sht && i < 6 ? this.sht[i] : 0xff);
    };
    i2c.onStop = () => i2c.completeStop();
  }

  /** An output in permille as the pin drives it: a PWM slice's level, a plain GPIO's, or undriven. */
  outputPm(pin, undrivenPm, hzRange, name) {
    const g = this.chip.gpio[pin];
    if (g.functionSelect === FUNC_PWM) {
      const slice = this.chip.pwm.channels[(pin >> 1) & 7];
      const b = pin & 1;
      const csr = slice.csr;
      const inverted = !!(csr & (b ? 8 : 4));
      const div = slice.div >= 16 ? slice.div : 256 << 4; // 8.4 fixed point; 0 is 256
      const periods = (slice.top + 1) * (csr & 2 ? 2 : 1); // phase-correct counts up and down
      const hz = (this.chip.clkSys * 16) / div / periods;
      if (!(csr & 1)) return inverted ? 1000 : 0; // slice disabled: the output stays low (inverted: high)
      if (hz < hzRange[0] || hz > hzRange[1]) {
        wiring(`${name} PWM (GP${pin}) at ${Math.round(hz)} Hz: it needs ${hzRange[0]}-${hzRange[1]} Hz`);
      }
      const level = b ? slice.cc >>> 16 : slice.cc & 0xffff;
      const pm = Math.round((Math.min(level, slice.top + 1) * 1000) / (slice.top + 1));
      return inverted ? 1000 - pm : pm;
    }
    if (g.functionSelect === FUNC_SIO && g.outputEnable) return g.outputValue ? 1000 : 0;
    return undrivenPm; // the heater stage's pull-down; a 4-wire fan runs full on an open PWM input
  }

  /** The actuators for the plant's "A" line. */
  outputs() {
    return [
      this.outputPm(HEATER, 0, HEATER_HZ, 'heater'),
      this.outputPm(FANS[0], 1000, FAN_HZ, 'fan0'),
      this.outputPm(FANS[1], 1000, FAN_HZ, 'fan1'),
    ];
  }

  /** A tach line: the fan's open collector pulls it low (level false) or lets it go; with no pull-up
   * on the pin, the line stays low and no edge is seen. */
  tach(fan, level) {
    const g = this.chip.gpio[TACHS[fan]];
    g.setInputValue(level && g.pullupEnabled);
  }
}
