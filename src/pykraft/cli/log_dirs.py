"""``pykraft log-dirs``: Kafka's ``kafka-log-dirs.sh`` (see
:mod:`pykraft.tools.log_dirs_tool`); failures print their message on stderr."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from pykraft.errors import PyKraftError


def log_dirs(
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", metavar="HOST:PORT",
        help="REQUIRED: the server(s) to use for bootstrapping")] = None,
    describe: Annotated[bool, typer.Option(
        "--describe", help="Describe the specified log directories on the specified brokers.")
    ] = False,
    broker_list: Annotated[str, typer.Option(
        "--broker-list", metavar="BROKER_LIST", help='The list of brokers to be queried in the '
        'form "0,1,2". All brokers in the cluster will be queried if no broker list is '
        'specified')] = "",
    topic_list: Annotated[str, typer.Option(
        "--topic-list", metavar="TOPIC_LIST", help='The list of topics to be queried in the '
        'form "topic1,topic2,topic3". All topics will be queried if no topic list is '
        'specified')] = "",
    command_config: Annotated[Path | None, typer.Option(
        "--command-config", metavar="FILE",
        help="Property file containing configs to be passed to the admin client.")] = None,
) -> None:
    """Query log directory usage on brokers (kafka-log-dirs.sh)."""
    from pykraft.tools import log_dirs_tool as tool
    from pykraft.tools.admin_client import admin_settings
    from pykraft.tools.broker_clients import BrokerClients

    for name, given in (("bootstrap-server", bootstrap_server is not None),
                        ("describe", describe)):
        if not given:
            typer.echo(f'Missing required argument "[{name}]"', err=True)
            raise typer.Exit(1)

    async def main() -> list[str]:
        settings = admin_settings(bootstrap_server or "", command_config,
                                  client_id="log-dirs-tool")
        async with BrokerClients(settings) as brokers:
            return await tool.describe(brokers, broker_list, topic_list)

    try:
        lines = asyncio.run(main())
    except PyKraftError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    for line in lines:
        typer.echo(line)
