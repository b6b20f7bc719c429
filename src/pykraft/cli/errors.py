"""How every tool reports a failure: ``Error: <message>`` on stderr, exit status 1."""

from __future__ import annotations

import typer


def fail(message: str) -> typer.Exit:
    """The exit to raise after printing ``message``."""
    typer.echo(f"Error: {message}", err=True)
    return typer.Exit(1)
