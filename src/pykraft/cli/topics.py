"""``pykraft topics``: Kafka's ``kafka-topics.sh`` (create, list, describe, alter, delete).

Output and failures are TopicCommand's, since scripts grep them: argument errors print the
bare message on stderr, failed calls ``Error while executing topic command : <message>`` on
stdout, both with exit status 1. ``--json`` (list, describe) and ``--table`` (describe) are
pykraft's additions for machines and people.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from pykraft.errors import PyKraftError, UsageError


def _flag(name: str, text: str) -> object:
    return typer.Option(name, help=text)


def topics(
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", metavar="HOST:PORT",
        help="REQUIRED: The Kafka server(s) to connect to, host:port[,...]."
    )] = None,
    command_config: Annotated[Path | None, typer.Option(
        "--command-config", metavar="FILE",
        help="Property file containing configs to be passed to the admin "
        "client (client.id, request.timeout.ms, default.api.timeout.ms).")] = None,
    create: Annotated[bool, _flag("--create", "Create a new topic.")] = False,
    list_: Annotated[bool, _flag("--list", "List all available topics.")] = False,
    describe: Annotated[bool, _flag("--describe", "List details for the given topics.")] = False,
    alter: Annotated[bool, _flag("--alter", "Alter the number of partitions and replica "
                                 "assignment.")] = False,
    delete: Annotated[bool, _flag("--delete", "Delete a topic.")] = False,
    topic: Annotated[str | None, typer.Option(
        "--topic", metavar="TOPIC",
        help="The topic to create, alter, describe or delete. It also accepts a "
        "regular expression, except for --create.")] = None,
    topic_id: Annotated[str | None, typer.Option(
        "--topic-id", metavar="TOPIC_ID",
        help="The topic-id to describe.")] = None,
    partitions: Annotated[int | None, typer.Option(
        "--partitions", metavar="N",
        help="The number of partitions for the topic being created or "
        "altered. If not supplied with --create, the topic uses the cluster default.")] = None,
    replication_factor: Annotated[int | None, typer.Option(
        "--replication-factor", metavar="N",
        help="The replication factor for each partition in the topic "
        "being created. If not supplied, the topic uses the cluster default.")] = None,
    replica_assignment: Annotated[str | None, typer.Option(
        "--replica-assignment", metavar="B1:B2,B3:B4",
        help="Manual partition-to-broker assignments, e.g. 1:2,2:3 "
        "(partition 0 on brokers 1 and 2, partition 1 on 2 and 3).")] = None,
    config: Annotated[list[str] | None, typer.Option(
        "--config", metavar="NAME=VALUE",
        help="A topic configuration override name=value for the topic being "
        "created (repeatable).")] = None,
    if_exists: Annotated[bool, _flag(
        "--if-exists", "When altering, deleting or describing, act only if the topic "
        "exists.")] = False,
    if_not_exists: Annotated[bool, _flag(
        "--if-not-exists", "When creating, do not fail if the topic already exists.")] = False,
    exclude_internal: Annotated[bool, _flag(
        "--exclude-internal", "Exclude internal topics when listing or describing.")] = False,
    under_replicated: Annotated[bool, _flag(
        "--under-replicated-partitions", "Only show under-replicated partitions.")] = False,
    unavailable: Annotated[bool, _flag(
        "--unavailable-partitions", "Only show partitions whose leader is not available.")] = False,
    under_min_isr: Annotated[bool, _flag(
        "--under-min-isr-partitions", "Only show partitions whose isr count is less than the "
        "configured minimum.")] = False,
    at_min_isr: Annotated[bool, _flag(
        "--at-min-isr-partitions", "Only show partitions whose isr count is equal to the "
        "configured minimum.")] = False,
    topics_with_overrides: Annotated[bool, _flag(
        "--topics-with-overrides", "Only show topics that have overridden configs.")] = False,
    partition_size_limit_per_response: Annotated[int | None, typer.Option(
        "--partition-size-limit-per-response", metavar="N",
        help="The maximum partition size to be included in one DescribeTopicPartitions "
        "response.")] = None,
    as_json: Annotated[bool, _flag(
        "--json", "JSON instead of Kafka's text (with --list or --describe).")] = False,
    table: Annotated[bool, _flag(
        "--table", "A table instead of Kafka's text (with --describe).")] = False,
) -> None:
    """Create, delete, describe, or change a topic (kafka-topics.sh)."""
    from pykraft.tools import topics_tool
    from pykraft.tools.admin_client import AdminClient, admin_settings

    chosen = [name for name, given in (("create", create), ("list", list_),
                                       ("describe", describe), ("alter", alter),
                                       ("delete", delete)) if given]
    reports = frozenset(name for name, given in (
        ("under-replicated-partitions", under_replicated),
        ("unavailable-partitions", unavailable), ("under-min-isr-partitions", under_min_isr),
        ("at-min-isr-partitions", at_min_isr)) if given)
    options = topics_tool.TopicOptions(
        action=chosen[0] if len(chosen) == 1 else None, actions=len(chosen),
        bootstrap_server=bootstrap_server, topic=topic, topic_id=topic_id,
        partitions=partitions, replication_factor=replication_factor,
        replica_assignment=replica_assignment, configs=tuple(config or ()),
        if_exists=if_exists, if_not_exists=if_not_exists, exclude_internal=exclude_internal,
        reports=reports, topics_with_overrides=topics_with_overrides,
        partition_size_limit_per_response=partition_size_limit_per_response)
    try:
        topics_tool.check_options(options)
        if as_json and options.action not in ("list", "describe"):
            raise UsageError("--json applies to --list and --describe only")
        if table and options.action != "describe":
            raise UsageError("--table applies to --describe only")
    except UsageError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None

    async def main() -> None:
        async with AdminClient(admin_settings(bootstrap_server or "", command_config)) as admin:
            if as_json and options.action == "list":
                names = await topics_tool.list_topics(
                    admin, options.topic, exclude_internal=options.exclude_internal)
                typer.echo(json.dumps(names, indent=2))
            elif as_json or table:
                description = await topics_tool.describe_topics(admin, options)
                if as_json:
                    typer.echo(json.dumps(topics_tool.describe_json(description, options),
                                          indent=2))
                else:
                    _print_table(topics_tool.describe_rows(description, options))
            else:
                await topics_tool.run(admin, options, typer.echo)

    try:
        asyncio.run(main())
    except UsageError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    except PyKraftError as exc:
        typer.echo(f"Error while executing topic command : {exc}")
        raise typer.Exit(1) from None


def _print_table(rows: list[tuple[str, ...]]) -> None:
    from rich.console import Console
    from rich.table import Table

    from pykraft.tools.topics_tool import TABLE_HEADERS

    table = Table(*TABLE_HEADERS)
    for row in rows:
        table.add_row(*row)
    Console().print(table)
