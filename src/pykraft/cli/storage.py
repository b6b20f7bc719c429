"""``pykraft storage``: Kafka's ``kafka-storage.sh`` (format, info, random-uuid)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pykraft.cli.errors import fail
from pykraft.config.server import ServerConfig
from pykraft.errors import PyKraftError
from pykraft.features import DEFAULT_METADATA_VERSION, parse_release_version
from pykraft.ids import random_uuid, uuid_to_str

storage_app = typer.Typer(
    help="Format and inspect KRaft storage directories (kafka-storage.sh).",
    no_args_is_help=True,
)

ConfigOption = Annotated[
    Path, typer.Option("--config", "-c", help="The server's .properties file.")
]


@storage_app.command("random-uuid")
def random_uuid_command() -> None:
    """Print a random UUID usable as a cluster id or directory id."""
    typer.echo(uuid_to_str(random_uuid()))


@storage_app.command("format")
def format_command(
    config: ConfigOption,
    cluster_id: Annotated[
        str, typer.Option("--cluster-id", "-t", help="Cluster id (pykraft storage random-uuid).")
    ],
    standalone: Annotated[
        bool, typer.Option("--standalone", "-s", help="This controller is the only initial voter.")
    ] = False,
    initial_controllers: Annotated[
        str | None,
        typer.Option("--initial-controllers", "-I", help="Initial voters id@host:port:dirId,..."),
    ] = None,
    no_initial_controllers: Annotated[
        bool,
        typer.Option("--no-initial-controllers", "-N", help="Join an existing dynamic quorum."),
    ] = False,
    release_version: Annotated[
        str,
        typer.Option("--release-version", "-r", help="metadata.version, e.g. 3.9-IV0 or 3.9."),
    ] = DEFAULT_METADATA_VERSION.name,
    feature: Annotated[
        list[str] | None, typer.Option("--feature", "-f", help="name=level, e.g. kraft.version=1.")
    ] = None,
    ignore_formatted: Annotated[
        bool, typer.Option("--ignore-formatted", "-g", help="Skip directories already formatted.")
    ] = False,
    add_scram: Annotated[
        list[str] | None,
        typer.Option("--add-scram", "-S", help=(
            "A SCRAM credential for the metadata log (repeatable), e.g. "
            "'SCRAM-SHA-256=[name=alice,password=alice-secret]' or "
            """'SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]'"""
        )),
    ] = None,
) -> None:
    """Format the node's log directories (meta.properties, bootstrap.checkpoint, voters)."""
    from pykraft.tools.storage_tool import (
        FormatRequest,
        QuorumMode,
        cluster_id_warning,
        format_storage,
        parse_feature,
    )

    chosen = [standalone, initial_controllers is not None, no_initial_controllers]
    if sum(chosen) > 1:
        raise fail(
            "only one of --standalone, --initial-controllers and --no-initial-controllers "
            "may be given"
        )
    mode = QuorumMode.STATIC
    if standalone:
        mode = QuorumMode.STANDALONE
    elif initial_controllers is not None:
        mode = QuorumMode.INITIAL_CONTROLLERS
    elif no_initial_controllers:
        mode = QuorumMode.NO_INITIAL_CONTROLLERS
    try:
        request = FormatRequest(
            config=ServerConfig.load(config),
            cluster_id=cluster_id,
            mode=mode,
            initial_controllers=initial_controllers,
            release_version=parse_release_version(release_version),
            features=tuple(parse_feature(f) for f in feature or ()),
            ignore_formatted=ignore_formatted,
            scram=tuple(add_scram or ()),
        )
        lines = format_storage(request)
    except PyKraftError as exc:
        raise fail(str(exc)) from None
    warning = cluster_id_warning(cluster_id)
    if warning is not None:
        typer.echo(warning, err=True)
    for line in lines:
        typer.echo(line)


@storage_app.command("info")
def info_command(config: ConfigOption) -> None:
    """Describe the node's log directories and report any problem (exit 1)."""
    from pykraft.tools.storage_tool import storage_info

    try:
        info = storage_info(ServerConfig.load(config))
    except PyKraftError as exc:
        raise fail(str(exc)) from None
    for line in info.lines:
        typer.echo(line)
    if not info.ok:
        raise typer.Exit(1)
