"""The coordinator, from Python: labgrid's own client session (`labgrid.remote.client.start_session`) and
its gRPC stub, run on an event loop of our own (labgrid has no official client API yet). Ctrl-C and
SIGTERM never land inside gRPC: while the loop runs they are held and raised once it returns (a
KeyboardInterrupt raised inside gRPC's asyncio machinery can leave a channel half torn down, and the
process abort on its way out)."""

from __future__ import annotations

import asyncio
import os
import re
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import grpc
from labgrid.driver.exception import ExecutionError
from labgrid.remote.client import ClientSession, Error, start_session
from labgrid.remote.generated import labgrid_coordinator_pb2 as pb2

from thermrig.lab.errors import CoordinatorUnreachable, LabError, NoSuchPlace, PlaceTaken
from thermrig.testbed.signals import signals_held

RECONNECT_PAUSE_S = 0.5  # between attempts to start a session again with a coordinator that dropped ours


def proxy_failure(message: str) -> str:
    """ssh's own words from labgrid's ExecutionError for a proxy that did not connect (its stderr, last)."""
    said = re.search(r",b'(.*)'$", message.strip())
    text = said.group(1).replace("\\r", "").replace("\\n", "\n").strip() if said else message
    return text.splitlines()[-1] if text else message


@dataclass(frozen=True)
class Endpoint:
    """Where an acquired place's resource answers: a NetworkSerialPort's RFC 2217 port, a NetworkService."""

    host: str
    port: int
    user: str = ""


@dataclass(frozen=True)
class PlaceView:
    """A place as the coordinator sees it."""

    name: str
    tags: dict[str, str]
    acquired: str | None  # "host/user" of the holder
    comment: str
    changed: float
    reservation: str | None


