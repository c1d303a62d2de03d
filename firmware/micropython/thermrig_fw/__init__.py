# thermrig firmware for MicroPython: the behaviour of firmware/core in Python, hardware behind a HAL.
