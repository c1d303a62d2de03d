"""Drain a spool into InfluxDB: batches read from the spool's acknowledged offset, written with the
official client's synchronous write API at nanosecond precision, the offset advanced only once the
server acknowledged. A refused connection is retried briefly inside the client (its WritesRetry); a
429 or 503 is retried after the server's Retry-After; a longer outage leaves the points in the spool,
retried with backoff. The writer reports an outage itself (on_error, then on_back once the server
answers again), so the client library's own retry warnings are kept out of the user's view.

Why not the client's own batching mode: it cannot say which points reached the server, and the spool
must know exactly that to survive a crash without loss.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import urllib3
from influxdb_client import InfluxDBClient, WritePrecision
from influxdb_client.client.write.retry import WritesRetry
from influxdb_client.client.write_api import SYNCHRONOUS
from influxdb_client.rest import ApiException

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.spool import Spool

BATCH_LINES = 5000
OUTAGE_BACKOFF_S = (0.2, 5.0)
RETRY_AFTER_MAX_S = 60.0


@dataclass(frozen=True)
class WriteProblem:
    """Reported through the error callback: what failed, whether the points are kept for later."""

    message: str
    kept: bool  # True: still in the spool; False: the server rejected them for good (bad data)


# Loggers that print a warning per retried request during an outage (over a live view): the writer
# says it once, in its own words, through on_error.
_RETRY_LOGGERS = ("influxdb_client.client.write.retry", "urllib3.connectionpool")


def quiet_retries() -> None:
    """Keep the retry loggers quiet: every InfluxDBClient created sets them to WARNING again, so whoever
    creates one while spool writers run (the analysis writing summaries) calls this after it."""
    for name in _RETRY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def _client(settings: InfluxSettings) -> InfluxDBClient:
    retry = WritesRetry(total=3, retry_interval=0.2, max_retry_delay=2.0, max_retry_time=10.0, exponential_base=2)
    client = InfluxDBClient(url=settings.url, token=settings.token, org=settings.org, timeout=10_000, retries=retry)
    quiet_retries()  # after the client: its configuration sets these loggers to WARNING
    return client


class SpoolWriter:
    def __init__(
        self,
        spool: Spool,
        settings: InfluxSettings,
        on_error: Callable[[WriteProblem], None] | None = None,
        batch_lines: int = BATCH_LINES,
        on_back: Callable[[], None] | None = None,
    ) -> None:
        """on_error: every failed attempt; on_back: the first success after a failure."""
        self.spool = spool
        self.settings = settings
        self.on_error = on_error
        self.on_back = on_back
        self.batch_lines = batch_lines
        self.client = _client(settings)
        self.write_api = self.client.write_api(write_options=SYNCHRONOUS)
        self.points_written = 0
        self.healthy = True
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def _report(self, problem: WriteProblem) -> None:
        if self.on_error is not None:
            self.on_error(problem)

    def drain_once(self) -> int:
        """Write one batch; return how many points the server took (0: nothing pending).
        Raises on failure, with the points left in the spool."""
        start = self.spool.sent()
        lines, end = self.spool.read_batch(start, self.batch_lines)
        if not lines:
            return 0
        try:
            self.write_api.write(bucket=self.settings.bucket, record=lines, write_precision=WritePrecision.NS)
        except ApiException as exc:
            dropped = _dropped(exc)
            if exc.status in (400, 422) or dropped:  # bad or too old points: retrying cannot change them
                self.spool.mark_sent(end)
                taken = len(lines) - (dropped or len(lines))
                self.points_written += taken
                said = _message(exc)
                why = (
                    f"InfluxDB dropped {dropped} of {len(lines)} points (older than the bucket's retention, or "
                    f"refused): {said}"
                    if dropped
                    else f"InfluxDB rejected {len(lines)} points: {said}"
                )
                self._report(WriteProblem(why, False))
                return len(lines)
            raise
        self.spool.mark_sent(end)
        self.points_written += len(lines)
        return len(lines)

    def drain(self, timeout: float | None = None) -> bool:
        """Write until the spool is empty; False if the server was unreachable until the timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        wait = OUTAGE_BACKOFF_S[0]
        while self.spool.pending_bytes() > 0:
            try:
                self.drain_once()
                wait = OUTAGE_BACKOFF_S[0]
                if not self.healthy and self.on_back is not None:
                    self.on_back()
                self.healthy = True
            except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
                self.healthy = False
                self._report(WriteProblem(_why(exc, self.settings), True))
                pause = _retry_after(exc) or wait  # a throttling server says how long to wait
                if deadline is not None and time.monotonic() + pause > deadline:
                    return False
                if self._stop.wait(pause):
                    return False
                wait = min(wait * 2, OUTAGE_BACKOFF_S[1])
        return True

    # --- background mode: drain as the spool grows -------------------------------------------------

    def start(self, interval: float = 1.0) -> None:
        """Drain every interval seconds: one HTTP write a second keeps the agent's CPU small."""

        def loop() -> None:
            while not self._stop.is_set():
                self.drain()
                self._wake.wait(interval)
                self._wake.clear()

        self._thread = threading.Thread(target=loop, name="spool-writer", daemon=True)
        self._thread.start()

    def wait_empty(self, timeout: float) -> bool:
        """In background mode: wake the loop and wait until the spool is empty; False at the timeout."""
        deadline = time.monotonic() + timeout
        while self.spool.pending_bytes() > 0:
            if time.monotonic() >= deadline:
                return False
            self._wake.set()
            time.sleep(0.1)
        return True

    def close(self, flush_timeout: float = 10.0) -> bool:
        """Stop the background loop, write what is left (within the timeout), close the client.
        Returns whether the spool is empty; what is not stays for `thermrig db drain`."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=flush_timeout + 15)
        self._stop.clear()
        done = self.drain(timeout=flush_timeout)
        with contextlib.suppress(Exception):
            self.write_api.close()
            self.client.close()
        return done


def _retry_after(exc: Exception) -> float | None:
    """Seconds from a 429/503 answer's Retry-After header (the delay form; an HTTP date is ignored)."""
    if not isinstance(exc, ApiException) or exc.status not in (429, 503) or not exc.headers:
        return None
    try:
        return min(float(exc.headers.get("Retry-After", "")), RETRY_AFTER_MAX_S)
    except ValueError:
        return None


