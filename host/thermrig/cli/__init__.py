"""The `thermrig` command line."""
