"""Holding a place for the length of a `with` block: stale locks of ours released first (and named), the
place acquired (or one line naming who holds it), its serial port's RFC 2217 URL and its test PC handed
out, and the place released at the end, on Ctrl-C and on any error."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from thermrig.lab.client import Endpoint, LabClient
from thermrig.lab.locks import LockBook, LockRecord
from thermrig.lab.rig_place import FIO_RESOURCE, SERIAL_RESOURCE, SSH_RESOURCE


@dataclass(frozen=True)
class HeldPlace:
    coordinator: str
    name: str
    holder: str
    serial: Endpoint
    fio: Endpoint | None
    ssh: Endpoint | None

    @property
    def serial_url(self) -> str:
        """What the rig link opens: pyserial's RFC 2217 client on the exporter's ser2net. ser2net cannot set
        a pty's modem lines and leaves SET_CONTROL (DTR) unanswered: ign_set_control, as labgrid's own
        SerialDriver does."""
        return f"rfc2217://{self.serial.host}:{self.serial.port}?ign_set_control"


def release_stale(client: LabClient, book: LockBook) -> list[LockRecord]:
    """Release the places that dead thermrig processes of ours left locked; the records released."""
    released = []
    for record in book.stale(client.address):
        if record.holder == client.identity() and client.release(record.place, record.holder):
            released.append(record)
        book.remove(record)
    return released


def _optional_endpoint(client: LabClient, name: str, resource: str) -> Endpoint | None:
    try:
        return client.endpoint(name, resource)
    except Exception:  # a place without a test PC still has a rig to talk to
        return None


@contextmanager
def held_place(
    coordinator: str,
    place: str,
    purpose: str,
    book: LockBook | None = None,
    on_stale: Callable[[LockRecord], None] = lambda record: None,
) -> Iterator[HeldPlace]:
    book = book or LockBook()
    with LabClient(coordinator) as client:
        for record in release_stale(client, book):
            on_stale(record)
        client.acquire(place)
        record = book.write(coordinator, place, client.identity(), purpose)
        try:
            client.set_comment(place, f"thermrig {purpose} (pid {os.getpid()})")
            serial = client.endpoint(place, SERIAL_RESOURCE)
            fio = _optional_endpoint(client, place, FIO_RESOURCE) if _has(client, place, FIO_RESOURCE) else None
            ssh = _optional_endpoint(client, place, SSH_RESOURCE) if _has(client, place, SSH_RESOURCE) else None
            yield HeldPlace(coordinator, place, client.identity(), serial, fio, ssh)
        finally:
            try:
                client.set_comment(place, "")
            finally:
                client.release(place)
                book.remove(record)


def _has(client: LabClient, place: str, resource: str) -> bool:
    return any(path[3] == resource for path in client.session.places[place].acquired_resources)
