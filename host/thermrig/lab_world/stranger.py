"""A stranger on a lab's network: which TCP ports of a host accept a connection, every one of 1-65535,
tried five hundred at a time without blocking. `python -m thermrig.lab_world.stranger ADDRESS` prints them,
one a line (run inside the stranger's namespace: thermrig.lab_world.netns)."""

from __future__ import annotations

import errno
import selectors
import socket
import sys

BATCH = 500


def answering(address: str, ports: range = range(1, 65536), timeout: float = 2.0) -> list[int]:
    found: list[int] = []
    for start in range(ports.start, ports.stop, BATCH):
        sel = selectors.DefaultSelector()
        for port in range(start, min(start + BATCH, ports.stop)):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            code = s.connect_ex((address, port))
            if code in (0, errno.EINPROGRESS):
                sel.register(s, selectors.EVENT_WRITE, port)
            else:
                s.close()
        while sel.get_map():
            events = sel.select(timeout)
            if not events:  # no answer at all (dropped): not accepting
                break
            for key, _ in events:
                s = key.fileobj
                assert isinstance(s, socket.socket)
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    found.append(key.data)
                sel.unregister(s)
                s.close()
        for key in list(sel.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        sel.close()
    return sorted(found)


def main() -> None:
    for port in answering(sys.argv[1]):
        print(port)


if __name__ == "__main__":
    main()
