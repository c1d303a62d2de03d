"""The plant: a lumped thermal model of chassis and drive, the sensors the firmware reads, and the
server that exchanges them with the firmware each control tick."""
