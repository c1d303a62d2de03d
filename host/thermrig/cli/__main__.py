"""`python -m thermrig.cli` runs the command line."""

from thermrig.cli.main import app

app()
