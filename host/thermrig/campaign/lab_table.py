"""A campaign's [lab] table: run it on a lab of rigs (thermrig.lab, docs/lab.md) instead of one rig:
the labgrid coordinator, the tags a place must have, and how many places at most."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from thermrig.toml_file import TomlFile


@dataclass(frozen=True)
class LabTable:
    coordinator: str = ""  # HOST:PORT; `thermrig run --lab` gives or overrides it
    tags: dict[str, str] = field(default_factory=dict)  # a place must have these (board = "sim", drive = ...)
    places: int = 0  # at most this many places; 0: every place that matches
    ssh_key: str = ""  # the key that logs in to the test PCs (smart-log, fio's forward); "": ssh's own
    insecure: bool = False  # fio's servers reached straight over the network, not through SSH


def read_lab_table(r: TomlFile, data: dict) -> LabTable | None:
    if "lab" not in data:
        return None
    t = r.get(data, "lab", "lab", dict, "a [lab] table")
    r.known(t, "lab", {"coordinator", "tags", "places", "ssh_key", "insecure"})
    tags = r.get(t, "lab", "tags", dict, 'a table of tags, e.g. { board = "sim" }', {})
    for key, value in tags.items():
        if not isinstance(value, str | int) or isinstance(value, bool):
            raise r.fail("lab", "tags", f"{key} = {value!r}", "tag values as text")
    places = r.get(t, "lab", "places", int, "a whole number of places, at least 1", 0, at_least=1)  # 0: all
    coordinator = r.get(t, "lab", "coordinator", str, "the labgrid coordinator, HOST:PORT", "")
    ssh_key = r.get(t, "lab", "ssh_key", str, "a private key file for the test PCs' SSH", "")
    if ssh_key and not Path(ssh_key).is_absolute() and not ssh_key.startswith("~"):
        ssh_key = str((r.path.parent / ssh_key).resolve())
    insecure = r.get(t, "lab", "insecure", bool, "true or false", False)
    return LabTable(coordinator, {str(k): str(v) for k, v in tags.items()}, places, ssh_key, insecure)
