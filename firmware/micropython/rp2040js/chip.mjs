// The Raspberry Pi Pico's RP2040 in rp2040js: the B1 mask ROM, MicroPython's uf2 in flash, the board's
// littlefs image at the rp2 port's filesystem offset, and a reset that keeps the flash (what a reset or
// the watchdog leaves of a real chip) and says why the chip restarted.
import { readFileSync } from 'node:fs';
import { RP2040 } from 'rp2040js';

export const FLASH_BASE = 0x10000000;
export const FS_OFFSET = 0xa0000; // RPI_PICO: 2 MiB flash less its 1408 KiB filesystem
const UF2_MAGIC = [0x0a324655, 0x9e5d5157, 0x0ab16f30];
export const WATCHDOG_REASON_TIMER = 1; // WATCHDOG_REASON: the watchdog timer ran out

/** The flash contents a uf2 file describes, written into `flash` (block payloads at their addresses). */
export function loadUf2(flash, data) {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  for (let at = 0; at + 512 <= data.length; at += 512) {
    if (UF2_MAGIC.some((m, i) => view.getUint32(at + [0, 4, 508][i], true) !== m)) {
      throw new Error(`not a uf2 file: bad magic in the block at byte ${at}`);
    }
    const target = view.getUint32(at + 12, true) - FLASH_BASE;
    const size = view.getUint32(at + 16, true);
    flash.set(data.subarray(at + 32, at + 32 + size), target);
  }
}

/** The files of the board, read once: the mask ROM, the flash as the lab flashed it. */
export function boardImage({ bootrom, uf2, fs }) {
  const rom = readFileSync(bootrom);
  if (rom.length !== 16384) {
    throw new Error(`${bootrom}: an RP2040 B1 bootrom is 16384 bytes, not ${rom.length}`);
  }
  const flash = new Uint8Array(2 * 1024 * 1024).fill(0xff);
  loadUf2(flash, readFileSync(uf2));
  if (fs) {
    const image = readFileSync(fs);
    if (FS_OFFSET + image.length > flash.length) {
      throw new Error(`${fs}: ${image.length} bytes do not fit in the flash after 0x${FS_OFFSET.toString(16)}`);
    }
    flash.set(image, FS_OFFSET);
  }
  return { rom: new Uint32Array(rom.buffer.slice(rom.byteOffset, rom.byteOffset + rom.length)), flash };
}

/** A chip powered on or reset: a fresh RP2040 (its own simulation clock from 0) with the flash as it is
 * now (kept across resets). */
export function powerOn(image, watchdogReason = 0) {
  const chip = new RP2040();
  chip.logger = { debug() {}, info() {}, warn() {}, error: (c, m) => process.stderr.write(`${c}: ${m}\n`) };
  chip.loadBootrom(image.rom);
  chip.flash.set(image.flash);
  image.flash = chip.flash; // what MicroPython writes to its filesystem survives the next reset
  chip.peripherals[0x40058].reason = watchdogReason; // WATCHDOG_REASON, read by machine.reset_cause()
  chip.core.PC = FLASH_BASE;
  return chip;
}
