"""The host side of the rig link: transport, command/ack, telemetry stream, time sync."""
