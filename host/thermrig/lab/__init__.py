"""A lab of rigs through labgrid: each rig is a labgrid place (its serial port, its test PC's fio server
and SSH, tags campaigns select on), locked through labgrid's coordinator (docs/lab.md)."""
