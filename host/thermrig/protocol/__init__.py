"""The rig wire protocol (docs/protocol.md): frame codec and message types."""
