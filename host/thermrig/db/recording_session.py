"""A recording session: a run's durable spool, the writer that drains it to InfluxDB, and the recorder
of the rig's telemetry and link events, started together and stopped together. A campaign's runs,
`thermrig rig record` and the demo all record through one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.recorder import Recorder
from thermrig.db.schema import RunTags
from thermrig.db.spool import Spool
from thermrig.db.writer import SpoolWriter, WriteProblem
from thermrig.link.rig_link import RigLink


class RecordingSession:
    def __init__(
        self,
        link: RigLink,
        tags: RunTags,
        influx: InfluxSettings,
        folder: Path | None = None,
        on_error: Callable[[WriteProblem], None] | None = None,
        on_back: Callable[[], None] | None = None,
    ) -> None:
        """folder: where the spool goes (default: the user's spool folder); on_error: every failed write
        to InfluxDB; on_back: the first success after a failure."""
        self.tags = tags
        self.spool = Spool.for_run(tags.run, folder)
        self.writer = SpoolWriter(self.spool, influx, on_error=on_error, on_back=on_back)
        self.recorder = Recorder(link, self.spool, tags)

    def start(self) -> None:
        self.writer.start()
        self.recorder.start()

    def stop(self, reason: str) -> None:
        """The rig's recording ends (the writer goes on draining the spool until close)."""
        self.recorder.stop(reason)

    def close(self, flush_timeout: float = 10.0) -> bool:
        """Stop the writer once it has sent what it can within flush_timeout; whether every point is in
        InfluxDB (if not, they wait in the spool for `thermrig db drain`)."""
        return self.writer.close(flush_timeout=flush_timeout)
