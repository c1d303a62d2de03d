"""The virtual drive: a throttling model of an NVMe drive (power states, fill by LBA, service times) and
the NBD server that puts it in front of the real fio as a block device (docs/virtual-drive.md)."""
