"""``pykraft metadata-quorum``: Kafka's ``kafka-metadata-quorum.sh`` (describe, add-controller,
remove-controller)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from pykraft.cli.bootstrap_options import (
    BOOTSTRAP_CONTROLLER_HELP,
    BootstrapOptions,
    bootstrap_options,
    command_security,
)
from pykraft.cli.errors import fail
from pykraft.errors import PyKraftError

quorum_app = typer.Typer(
    help="Describe and change the KRaft metadata quorum (kafka-metadata-quorum.sh).",
    no_args_is_help=True,
)

TimeoutOption = Annotated[float, typer.Option(help="Seconds to keep trying.")]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Print what would be done, but do not do it.")
]


@quorum_app.callback()
def options(
    ctx: typer.Context,
    bootstrap_controller: Annotated[
        str | None,
        typer.Option("--bootstrap-controller", help=BOOTSTRAP_CONTROLLER_HELP),
    ] = None,
    bootstrap_server: Annotated[
        str | None, typer.Option("--bootstrap-server", help="host:port of a broker."),
    ] = None,
    command_config: Annotated[
        Path | None,
        typer.Option("--command-config", help="Client properties (security.protocol, ssl.*, "
                                              "sasl.*); for add-controller, also the new "
                                              "controller's server properties."),
    ] = None,
) -> None:
    """Global options, as in Kafka: exactly one bootstrap address list."""
    ctx.obj = (bootstrap_controller, bootstrap_server, command_config)


def _options(ctx: typer.Context) -> BootstrapOptions:
    return bootstrap_options(*ctx.obj)


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
    timeout: TimeoutOption = 10.0,
) -> None:
    """Describe the quorum: --status or --replication."""
    from pykraft.tools import quorum_tool

    options = _options(ctx)
    if status == replication:
        raise fail("exactly one of --status and --replication is required")
    if status and human_readable:
        raise fail("The option --human-readable is only supported along with --replication")
    try:
        bootstrap = quorum_tool.parse_bootstrap(options.bootstrap)
        info = asyncio.run(quorum_tool.describe_quorum(
            *bootstrap, timeout_s=timeout, security=command_security(options),
            with_migration_state=status or as_json))
    except PyKraftError as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(quorum_tool.as_json(info))
    elif status:
        typer.echo("\n".join(quorum_tool.status_lines(info)))
    else:
        rows = quorum_tool.replication_rows(info, human_readable=human_readable)
        typer.echo("\n".join(quorum_tool.pretty_table(quorum_tool.REPLICATION_HEADERS, rows)))


@quorum_app.command("add-controller")
def add_controller(
    ctx: typer.Context, dry_run: DryRunOption = False,
    timeout: TimeoutOption = 60.0,
    config: Annotated[
        Path | None, typer.Option("--config", help="The new controller's server properties "
                                                   "(same as the global --command-config).")
    ] = None,
) -> None:
    """Add the controller configured by --command-config to the voters (AddRaftVoter).

    The controller must be running as an observer of the quorum and caught up."""
    from pykraft.config.properties import load_properties
    from pykraft.tools import quorum_tool

    options = _options(ctx)
    properties = config or options.command_config
    if properties is None:
        raise fail("You must supply the configuration file of the controller you are "
                    "adding when using add-controller.")
    if not properties.exists():
        raise fail(f"Properties file {properties} does not exist.")
    try:
        identity = quorum_tool.controller_identity(load_properties(properties))
        if not dry_run:
            bootstrap = quorum_tool.parse_bootstrap(options.bootstrap)
            asyncio.run(quorum_tool.add_controller(bootstrap, identity, timeout_s=timeout,
                                                   security=command_security(options)))
    except PyKraftError as exc:
        raise fail(str(exc)) from None
    typer.echo(quorum_tool.added_message(identity, dry_run=dry_run))


@quorum_app.command("remove-controller")
def remove_controller(
    ctx: typer.Context,
    controller_id: Annotated[
        int, typer.Option("--controller-id", "-i", help="The id of the controller to remove.")
    ],
    controller_directory_id: Annotated[
        str, typer.Option("--controller-directory-id", "-d",
                          help="The directory id of the controller to remove.")
    ],
    dry_run: DryRunOption = False,
    timeout: TimeoutOption = 60.0,
) -> None:
    """Remove the voter (id, directory id) from the quorum (RemoveRaftVoter)."""
    from pykraft.tools import quorum_tool

    options = _options(ctx)
    try:
        node_id = quorum_tool.parse_controller_id(controller_id)
        directory_id = quorum_tool.parse_directory_id(controller_directory_id)
        if not dry_run:
            bootstrap = quorum_tool.parse_bootstrap(options.bootstrap)
            asyncio.run(quorum_tool.remove_controller(bootstrap, node_id, directory_id,
                                                      timeout_s=timeout,
                                                      security=command_security(options)))
    except PyKraftError as exc:
        raise fail(str(exc)) from None
    typer.echo(quorum_tool.removed_message(node_id, directory_id, dry_run=dry_run))
