"""The simulated rig: the lumped thermal plant, the virtual wires and sensors the firmware reads, the
plant server that paces them, the firmware launchers (rigsim, Zephyr in QEMU, MicroPython), the serial
bridge and the faults a real rig can suffer (docs/plant.md)."""
