"""A lab's own fio job file (workload kind "fio"): read, checked against what thermrig sets, and run
against the campaign's target with thermrig's per-second logs.

thermrig puts one [global] section of its own before the lab's file: the target (filename, or the
virtual drive's ioengine=nbd and uri), a file target's size (the job's own size overrides it) and the
logging options of the workload library. fio applies every [global] section in order to the jobs that
follow, and a job's own options override the global ones, so an option of the lab's that sets the
target or the logs would silently take the run elsewhere or lose its logs: those are refused before
anything runs, in one line naming the option and the job file's line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from thermrig.errors import ThermrigError

# Options thermrig sets on every target: the lab's job must leave them out.
TARGET_OPTIONS = ("filename", "filename_format", "directory", "opendir")
LOG_OPTIONS = (
    "write_bw_log",
    "write_iops_log",
    "write_lat_log",
    "write_hist_log",
    "log_avg_msec",
    "log_hist_msec",
    "log_hist_coarseness",
    "log_max_value",
    "log_offset",
    "log_prio",
    "log_issue_time",
    "log_compression",
    "log_compression_cpus",
    "log_store_compressed",
    "log_unix_epoch",
    "log_alternate_epoch",
    "log_alternate_epoch_clock_id",
    "per_job_logs",
    "group_reporting",  # merges the jobs' results: thermrig reports each job
)
VIRTUAL_OPTIONS = ("ioengine", "uri")  # the virtual drive is served over NBD: ioengine=nbd, its URI
_SECTION = re.compile(r"\[([^\]]+)\]")
_JOBNAME_CHARS = re.compile(r"[^A-Za-z0-9_.:+-]")


class JobFileError(ThermrigError, ValueError):
    """A lab's job file that thermrig cannot run as written; the message names the option and file:line."""


@dataclass(frozen=True)
class Option:
    line: int  # 1-based line in the job file
    section: str
    key: str  # lower case, as fio matches option names
    value: str | None  # None for a flag such as time_based


@dataclass(frozen=True)
class LabJob:
    path: Path
    text: str
    options: tuple[Option, ...]
    jobs: tuple[str, ...]  # the job sections in order (not [global])


def read_job_file(path: str | Path) -> LabJob:
    """Parse a fio job file the way fio reads it: [section] headers, key=value or flag lines, ';' and
    '#' comments. Refuses `include` (what it pulls in could not be checked)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise JobFileError(f"{path}: cannot read the fio job file: {exc.strerror}") from exc
    options: list[Option] = []
    jobs: list[str] = []
    section = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        header = _SECTION.fullmatch(line)
        if header:
            section = header.group(1).strip()
            if section != "global":
                jobs.append(section)
            continue
        if line.startswith("include "):
            raise JobFileError(f"{path}:{number}: include: thermrig cannot check an included file; paste it in")
        if not section:
            raise JobFileError(f"{path}:{number}: {line!r} is outside any [section]")
        key, sep, value = line.partition("=")
        options.append(Option(number, section, key.strip().lower(), value.strip() if sep else None))
    if not jobs:
        raise JobFileError(f"{path}: no job section (a [name] other than [global])")
    return LabJob(path, text, tuple(options), tuple(jobs))


def check_job(job: LabJob, virtual: bool) -> None:
    """Refuse the first option that would conflict with what thermrig sets on this target."""
    for opt in job.options:
        shown = opt.key if opt.value is None else f"{opt.key}={opt.value}"
        where = f"{job.path}:{opt.line}: {shown}"
        if opt.key in TARGET_OPTIONS:
            raise JobFileError(f"{where}: thermrig sets the target ([drive] target of the campaign); remove it")
        if opt.key in LOG_OPTIONS:
            raise JobFileError(f"{where}: thermrig sets fio's per-second logs and reports each job; remove it")
        if virtual and opt.key in VIRTUAL_OPTIONS:
            why = "the virtual drive is served over NBD (ioengine=nbd, set by thermrig)"
            raise JobFileError(f"{where}: {why}; remove it")


def compose(job: LabJob, target_lines: list[str], log_lines: list[str]) -> str:
    """thermrig's [global] (target and logs) followed by the lab's file as written."""
    head = ["; thermrig: the target and per-second logs (the lab's job file follows)", "[global]"]
    return "\n".join([*head, *target_lines, *log_lines, "", f"; {job.path}", job.text.rstrip(), ""])


def unique_job_names(names: list[str]) -> dict[int, str]:
    """fio's job names by job number (from 1) as tag values: odd characters replaced, clones of one job
    (numjobs) numbered, so no two jobs share a name."""
    clean = [_JOBNAME_CHARS.sub("_", n)[:56] or "job" for n in names]
    out: dict[int, str] = {}
    for i, name in enumerate(clean, start=1):
        out[i] = name if clean.count(name) == 1 else f"{name}-{sum(1 for n in clean[:i] if n == name)}"
    return out
