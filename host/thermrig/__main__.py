"""`python -m thermrig` runs the command line, as the `thermrig` script does."""

from thermrig.cli.main import app

app(prog_name="thermrig")
