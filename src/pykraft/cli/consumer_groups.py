"""``pykraft consumer-groups``: Kafka's ``kafka-consumer-groups.sh`` (list, describe, delete,
reset offsets, delete offsets; see :mod:`pykraft.tools.consumer_groups_tool`).

Argument errors print the bare message on stderr; failed calls print ``Error: Executing
consumer group command failed due to <message>`` on stdout, as ConsumerGroupCommand does;
both exit 1. ``--json`` (list, describe) is pykraft's addition for machines.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from pykraft.errors import PyKraftError


def _flag(name: str, text: str) -> object:
    return typer.Option(name, help=text)


def consumer_groups(
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", metavar="HOST:PORT",
        help="REQUIRED: broker address(es) to bootstrap from, host:port[,...].")] = None,
    command_config: Annotated[Path | None, typer.Option(
        "--command-config", metavar="FILE",
        help="Client properties file (client.id, request.timeout.ms, ...).")] = None,
    list_: Annotated[bool, _flag("--list", "Print the id of every group the brokers know.")
                     ] = False,
    describe: Annotated[bool, _flag(
        "--describe", "Show a group's committed offsets, log end offsets and lag per "
        "partition (or its members / state with --members / --state).")] = False,
    delete: Annotated[bool, _flag("--delete", "Remove empty groups with all their committed "
                                  "offsets.")] = False,
    reset_offsets: Annotated[bool, _flag(
        "--reset-offsets", "Move an inactive group's committed offsets: one of --to-earliest, "
        "--to-latest, --to-offset, --to-datetime, --shift-by, over --topic or --all-topics; "
        "a dry run unless --execute.")] = False,
    delete_offsets: Annotated[bool, _flag(
        "--delete-offsets", "Remove one group's committed offsets for the --topic(s) given "
        "(not for topics its members subscribe to).")] = False,
    group: Annotated[list[str] | None, typer.Option(
        "--group", metavar="GROUP",
        help="A group id (repeatable where the action takes several).")] = None,
    all_groups: Annotated[bool, _flag("--all-groups", "Act on every group.")] = False,
    topic: Annotated[list[str] | None, typer.Option(
        "--topic", metavar="TOPIC", help="A topic to act on; with --reset-offsets, `topic:0,1,2` "
        "limits it to those partitions.")] = None,
    all_topics: Annotated[bool, _flag(
        "--all-topics", "With --reset-offsets: every topic the group has offsets "
        "for.")] = False,
    members: Annotated[bool, _flag("--members", "With --describe: one line per member (id, "
                                   "host, client id, partition count).")] = False,
    offsets: Annotated[bool, _flag("--offsets", "With --describe: one line per partition "
                                   "with its lag (the default).")] = False,
    state: Annotated[bool, _flag("--state", "With --describe: the group's coordinator, "
                                 "assignor, state and size; with --list: a STATE column.")] = False,
    verbose: Annotated[bool, _flag("--verbose", "With --members: each member's assigned "
                                   "partitions too.")] = False,
    to_earliest: Annotated[bool, _flag("--to-earliest", "To each partition's log start offset.")
                           ] = False,
    to_latest: Annotated[bool, _flag("--to-latest", "To each partition's log end offset.")] = False,
    to_offset: Annotated[str | None, typer.Option(
        "--to-offset", metavar="OFFSET",
        help="To this offset (kept within the log's range).")] = None,
    to_datetime: Annotated[str | None, typer.Option(
        "--to-datetime", metavar="DATETIME", help="To the first offset at or after this time, "
        "YYYY-MM-DDTHH:mm:SS.sss (optionally with a zone offset).")] = None,
    shift_by: Annotated[str | None, typer.Option(
        "--shift-by", metavar="N",
        help="By N from the committed offset (N may be negative).")] = None,
    execute: Annotated[bool, _flag("--execute", "Apply the --reset-offsets plan.")] = False,
    dry_run: Annotated[bool, _flag("--dry-run", "Print the --reset-offsets plan only (the "
                                   "default).")] = False,
    timeout: Annotated[int, typer.Option(
        "--timeout", metavar="MS", min=1, help="How long to wait for the brokers' answers, in "
        "milliseconds.")] = 5000,
    as_json: Annotated[bool, _flag("--json", "Print --list or --describe as JSON.")] = False,
) -> None:
    """List, describe, delete consumer groups; reset or delete their offsets."""
    from pykraft.errors import UsageError
    from pykraft.tools import consumer_groups_tool as tool
    from pykraft.tools.admin_client import admin_settings
    from pykraft.tools.broker_clients import BrokerClients
    from pykraft.tools.group_admin import GroupClient

    chosen = {"list": list_, "describe": describe, "delete": delete,
              "reset-offsets": reset_offsets, "delete-offsets": delete_offsets}
    scenarios = {"to-earliest": to_earliest or None, "to-latest": to_latest or None,
                 "to-offset": to_offset, "to-datetime": to_datetime, "shift-by": shift_by}
    options = tool.GroupOptions(
        actions=tuple(a for a, on in chosen.items() if on), groups=tuple(group or ()),
        all_groups=all_groups, members=members, state=state, offsets=offsets, verbose=verbose,
        topics=tuple(topic or ()), all_topics=all_topics,
        scenarios=tuple((name, None if value is True else value)
                        for name, value in scenarios.items() if value is not None),
        execute=execute, dry_run=dry_run)
    try:
        if bootstrap_server is None:
            raise UsageError("Missing required argument \"[bootstrap-server]\"")
        tool.check_options(options)
        if as_json and options.action not in ("list", "describe"):
            raise UsageError("--json applies to --list and --describe only")
    except UsageError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None

    def emit(stream: str, line: str) -> None:
        typer.echo(line, err=stream == "err")

    async def main() -> int:
        settings = admin_settings(bootstrap_server or "", command_config)
        async with BrokerClients(settings) as brokers:
            client = GroupClient(brokers, timeout / 1000)
            if not as_json:
                return await tool.run(client, options, emit)
            if options.action == "list":
                listed = await client.list_groups()
                document: object = [{"group": g, "state": s} for g, s in sorted(listed.items())]
            else:
                document = await tool.describe_json(client, options)
            typer.echo(json.dumps(document, indent=2))
            return 0

    try:
        status = asyncio.run(main())
    except UsageError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    except PyKraftError as exc:
        typer.echo(f"\nError: Executing consumer group command failed due to {exc}")
        raise typer.Exit(1) from None
    raise typer.Exit(status)
