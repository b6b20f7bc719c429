"""``pykraft metadata-quorum``: Kafka's ``kafka-metadata-quorum.sh`` (describe)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from pykraft.errors import PyKraftError

quorum_app = typer.Typer(
    help="Describe the KRaft metadata quorum (kafka-metadata-quorum.sh).",
    no_args_is_help=True,
)


@quorum_app.callback()
def options(
    ctx: typer.Context,
    bootstrap_controller: Annotated[
        str | None,
        typer.Option("--bootstrap-controller", help="host:port of any controller."),
    ] = None,
    bootstrap_server: Annotated[
        str | None, typer.Option("--bootstrap-server", help="host:port of a broker."),
    ] = None,
) -> None:
    """Global options, as in Kafka: exactly one bootstrap address."""
    if (bootstrap_controller is None) == (bootstrap_server is None):
        typer.echo("Error: exactly one of --bootstrap-controller and --bootstrap-server "
                   "is required", err=True)
        raise typer.Exit(1)
    ctx.obj = bootstrap_controller or bootstrap_server


@quorum_app.command("describe")
def describe(
    ctx: typer.Context,
    status: Annotated[bool, typer.Option("--status", help="Quorum summary.")] = False,
    replication: Annotated[
        bool, typer.Option("--replication", help="Per-replica replication table.")
    ] = False,
    human_readable: Annotated[
        bool, typer.Option("--human-readable", help="Timestamps as 'N ms ago'.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of text.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to keep trying.")] = 10.0,
) -> None:
    """Describe the quorum: --status or --replication."""
    from pykraft.tools import quorum_tool

    if status == replication:
        typer.echo("Error: exactly one of --status and --replication is required", err=True)
        raise typer.Exit(1)
    try:
        address = quorum_tool.parse_host_port(str(ctx.obj))
        info = asyncio.run(quorum_tool.describe_quorum(address, timeout_s=timeout))
    except PyKraftError as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(quorum_tool.as_json(info))
    elif status:
        typer.echo("\n".join(quorum_tool.status_lines(info)))
    else:
        rows = quorum_tool.replication_rows(info, human_readable=human_readable)
        typer.echo("\n".join(quorum_tool.pretty_table(quorum_tool.REPLICATION_HEADERS, rows)))
