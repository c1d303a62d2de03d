"""`thermrig flash`: build the firmware for a board, upload it, and check the rig reports that version."""
