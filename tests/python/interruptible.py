"""A child a test will Ctrl-C gets SIGINT's default disposition explicitly (thermrig.children)."""

from __future__ import annotations

from thermrig.children import with_default_sigint

__all__ = ["with_default_sigint"]
