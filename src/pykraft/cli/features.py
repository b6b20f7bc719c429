"""``pykraft features``: Kafka's ``kafka-features.sh`` (describe, upgrade) through a broker
(``--bootstrap-server``) or the controllers (``--bootstrap-controller``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pykraft.cli.bootstrap_options import (
    BOOTSTRAP_CONTROLLER_HELP,
    BOOTSTRAP_SERVER_HELP,
    bootstrap_options,
    command_security,
)
from pykraft.cli.errors import fail
from pykraft.errors import PyKraftError

if TYPE_CHECKING:
    from pykraft.tools.admin_client import Address, ClientSecurity

features_app = typer.Typer(
    help="Describe and upgrade finalized feature levels (kafka-features.sh).",
    no_args_is_help=True,
)

TimeoutOption = Annotated[float, typer.Option(help="Seconds to keep trying.")]


@features_app.callback()
def options(
    ctx: typer.Context,
    bootstrap_server: Annotated[
        str | None, typer.Option("--bootstrap-server", help=BOOTSTRAP_SERVER_HELP)] = None,
    bootstrap_controller: Annotated[
        str | None, typer.Option("--bootstrap-controller", help=BOOTSTRAP_CONTROLLER_HELP)
    ] = None,
    command_config: Annotated[
        Path | None, typer.Option("--command-config", help="Client properties (security."
                                  "protocol, ssl.*, sasl.*) for the admin connection.")
    ] = None,
) -> None:
    """Global options, as in Kafka: exactly one of --bootstrap-server and
    --bootstrap-controller; checked by the command, so that a subcommand's --help needs
    none."""
    ctx.obj = (bootstrap_controller, bootstrap_server, command_config)


def _connection(ctx: typer.Context) -> tuple[tuple[Address, ...], ClientSecurity]:
    """The bootstrap addresses and how to secure the connections to them."""
    from pykraft.tools import quorum_tool

    options = bootstrap_options(*ctx.obj)
    return quorum_tool.parse_bootstrap(options.bootstrap), command_security(options)


@features_app.command("describe")
def describe(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of text.")] = False,
    timeout: TimeoutOption = 30.0,
) -> None:
    """Supported and finalized levels of every feature the active controller (or the broker)
    knows."""
    from pykraft.tools import features_tool

    try:
        bootstrap, security = _connection(ctx)
        described = asyncio.run(features_tool.describe_features(bootstrap, timeout_s=timeout,
                                                                security=security))
    except PyKraftError as exc:
        raise fail(str(exc)) from None
    if as_json:  # the migration state is in metadata-quorum describe --json
        typer.echo(json.dumps([
            {"feature": f.name, "supportedMinVersion": f.supported_min,
             "supportedMaxVersion": f.supported_max, "finalizedVersionLevel": f.finalized,
             "epoch": f.epoch}
            for f in described.features], indent=2))
    else:
        typer.echo("\n".join(described.lines()))


@features_app.command("upgrade")
def upgrade(
    ctx: typer.Context,
    feature: Annotated[
        list[str], typer.Option("--feature", help="name=level, e.g. kraft.version=1.")
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Validate only; change nothing.")
    ] = False,
    timeout: TimeoutOption = 60.0,
) -> None:
    """Finalize higher feature levels; kraft.version=1 makes a static quorum dynamic."""
    from pykraft.tools import features_tool

    try:
        bootstrap, security = _connection(ctx)
        updates = [features_tool.parse_feature(text) for text in feature]
        for name, level in updates:
            asyncio.run(features_tool.upgrade_feature(bootstrap, name, level, dry_run=dry_run,
                                                      timeout_s=timeout, security=security))
            typer.echo(features_tool.upgraded_line(name, level, dry_run=dry_run))
    except PyKraftError as exc:
        raise fail(str(exc)) from None
