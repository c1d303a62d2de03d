"""The drive under test: its own telemetry (NVMe SMART log, hwmon) and the checks before writing to it."""
