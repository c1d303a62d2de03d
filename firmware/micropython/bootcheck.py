# Boot checks before the firmware proper, self-contained (no thermrig_fw import): a MicroPython too old
# for the firmware, or a module missing from the board, ends here with the heater off and a clear
# answer to every frame: "NAK <seq> BOOT <reason>", after one "EVT BOOTFAIL why=<reason>".
import sys

# `import asyncio` (not uasyncio) needs 1.21, the release that dropped the u-prefix from module names.
MIN_VERSION = (1, 21, 0)
REQUIRED = (
    "asyncio",
    "thermrig_fw.config",
    "thermrig_fw.frame",
    "thermrig_fw.pid",
    "thermrig_fw.fan",
    "thermrig_fw.safety",
    "thermrig_fw.max31855",
    "thermrig_fw.sht3x",
    "thermrig_fw.commands",
    "thermrig_fw.rig",
    "thermrig_fw.app",
)


def check(version=None, required=REQUIRED):
    """The reason the firmware cannot run here, or None."""
    version = tuple(version or sys.implementation.version[:3])
    if version < MIN_VERSION:
        return "micropython=%d.%d.%d<%d.%d.%d" % (version + MIN_VERSION)
    for name in required:
        try:
            __import__(name)
        except ImportError as exc:
            # Name the module really missing ("no module named 'x'"), not the one that imports it.
            text = str(exc)
            return "missing=" + (text.split("'")[1] if text.count("'") >= 2 else name)
    return None


def reason(kind, text):
    """One frame argument: kind=text, percent-encoded (a space is %20; a frame holds no space or '*'),
    cut short to fit a frame."""
    out = "".join(ch if " " < ch <= "~" and ch not in "%*" else "%%%02X" % (ord(ch) & 0xFF) for ch in text)
    return (kind + "=" + out)[:160]


def _crc16(data):
    crc = 0xFFFF
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def _frame(seq, body):
    payload = b"%d %s" % (seq, body)
    return payload + b"*%04X\n" % _crc16(payload)


def fail_loop(reason, stdin, stdout):
    """Answers until the serial line closes: the caller has already put the outputs in their safe state.
    It waits for the host's lines through asyncio where there is one (the MCU idles meanwhile: timers and
    the simulated board's hardware run), else with a plain blocking read (a MicroPython too old)."""
    why = reason.encode()
    stdout.write(_frame(0, b"EVT BOOTFAIL why=" + why))
    try:
        import asyncio
    except ImportError:
        asyncio = None
    if asyncio is None:
        _answer(stdin.readline, stdout, why)
    else:
        asyncio.run(_answer_async(asyncio.StreamReader(stdin), stdout, why))


def _nak(line, seq, stdout, why):
    line = line.strip()
    if not line:
        return seq
    head = line.split(b" ", 1)[0]
    host = head if head.isdigit() else b"-"
    seq = (seq + 1) & 0xFFFF
    stdout.write(_frame(seq, b"NAK " + host + b" BOOT " + why))
    return seq


def _answer(readline, stdout, why):
    seq = 0
    while True:
        line = readline()
        if not line:
            return
        seq = _nak(line, seq, stdout, why)


async def _answer_async(reader, stdout, why):
    seq = 0
    while True:
        line = await reader.readline()
        if not line:
            return
        seq = _nak(line, seq, stdout, why)
