// The host's side of the Pico's USB CDC port: enumerates the device as rp2040js's USBCDC does, then
// carries the link. Unlike rp2040js's USBCDC, an OUT transfer the device arms waits until the host has
// bytes to send, as a real host's does (answering it at once with zero bytes, every 10 us, keeps the core
// awake handling empty transfers). Bytes the device writes go to `onData`.
// A host that keeps the port open but stops reading (`freeze`): the device's IN transfers are not
// completed (NAKed, as a real host does while nobody reads), so the device's transmit buffer fills; when
// the host reads again (`thaw`) the pending transfer completes and its bytes arrive.
import { DescriptorType, getDescriptorPacket, setDeviceAddressPacket, setDeviceConfigurationPacket, createSetupPacket, DataDirection, SetupType, SetupRecipient } from 'rp2040js';

const CDC_SET_CONTROL_LINE_STATE = 0x22;
const DTR_RTS = 3;
const CONFIG_DESCRIPTOR_SIZE = 9;
const CDC_DATA_CLASS = 10;
const SIE_CONNECTED = 1 << 16; // rp2040js's USB controller, SIE_STATUS
const SIE_VBUS_DETECTED = 1 << 0;
const SIE_SUSPENDED = 1 << 4;
const SIE_STATUS = 0x50;
const SUSPEND_NS = 3_000_000; // a bus idle this long is suspended (USB 2.0, 7.1.7.6)
const SOF_RD = 0x48; // reading it clears INTR_DEV_SOF, as on the chip
const INTR_DEV_SOF = 1 << 17;
const SOF_NS = 1_000_000; // a full-speed frame
const SOFS_AFTER_OPEN = 32; // the frames the host starts after it opens the port (MicroPython flushes on the 16th)

function bulkEndpoints(descriptors) {
  const found = { in: -1, out: -1 };
  let cdcData = false;
  for (let i = 0; i + 1 < descriptors.length && descriptors[i] >= 2; i += descriptors[i]) {
    const len = descriptors[i];
    const type = descriptors[i + 1];
    if (type === DescriptorType.Interface && len === 9) {
      cdcData = descriptors[i + 4] === 2 && descriptors[i + 5] === CDC_DATA_CLASS;
    }
    if (cdcData && type === DescriptorType.Endpoint && len === 7 && (descriptors[i + 3] & 3) === 2) {
      const address = descriptors[i + 2];
      found[address & 0x80 ? 'in' : 'out'] = address & 0xf;
    }
  }
  return found;
}

export class CdcHost {
  /** `later(ns, fn)`: run fn after ns of chip time; `now()`: the chip's time in ns. */
  constructor(usb, later, now) {
    this.usb = usb;
    this.later = later;
    this.now = now;
    this.tx = []; // bytes for the device, oldest first
    this.pendingRead = 0; // the size of an OUT transfer the device armed and the host has not answered
    this.configSize = null;
    this.descriptors = [];
    this.endpoints = { in: -1, out: -1 };
    this.connected = false;
    this.onData = () => {};
    this.onConnected = () => {};
    this.frozen = false;
    this.plugged = true;
    this.heldIn = []; // IN transfers the frozen host has not taken: [endpoint, buffer] (data) or [endpoint] (completion)
    const complete = usb.indicateBufferReady.bind(usb);
    this.complete = complete;
    usb.indicateBufferReady = (endpoint, out) => {
      if (this.frozen && !out && endpoint === this.endpoints.in) this.heldIn.push([endpoint]);
      else complete(endpoint, out);
    };
    const read = usb.readUint32.bind(usb);
    usb.readUint32 = (offset) => {
      if (offset === SOF_RD && !usb.hostMode) {
        usb.intRaw &= ~INTR_DEV_SOF;
        usb.checkInterrupts();
        // A host on the bus sends a start-of-frame marker every millisecond: the frame number follows the
        // chip's clock while the cable is in (the markers themselves are not sent: each would wake the core)
        // and stands still while it is out.
        if (this.plugged) usb.sofFrameNumber = Math.floor(this.now() / SOF_NS) & 0x7ff;
      }
      return read(offset);
    };
    // SIE_STATUS.SUSPENDED is write-1-to-clear on the chip (rp2040js keeps it set, which would raise the
    // suspend interrupt for ever once set).
    const write = usb.writeUint32.bind(usb);
    usb.writeUint32 = (offset, value) => {
      if (offset === SIE_STATUS && usb.rawWriteValue & SIE_SUSPENDED) {
        usb.sieStatus &= ~SIE_SUSPENDED;
        usb.sieStatusUpdated();
      }
      write(offset, value);
    };
    usb.onUSBEnabled = () => usb.resetDevice();
    usb.onResetReceived = () => usb.sendSetupPacket(setDeviceAddressPacket(1));
    usb.onEndpointWrite = (endpoint, buffer) => this.written(endpoint, buffer);
    usb.onEndpointRead = (endpoint, size) => {
      if (this.plugged && endpoint === this.endpoints.out) {
        this.pendingRead = size;
        this.flush();
      }
    };
  }