def _message(exc: ApiException) -> str:
    """The server's own words: 2.x's JSON "message", 1.x's "error", else the reason."""
    try:
        body = json.loads(exc.body or "")
    except ValueError:
        return str(exc.body or exc.reason or "").strip()[:300]
    return str(body.get("message") or body.get("error") or exc.reason).strip() if isinstance(body, dict) else ""


def _dropped(exc: ApiException) -> int:
    """How many points a partial write dropped (2.x: 422, 1.x: 400, "... dropped=N")."""
    found = re.search(r"dropped=(\d+)", _message(exc))
    return int(found.group(1)) if found else 0


def _why(exc: Exception, settings: InfluxSettings) -> str:
    """One line: why the points wait in the spool, and what sends them."""
    if isinstance(exc, ApiException):
        said = f"HTTP {exc.status} {_message(exc)}".strip()
        later = "the points stay in the spool and `thermrig db drain` sends them once"
        if exc.status == 401:
            return f"InfluxDB at {settings.url} refuses the token ({said}): {later} a valid token is set"
        if exc.status == 403:
            return f"the token may not write to bucket {settings.bucket} ({said}): {later} it may"
        if exc.status == 404:
            return f"InfluxDB at {settings.url}: bucket {settings.bucket} not found ({said}): {later} it exists"
        return f"InfluxDB at {settings.url} unavailable: {said}"
    text = str(exc)
    return f"InfluxDB at {settings.url} unavailable: " + (
        "connection refused" if "refused" in text.lower() else text[:120]
    )
