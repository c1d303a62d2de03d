"""The base of every error a user can cause or meet (a bad file, an unreachable rig or server): the CLI
turns any of them into one line and exit status 1 (cli/user_errors.py), without knowing each module."""

from __future__ import annotations


class ThermrigError(Exception):
    """An error whose message is meant for the user, as it stands."""
