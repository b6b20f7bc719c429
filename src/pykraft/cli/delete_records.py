"""``pykraft delete-records``: Kafka's ``kafka-delete-records.sh`` (see
:mod:`pykraft.tools.delete_records_tool`); failures print their message on stderr."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from pykraft.errors import PyKraftError


def delete_records(
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", metavar="HOST:PORT",
        help="REQUIRED: The server to connect to.")] = None,
    offset_json_file: Annotated[Path | None, typer.Option(
        "--offset-json-file", metavar="FILE",
        help='REQUIRED: The JSON file with offset per partition. The format to use is: '
        '{"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], "version":1}')] = None,
    command_config: Annotated[Path | None, typer.Option(
        "--command-config", metavar="FILE",
        help="A property file containing configs to be passed to the admin client.")] = None,
) -> None:
    """Delete records of the given partitions down to an offset (kafka-delete-records.sh)."""
    from pykraft.tools import delete_records_tool as tool
    from pykraft.tools.admin_client import admin_settings
    from pykraft.tools.broker_clients import BrokerClients

    for name, value in (("bootstrap-server", bootstrap_server),
                        ("offset-json-file", offset_json_file)):
        if value is None:
            typer.echo(f'Missing required argument "[{name}]"', err=True)
            raise typer.Exit(1)
    assert offset_json_file is not None

    async def main() -> list[str]:
        offsets = tool.parse_offset_json(offset_json_file.read_text(encoding="utf-8"))
        async with BrokerClients(admin_settings(bootstrap_server or "", command_config)) as b:
            return await tool.delete_records(b, offsets)

    try:
        lines = asyncio.run(main())
    except (PyKraftError, OSError) as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    for line in lines:
        typer.echo(line)