class LabClient:
    """A session with one coordinator (HOST:PORT) for the life of a `with` block."""

    def __init__(self, address: str, timeout: float = 30.0) -> None:
        self.address = address
        self.timeout = timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: ClientSession | None = None

    def __enter__(self) -> LabClient:
        self._loop = asyncio.new_event_loop()
        # gRPC's asyncio channel binds to the thread's current loop when labgrid creates it
        asyncio.set_event_loop(self._loop)
        try:
            self._start()
        except Error as exc:
            self._close_loop()
            raise CoordinatorUnreachable(f"no labgrid coordinator at {self.address}: {exc}") from exc
        except ExecutionError as exc:  # labgrid's SSH proxy (LG_PROXY) did not connect
            self._close_loop()
            raise CoordinatorUnreachable(
                f"no labgrid coordinator at {self.address}: ssh to the proxy {os.environ.get('LG_PROXY', '')} "
                f"failed: {proxy_failure(str(exc))}"
            ) from exc
        except BaseException:
            self.__exit__()  # a session started before the signal held back is closed, not left to exit
            raise
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        try:
            with signals_held():  # stopped and closed both, or the channel is left half torn down
                if self._session is not None and self._loop is not None:
                    try:
                        self._run(self._session.stop())
                        self._run(self._session.close())
                    except CoordinatorUnreachable:
                        pass  # a coordinator that stopped answering: the session goes with the loop
                    finally:
                        self._session = None
        finally:
            self._close_loop()

    def _start(self) -> ClientSession:
        """A new session (labgrid's start_session runs our loop: the signals held there too)."""
        with signals_held():  # the session kept before a held signal is raised, for __exit__ to close
            self._session = session = start_session(self.address, loop=self._loop)
        return session

    def _close_loop(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None
            asyncio.set_event_loop(None)

    @property
    def session(self) -> ClientSession:
        if self._session is None:
            raise RuntimeError("LabClient used outside its with block")
        return self._session

    def _run(self, coro: Any) -> Any:
        """coro on the loop, the signals held, for at most `timeout` seconds (a coordinator that stops
        answering cannot hold Ctrl-C back for longer)."""
        assert self._loop is not None
        try:
            with signals_held():
                return self._loop.run_until_complete(asyncio.wait_for(coro, self.timeout))
        except TimeoutError as exc:
            raise CoordinatorUnreachable(f"coordinator at {self.address} did not answer in {self.timeout:g} s") from exc

    def _alive(self) -> ClientSession:
        """The session, started again if the coordinator dropped it (a long hold, a coordinator restart:
        labgrid's places stay acquired without their client, so a new session can still release them)."""
        session = self.session
        if not session.stopping.is_set():
            return session
        try:
            self._run(session.stop())
            self._run(session.close())
        except Exception:  # the old stream is gone already
            pass
        deadline = time.monotonic() + self.timeout  # a restarting coordinator listens again in seconds, more
        while True:  # on a busy host: tried until the client's timeout, not once
            try:
                return self._start()
            except Error as exc:
                if time.monotonic() >= deadline:
                    raise CoordinatorUnreachable(f"lost the labgrid coordinator at {self.address}: {exc}") from exc
            self.pause(RECONNECT_PAUSE_S)

    def identity(self) -> str:
        """How the coordinator names this client as a holder: "host/user" (LG_HOSTNAME, LG_USERNAME override)."""
        return f"{self.session.gethostname()}/{self.session.getuser()}"

    def _call(self, what: str, method: str, request: Any) -> Any:
        self.sync()  # the coordinator answers only clients with a live session
        session = self.session

        async def call() -> Any:
            try:
                response = await getattr(session.stub, method)(request)
            except grpc.aio.AioRpcError as exc:
                raise LabError(f"{what} at {self.address}: {exc.details()}") from exc
            if not await session.sync_with_coordinator():
                raise CoordinatorUnreachable(f"coordinator at {self.address} went away during {what}")
            return response

        return self._run(call())

    def sync(self) -> None:
        """Wait for the coordinator to have handled everything sent; a session found dropped on the way
        (its stream ends only while our loop runs) is started again once."""
        for _ in range(2):
            if self._run(self._alive().sync_with_coordinator()):
                return
        raise CoordinatorUnreachable(f"coordinator at {self.address} went away")

    # -- places ---------------------------------------------------------------------------------------
    def places(self) -> list[PlaceView]:
        self.sync()
        return [self._view(p) for _, p in sorted(self.session.places.items())]

    def place(self, name: str) -> PlaceView:
        self.sync()
        place = self.session.places.get(name)
        if place is None:
            known = ", ".join(sorted(self.session.places)) or "none"
            raise NoSuchPlace(f"no place {name!r} at coordinator {self.address} (places: {known})")
        return self._view(place)

    @staticmethod
    def _view(place: Any) -> PlaceView:
        return PlaceView(
            name=place.name,
            tags=dict(place.tags),
            acquired=place.acquired or None,
            comment=place.comment,
            changed=float(place.changed),
            reservation=place.reservation or None,
        )

    def ensure_place(self, name: str, match: str, tags: dict[str, str]) -> None:
        """Create the place if it is missing, add its match, and set its tags (replacing the old ones)."""
        self.sync()
        if name not in self.session.places:
            self._call(f"adding place {name}", "AddPlace", pb2.AddPlaceRequest(name=name))
        place = self.session.places[name]
        if not place.hasmatch(match.split("/")):
            request = pb2.AddPlaceMatchRequest(placename=name, pattern=match)
            self._call(f"adding match {match} to place {name}", "AddPlaceMatch", request)
        self._call(f"tagging place {name}", "SetPlaceTags", pb2.SetPlaceTagsRequest(placename=name, tags=tags))

    def set_tags(self, name: str, tags: dict[str, str]) -> None:
        """Replace the place's tags."""
        self._call(f"tagging place {name}", "SetPlaceTags", pb2.SetPlaceTagsRequest(placename=name, tags=tags))

    def set_comment(self, name: str, comment: str) -> None:
        request = pb2.SetPlaceCommentRequest(placename=name, comment=comment)
        self._call(f"commenting place {name}", "SetPlaceComment", request)

    # -- locks ----------------------------------------------------------------------------------------
    def acquire(self, name: str) -> None:
        """Lock the place for this client; PlaceTaken names the holder if someone has it."""
        view = self.place(name)
        if view.acquired:
            raise PlaceTaken(f"place {name} at {self.address} is held by {view.acquired}")
        try:
            self._call(f"acquiring place {name}", "AcquirePlace", pb2.AcquirePlaceRequest(placename=name))
        except LabError as exc:
            holder = self.place(name).acquired
            if holder and holder != self.identity():
                raise PlaceTaken(f"place {name} at {self.address} is held by {holder}") from exc
            raise

    def release(self, name: str, holder: str | None = None) -> bool:
        """Release the place if `holder` (default: this client) holds it; whether it was released."""
        holder = holder or self.identity()
        if self.place(name).acquired != holder:
            return False
        request = pb2.ReleasePlaceRequest(placename=name, fromuser=holder)
        self._call(f"releasing place {name}", "ReleasePlace", request)
        return self.place(name).acquired is None

    # -- an acquired place's resources ----------------------------------------------------------------
    def _acquired_resource(self, name: str, resource: str) -> Any | None:
        place = self.session.places[name]
        for exporter, group, _cls, rname in place.acquired_resources:
            if rname == resource:
                return self.session.resources.get(exporter, {}).get(group, {}).get(rname)
        return None

    def isolated(self, name: str, resource: str) -> bool:
        """Whether an acquired place's resource comes from an isolated exporter (`--isolated`: reached
        only through SSH to the exporter's host)."""
        self.sync()
        entry = self._acquired_resource(name, resource)
        extra = entry.params.get("extra") if entry is not None else None
        return bool(extra and extra.get("proxy_required"))

    def endpoint(self, name: str, resource: str) -> Endpoint:
        """Where an acquired place's resource answers, once its exporter has it ready (ser2net started)."""
        deadline = time.monotonic() + self.timeout
        while True:
            self.sync()
            entry = self._acquired_resource(name, resource)
            if entry is not None and entry.avail and entry.params.get("port"):
                params = entry.params
                return Endpoint(
                    str(params["host"] if "host" in params else params["address"]),
                    int(params["port"]),
                    str(params.get("username", "")),
                )
            if time.monotonic() > deadline:
                raise LabError(f"place {name} at {self.address}: its resource {resource!r} is not available")
            self._run(asyncio.sleep(0.05))

    # -- reservations ---------------------------------------------------------------------------------
    def matching(self, tags: dict[str, str]) -> list[str]:
        """The places whose tags include these (as the coordinator's scheduler matches them)."""
        self.sync()
        wanted = set(tags.items())
        return sorted(n for n, p in self.session.places.items() if wanted <= set(p.tags.items()) | {("name", n)})

    def reserve(self, tags: dict[str, str]) -> str:
        """A reservation of one place matching the tags; its token. It waits in the coordinator's queue
        (priority, then age) and expires 60 s after the last poll unless its place is acquired."""
        request = pb2.CreateReservationRequest(filters={"main": pb2.Reservation.Filter(filter=tags)}, prio=0.0)
        response = self._call("reserving a place", "CreateReservation", request)
        return str(response.reservation.token)

    def poll(self, token: str) -> str | None:
        """Keep the reservation alive; the place allocated to it, once there is one."""
        response = self._call("polling a reservation", "PollReservation",
                              pb2.PollReservationRequest(token=token))  # fmt: skip
        name = response.reservation.allocations.get("main")
        return str(name) if name else None

    def reservations(self) -> list[tuple[str, str]]:
        """The coordinator's reservations: (owner "host/user", token)."""
        response = self._call("listing reservations", "GetReservations", pb2.GetReservationsRequest())
        return [(str(r.owner), str(r.token)) for r in response.reservations]

    def cancel(self, token: str) -> None:
        """Cancel the reservation; one the coordinator no longer has (expired, or lost when it restarted)
        is gone already."""
        if token not in {t for _, t in self.reservations()}:
            return
        request = pb2.CancelReservationRequest(token=token)
        self._call("cancelling a reservation", "CancelReservation", request)

    def pause(self, seconds: float) -> None:
        self._run(asyncio.sleep(seconds))
