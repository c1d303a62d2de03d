"""thermrig: hardware-in-the-loop rig for SSD thermal-throttling experiments."""

__version__ = "0.1.0"
