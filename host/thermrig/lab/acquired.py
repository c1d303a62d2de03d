"""Holding places for the length of a `with` block: stale locks of ours released first (and named); the
places named, or as many as match the tags reserved through the coordinator's queue (waiting while
others hold them); each acquired (or one line naming who holds it), its serial port's RFC 2217 URL and
its test PC handed out; every place released and every reservation cancelled at the end, on Ctrl-C and
on any error. One place can be let go before the others (a campaign's place that failed its start check)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from thermrig.lab.client import Endpoint, LabClient
from thermrig.lab.errors import LabError, NoSuchPlace
from thermrig.lab.locks import LockBook, LockRecord
from thermrig.lab.rig_place import FIO_RESOURCE, SERIAL_RESOURCE, SSH_RESOURCE, tag_value
from thermrig.lab.ssh_forward import SshForward

POLL_S = 1.0  # how often a waiting reservation is polled (it expires 60 s after the last poll)


@dataclass(frozen=True)
class HeldPlace:
    coordinator: str
    name: str
    holder: str
    tags: dict[str, str]
    serial: Endpoint
    fio: Endpoint | None
    ssh: Endpoint | None
    rig: str = ""  # the exporter serving the rig's serial port
    serial_unreachable: str = ""  # why an isolated exporter's serial port could not be forwarded ("": it was)

    def point_tags(self, firmware: str = "") -> dict[str, str]:
        """What every point recorded through this place carries in InfluxDB: the rig, the place, the test
        PC and the firmware version (the rig's HELLO when given, else the place's firmware tag)."""
        return {
            "rig": self.rig or self.name,
            "place": self.name,
            "test_pc": self.fio.host if self.fio else (self.ssh.host if self.ssh else ""),
            "firmware": firmware or self.tags.get("firmware", ""),
        }

    @property
    def serial_url(self) -> str:
        """What the rig link opens: pyserial's RFC 2217 client on the exporter's ser2net. ser2net cannot set
        a pty's modem lines and leaves SET_CONTROL (DTR) unanswered: ign_set_control, as labgrid's own
        SerialDriver does. LabError naming the place when its SSH forward could not be opened."""
        if self.serial_unreachable:
            raise LabError(self.serial_unreachable)
        return f"rfc2217://{self.serial.host}:{self.serial.port}?ign_set_control"


def release_stale(client: LabClient, book: LockBook) -> list[LockRecord]:
    """Release the places that dead thermrig processes of ours left locked; the records released."""
    released = []
    for record in book.stale(client.address):
        if record.holder == client.identity() and client.release(record.place, record.holder):
            client.set_comment(record.place, "")  # what the dead process said it ran, how far
            released.append(record)
        book.remove(record)
    return released


def _has(client: LabClient, place: str, resource: str) -> bool:
    return any(path[3] == resource for path in client.session.places[place].acquired_resources)


@contextmanager
def _held(client: LabClient, book: LockBook, place: str, purpose: str, ssh_key: str = "") -> Iterator[HeldPlace]:
    """The place acquired; an isolated exporter's serial port (its ser2net on the exporter's loopback; the
    exporter runs on the test PC) reached through an SSH forward to the test PC while it is held."""
    client.acquire(place)
    record = book.write(client.address, place, client.identity(), purpose)
    try:
        client.set_comment(place, comment(purpose))
        serial = client.endpoint(place, SERIAL_RESOURCE)
        fio = client.endpoint(place, FIO_RESOURCE) if _has(client, place, FIO_RESOURCE) else None
        ssh = client.endpoint(place, SSH_RESOURCE) if _has(client, place, SSH_RESOURCE) else None
        tags = client.place(place).tags
        rig = next((p[0] for p in client.session.places[place].acquired_resources if p[3] == SERIAL_RESOURCE), "")
        with ExitStack() as forwards:
            unreachable = ""
            if ssh is not None and client.isolated(place, SERIAL_RESOURCE):
                what = f"place {place}: its rig's serial port at {serial.host}:{serial.port}"
                try:  # a test PC whose SSH is down: said where the serial port is used (a start check)
                    serial = forwards.enter_context(SshForward(ssh, serial.port, what, ssh_key)).local
                except LabError as exc:
                    unreachable = str(exc)
            yield HeldPlace(client.address, place, client.identity(), tags, serial, fio, ssh, rig, unreachable)
    finally:
        try:
            client.set_comment(place, "")
        finally:
            client.release(place)
            book.remove(record)


@contextmanager
def _reserved(
    client: LabClient, tags: dict[str, str], count: int, on_wait: Callable[[str], None]
) -> Iterator[dict[str, str]]:
    """Reserve up to `count` places matching the tags (as many as match) and wait until each is allocated:
    place -> its reservation's token. A token taken out of the dict is the taker's to cancel."""
    matching = client.matching(tags)
    if not matching:
        wanted = ", ".join(f"{k}={v}" for k, v in sorted(tags.items())) or "any place"
        known = ", ".join(sorted(p.name for p in client.places())) or "none"
        raise NoSuchPlace(f"no place at {client.address} matches {wanted} (places: {known})")
    tokens = [client.reserve(tags) for _ in range(min(count, len(matching)) if count > 0 else len(matching))]
    reserved: dict[str, str] = {}
    try:
        allocated: dict[str, str] = {}
        waiting_said = False
        while True:
            for token in tokens:
                name = client.poll(token)
                if name:
                    allocated[token] = name
            if len(allocated) == len(tokens):
                break
            if not waiting_said:
                on_wait(f"waiting for {len(tokens) - len(allocated)} of {len(tokens)} places matching the tags")
                waiting_said = True
            client.pause(POLL_S)
        reserved.update((allocated[t], t) for t in tokens)
        tokens = []  # from here the dict holds the tokens still ours to cancel
        yield reserved
    finally:
        for token in [*tokens, *reserved.values()]:
            client.cancel(token)


class HeldPlaces(Sequence[HeldPlace]):
    """The places `holding` holds, in order; `let_go` releases one before the others."""

    def __init__(self) -> None:
        self.places: list[HeldPlace] = []
        self.stacks: dict[str, ExitStack] = {}

    def __getitem__(self, i: int) -> HeldPlace:  # type: ignore[override]
        return self.places[i]

    def __len__(self) -> int:
        return len(self.places)

    def let_go(self, name: str) -> None:
        """Release the place and cancel its reservation now, so others can have it while we go on."""
        self.places = [p for p in self.places if p.name != name]
        self.stacks.pop(name).close()


@contextmanager
def holding(
    client: LabClient,
    purpose: str,
    places: list[str] | None = None,
    tags: dict[str, str] | None = None,
    count: int = 1,
    book: LockBook | None = None,
    on_stale: Callable[[LockRecord], None] = lambda record: None,
    on_wait: Callable[[str], None] = lambda message: None,
    ssh_key: str = "",
) -> Iterator[HeldPlaces]:
    """The places named, or up to `count` places matching `tags` (0: every one; reserved, waited for), held
    through a client the caller keeps (to tag and comment the places it holds, from the thread that opened
    it). ssh_key: what logs in to the test PCs, for an isolated exporter's serial port ("": ssh's own)."""
    book = book or LockBook()
    with ExitStack() as stack:
        for record in release_stale(client, book):
            on_stale(record)
        reserved = (
            {name: "" for name in places}
            if places
            else stack.enter_context(_reserved(client, tags or {}, count, on_wait))
        )
        held = HeldPlaces()
        for name in list(reserved):
            # Each place's own stack: its reservation cancelled after its release, whenever that is.
            one = held.stacks[name] = stack.enter_context(ExitStack())
            if token := reserved.pop(name):
                one.callback(client.cancel, token)
            held.places.append(one.enter_context(_held(client, book, name, purpose, ssh_key)))
        yield held


def comment(purpose: str) -> str:
    """What a held place's comment says (`lab status`): what holds it, and which process."""
    return f"thermrig {purpose} (pid {os.getpid()})"


def note_firmware(client: LabClient, place: str, version: str) -> None:
    """The place's firmware tag set to what its rig said in HELLO (`lab status` compares it with this
    checkout's; campaigns select on it)."""
    tags = client.place(place).tags
    if tags.get("firmware") != tag_value(version):
        client.set_tags(place, {**tags, "firmware": tag_value(version)})


@contextmanager
def held_place(
    coordinator: str,
    place: str,
    purpose: str,
    book: LockBook | None = None,
    on_stale: Callable[[LockRecord], None] = lambda record: None,
) -> Iterator[HeldPlace]:
    with (
        LabClient(coordinator) as client,
        holding(client, purpose, places=[place], book=book, on_stale=on_stale) as held,
    ):
        yield held[0]
