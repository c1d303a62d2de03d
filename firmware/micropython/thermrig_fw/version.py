# The firmware's version as HELLO reports it; `thermrig flash --board pico` writes this checkout's
# version stamp here in the copy it puts on the board (project version, git revision, -dirty).
FW_VERSION = b"0.1.0"
