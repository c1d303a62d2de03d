"""The rig's hardware parameter files (hardware/profiles/*.toml): slots, heatsinks, the chassis, the
virtual drives and the chassis heat profiles, read and validated in one place. Plain data: real-rig code
reads them without importing the simulator."""
