"""A child a test will Ctrl-C gets SIGINT's default disposition explicitly: a test run started in the
background of a non-interactive shell inherits SIGINT ignored, and Python keeps an ignored SIGINT ignored.

Through `env --default-signal=INT`, which sets it and execs the command (the same pid), not a preexec_fn:
a preexec_fn makes subprocess fork() instead of vfork() and run Python in the child before exec, which is
not safe in a worker where gRPC's threads run (the lab tests load it): a child aborted (-6) in gRPC's
epoll poller so."""

from __future__ import annotations

from collections.abc import Sequence


def with_default_sigint(cmd: Sequence[str]) -> list[str]:
    return ["env", "--default-signal=INT", *cmd]
