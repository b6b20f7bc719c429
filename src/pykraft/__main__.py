"""Allow ``python -m pykraft``."""

from pykraft.cli.main import app

app()