  written(endpoint, buffer) {
    if (!this.plugged) return; // nobody on the bus
    if (endpoint === 0 && buffer.length === 0) {
      if (this.configSize == null) {
        this.usb.sendSetupPacket(getDescriptorPacket(DescriptorType.Configration, CONFIG_DESCRIPTOR_SIZE));
      } else if (!this.connected) {
        this.connected = true;
        this.usb.sendSetupPacket(createSetupPacket({
          dataDirection: DataDirection.HostToDevice, type: SetupType.Class, recipient: SetupRecipient.Device,
          bRequest: CDC_SET_CONTROL_LINE_STATE, wValue: DTR_RTS, wIndex: 0, wLength: 0,
        }));
        this.onConnected();
        this.frames(SOFS_AFTER_OPEN);
      }
    } else if (endpoint === 0) {
      if (buffer.length === CONFIG_DESCRIPTOR_SIZE && buffer[1] === DescriptorType.Configration && this.configSize == null) {
        this.configSize = (buffer[3] << 8) | buffer[2];
        this.usb.sendSetupPacket(getDescriptorPacket(DescriptorType.Configration, this.configSize));
      } else if (this.configSize != null && this.descriptors.length < this.configSize) {
        this.descriptors.push(...buffer);
      }
      if (this.configSize != null && this.descriptors.length === this.configSize && this.endpoints.in < 0) {
        this.endpoints = bulkEndpoints(this.descriptors);
        this.usb.sendSetupPacket(setDeviceConfigurationPacket(1));
      }
    } else if (endpoint === this.endpoints.in) {
      if (this.heldIn.length) this.heldIn.push([endpoint, buffer]);
      else this.onData(buffer);
    }
  }

  /** Start-of-frame markers, one per millisecond. A real host sends them always; these come only for a
   * while after the port is opened (each wakes the core), which is when MicroPython waits for them: it sends
   * what it buffered while nobody had the port open on the 16th frame after DTR. */
  frames(n) {
    if (n <= 0 || !this.plugged) return;
    this.later(SOF_NS, () => {
      if (!this.plugged) return;
      this.usb.sofFrameNumber = Math.floor(this.now() / SOF_NS) & 0x7ff;
      this.usb.intRaw |= INTR_DEV_SOF;
      this.usb.checkInterrupts();
      this.frames(n - 1);
    });
  }

  /** The host stops taking the device's IN transfers (its port open, nobody reading). */
  freeze() {
    this.frozen = true;
  }

  /** The host reads again: what it held back arrives, the pending transfer completes. */
  thaw() {
    this.frozen = false;
    for (const [endpoint, buffer] of this.heldIn.splice(0)) {
      if (buffer) this.onData(buffer);
      else this.complete(endpoint, false);
    }
  }

  /** The cable is pulled: no host on the bus (VBUS gone), nothing taken or sent; bytes in flight are lost. */
  unplug() {
    this.plugged = false;
    this.frozen = true;
    this.heldIn = [];
    this.tx = [];
    this.pendingRead = 0;
    this.usb.sieStatus &= ~(SIE_CONNECTED | SIE_VBUS_DETECTED);
    this.usb.sieStatusUpdated();
    // No start-of-frame markers any more: after 3 ms of an idle bus the SIE reports it suspended. A Pico's
    // VBUS is not wired to the USB controller (MicroPython forces VBUS detect on), so this is all the device
    // learns of a pulled cable.
    this.later(SUSPEND_NS, () => {
      if (this.plugged) return;
      this.usb.sieStatus |= SIE_SUSPENDED;
      this.usb.sieStatusUpdated();
    });
  }

  /** The cable is back: VBUS, a bus reset, and the host enumerates the device and opens the port again. */
  replug() {
    this.plugged = true;
    this.frozen = false;
    this.heldIn = [];
    this.configSize = null;
    this.descriptors = [];
    this.endpoints = { in: -1, out: -1 };
    this.connected = false;
    this.usb.sieStatus |= SIE_VBUS_DETECTED;
    this.usb.sieStatusUpdated();
    this.usb.resetDevice();
  }

  /** Bytes from the host: sent in the device's next OUT transfer (now, if it has one armed). */
  send(bytes) {
    if (!this.plugged) return;
    for (const b of bytes) this.tx.push(b);
    this.flush();
  }

  flush() {
    if (!this.pendingRead || !this.tx.length) return;
    const chunk = Uint8Array.from(this.tx.splice(0, this.pendingRead));
    this.pendingRead = 0;
    this.usb.endpointReadDone(this.endpoints.out, chunk);
  }
}
