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
        help="REQUIRED: The server(s) to connect to.")] = None,
    command_config: Annotated[Path | None, typer.Option(
        "--command-config", metavar="FILE",
        help="Property file containing configs to be passed to Admin Client.")] = None,
    list_: Annotated[bool, _flag("--list", "List all consumer groups.")] = False,
    describe: Annotated[bool, _flag(
        "--describe", "Describe consumer group and list offset lag (number of messages not "
        "yet processed) related to given group.")] = False,
    delete: Annotated[bool, _flag("--delete", "Pass in groups to delete topic partition "
                                  "offsets and ownership information over the entire consumer "
                                  "group.")] = False,
    reset_offsets: Annotated[bool, _flag(
        "--reset-offsets", "Reset offsets of consumer group. Supports one consumer group at "
        "the time, and instances should be inactive. You must choose one of the following "
        "reset specifications: --to-datetime, --to-earliest, --to-latest, --shift-by, "
        "--to-offset. To define the scope use --all-topics or --topic.")] = False,
    delete_offsets: Annotated[bool, _flag(
        "--delete-offsets", "Delete offsets of consumer group. Supports one consumer group at "
        "the time, and multiple topics.")] = False,
    group: Annotated[list[str] | None, typer.Option(
        "--group", metavar="GROUP", help="The consumer group we wish to act on.")] = None,
    all_groups: Annotated[bool, _flag("--all-groups", "Apply to all consumer groups.")] = False,
    topic: Annotated[list[str] | None, typer.Option(
        "--topic", metavar="TOPIC", help="The topic whose consumer group information should "
        "be deleted or topic whose should be included in the reset offset process. In "
        "`reset-offsets` case, partitions can be specified using this format: "
        "`topic1:0,1,2`.")] = None,
    all_topics: Annotated[bool, _flag(
        "--all-topics", "Consider all topics assigned to a group in the `reset-offsets` "
        "process.")] = False,
    members: Annotated[bool, _flag("--members", "Describe members of the group. This option "
                                   "may be used with '--describe' and '--bootstrap-server' "
                                   "options only.")] = False,
    offsets: Annotated[bool, _flag("--offsets", "Describe the group and list all topic "
                                   "partitions in the group along with their offset lag. "
                                   "This is the default sub-action.")] = False,
    state: Annotated[bool, _flag("--state", "When specified with '--describe', includes the "
                                 "state of the group. When specified with '--list', it "
                                 "displays the state of all groups.")] = False,
    verbose: Annotated[bool, _flag("--verbose", "Provide additional information, if any, "
                                   "when describing the group (with --members, the "
                                   "assignment of each member).")] = False,
    to_earliest: Annotated[bool, _flag("--to-earliest", "Reset offsets to earliest offset.")
                           ] = False,
    to_latest: Annotated[bool, _flag("--to-latest", "Reset offsets to latest offset.")] = False,
    to_offset: Annotated[str | None, typer.Option(
        "--to-offset", metavar="OFFSET", help="Reset offsets to a specific offset.")] = None,
    to_datetime: Annotated[str | None, typer.Option(
        "--to-datetime", metavar="DATETIME", help="Reset offsets to offset from datetime. "
        "Format: 'YYYY-MM-DDTHH:mm:SS.sss'")] = None,
    shift_by: Annotated[str | None, typer.Option(
        "--shift-by", metavar="N", help="Reset offsets shifting current offset by 'n', where "
        "'n' can be positive or negative.")] = None,
    execute: Annotated[bool, _flag("--execute", "Execute operation. Supported operations: "
                                   "reset-offsets.")] = False,
    dry_run: Annotated[bool, _flag("--dry-run", "Only show results without executing "
                                   "changes on Consumer Groups. Supported operations: "
                                   "reset-offsets.")] = False,
    timeout: Annotated[int, typer.Option(
        "--timeout", metavar="MS", min=1, help="The timeout that can be set for some use "
        "cases. For example, it can be used when describing the group to specify the maximum "
        "amount of time in milliseconds to wait before the group stabilizes.")] = 5000,
    as_json: Annotated[bool, _flag("--json", "Print --list or --describe as JSON.")] = False,
) -> None:
    """List, describe, delete consumer groups; reset or delete their offsets."""
    from pykraft.tools import consumer_groups_tool as tool
    from pykraft.tools.admin_client import admin_settings
    from pykraft.tools.broker_clients import BrokerClients
    from pykraft.tools.consumer_groups_report import UsageError
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
