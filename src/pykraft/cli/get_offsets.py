"""``pykraft get-offsets``: Kafka's ``kafka-get-offsets.sh`` (see
:mod:`pykraft.tools.get_offsets_tool`); failures print ``Error occurred: <message>``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from pykraft.errors import PyKraftError


def get_offsets(
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", metavar="HOST1:PORT1,...",
        help="REQUIRED. The server(s) to connect to in the form HOST1:PORT1,HOST2:PORT2.")] = None,
    topic: Annotated[str | None, typer.Option(
        "--topic", metavar="TOPIC", help="The topic to get the offsets for. It also accepts a "
        "regular expression. If not present, all topics are queried.")] = None,
    partitions: Annotated[str | None, typer.Option(
        "--partitions", metavar="PARTITION_IDS", help="Comma separated list of partition ids "
        "to get the offsets for. If not present, all partitions are queried.")] = None,
    topic_partitions: Annotated[str | None, typer.Option(
        "--topic-partitions", metavar="topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3",
        help="Comma separated list of topic-partition patterns (topic regex, then :N, :N-M "
        "upper exclusive, :N- or :-M). Cannot be used with --topic or --partitions.")] = None,
    time: Annotated[str, typer.Option(
        "--time", metavar="TIMESTAMP", help="<timestamp> / -1 or latest / -2 or earliest / -3 "
        "or max-timestamp / -4 or earliest-local / -5 or latest-tiered.")] = "latest",
    command_config: Annotated[Path | None, typer.Option(
        "--command-config", metavar="FILE",
        help="Property file containing configs to be passed to the admin client.")] = None,
    exclude_internal_topics: Annotated[bool, typer.Option(
        "--exclude-internal-topics", help="Exclude internal topics (included by default).")
    ] = False,
) -> None:
    """Print topic:partition:offset of partitions at a time (kafka-get-offsets.sh)."""
    from pykraft.tools import get_offsets_tool as tool
    from pykraft.tools.admin_client import admin_settings
    from pykraft.tools.broker_clients import BrokerClients

    def warn(line: str) -> None:
        typer.echo(line, err=True)

    async def main() -> list[str]:
        wanted = tool.check_options(topic_partitions, topic, partitions)
        timestamp = tool.parse_time(time)
        settings = admin_settings(bootstrap_server or "", command_config,
                                  client_id="GetOffsetShell")
        async with BrokerClients(settings) as brokers:
            return tool.offset_lines(await tool.get_offsets(
                brokers, wanted, timestamp, exclude_internal=exclude_internal_topics,
                warn=warn))

    if bootstrap_server is None:
        typer.echo('Missing required argument "[bootstrap-server]"', err=True)
        raise typer.Exit(1)
    try:
        lines = asyncio.run(main())
    except PyKraftError as exc:
        typer.echo(f"Error occurred: {exc}", err=True)
        raise typer.Exit(1) from None
    sys.stdout.write("".join(line + "\n" for line in lines))
