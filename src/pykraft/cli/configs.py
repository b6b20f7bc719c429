"""``pykraft configs``: Kafka's ``kafka-configs.sh`` (see :mod:`pykraft.tools.configs_tool`);
refusals and failed calls print their message on stderr and exit with status 1."""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path
from typing import Annotated

import typer

from pykraft.errors import PyKraftError


def configs(
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", metavar="HOST:PORT",
        help="The Kafka servers to connect to.")] = None,
    bootstrap_controller: Annotated[str | None, typer.Option(
        "--bootstrap-controller", metavar="HOST:PORT",
        help="The Kafka controllers to connect to.")] = None,
    command_config: Annotated[Path | None, typer.Option(
        "--command-config", metavar="FILE",
        help="Property file containing configs to be passed to Admin Client "
        "(security.protocol, ssl.*, sasl.mechanism, sasl.jaas.config, client.id, ...).")
    ] = None,
    alter: Annotated[bool, typer.Option("--alter", help="Alter the configuration for the "
                                        "entity.")] = False,
    describe: Annotated[bool, typer.Option("--describe", help="List configs for the given "
                                           "entity.")] = False,
    describe_all: Annotated[bool, typer.Option(
        "--all", help="List all configs for the given entity, including static configs if "
        "available.")] = False,
    entity_type: Annotated[list[str] | None, typer.Option(
        "--entity-type", metavar="TYPE",
        help="Type of entity: topics, brokers, users, clients or ips (broker-loggers, "
        "client-metrics and groups are not served by pykraft).")] = None,
    entity_name: Annotated[list[str] | None, typer.Option(
        "--entity-name", metavar="NAME",
        help="Name of entity (topic name/broker id/user principal name/client id/ip).")
    ] = None,
    entity_default: Annotated[bool, typer.Option(
        "--entity-default", help="Default entity name for clients/users/brokers/ips "
        "(applies to corresponding entity type).")] = False,
    add_config: Annotated[str | None, typer.Option(
        "--add-config", metavar="K=V,...",
        help="Key Value pairs of configs to add. Square brackets can be used to group values "
        "which contain commas: 'k1=v1,k2=[v1,v2,v2],k3=v3'. For users: "
        "'SCRAM-SHA-512=[password=secret],SCRAM-SHA-256=[iterations=8192,password=secret]'."
    )] = None,
    add_config_file: Annotated[Path | None, typer.Option(
        "--add-config-file", metavar="FILE",
        help="Path to a properties file with configs to add.")] = None,
    delete_config: Annotated[list[str] | None, typer.Option(
        "--delete-config", metavar="K1,K2", help="config keys to remove 'k1,k2'.")] = None,
    topic: Annotated[str | None, typer.Option("--topic", help="The topic's name.")] = None,
    broker: Annotated[str | None, typer.Option("--broker", help="The broker's ID.")] = None,
    broker_defaults: Annotated[bool, typer.Option(
        "--broker-defaults", help="The config defaults for all brokers.")] = False,
    broker_logger: Annotated[str | None, typer.Option(
        "--broker-logger", help="The broker's ID for its logger config (not served).")
    ] = None,
    user: Annotated[str | None, typer.Option("--user", help="The user's principal name.")
                    ] = None,
    user_defaults: Annotated[bool, typer.Option(
        "--user-defaults", help="The config defaults for all users.")] = False,
    client: Annotated[str | None, typer.Option("--client", help="The client's ID.")] = None,
    client_defaults: Annotated[bool, typer.Option(
        "--client-defaults", help="The config defaults for all clients.")] = False,
    ip: Annotated[str | None, typer.Option("--ip", help="The IP address.")] = None,
    ip_defaults: Annotated[bool, typer.Option(
        "--ip-defaults", help="The config defaults for all IPs.")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="With --describe: the entities as a JSON list.")] = False,
) -> None:
    """Describe and alter topic and broker configs, client quotas and users' SCRAM
    credentials (kafka-configs.sh)."""
    from pykraft.tools import configs_tool as tool
    from pykraft.tools.admin_client import admin_settings
    from pykraft.tools.configs_args import ConfigsArgs, check_args

    async def main() -> list[str]:
        command = check_args(ConfigsArgs(
            bootstrap_server=bootstrap_server, bootstrap_controller=bootstrap_controller,
            describe=describe, alter=alter, describe_all=describe_all,
            entity_types=tuple(entity_type or ()), entity_names=tuple(entity_name or ()),
            entity_default=entity_default, topic=topic, broker=broker,
            broker_defaults=broker_defaults, broker_logger=broker_logger, user=user,
            user_defaults=user_defaults, client=client, client_defaults=client_defaults,
            ip=ip, ip_defaults=ip_defaults,
            add_config=add_config, add_config_file=add_config_file,
            delete_config=tuple(delete_config or ())))
        settings = admin_settings(command.bootstrap, command_config)
        clients = tool.ConfigsClients(settings, controllers=command.controllers)
        async with clients:
            if command.alter:
                return [await tool.alter(clients, command,
                                         new_salt=lambda: secrets.token_bytes(tool.SALT_BYTES))]
            reports = await tool.describe(clients, command)
        return [json.dumps(tool.as_json(reports))] if as_json else tool.lines(reports)

    try:
        out = asyncio.run(main())
    except (PyKraftError, OSError) as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    for line in out:
        typer.echo(line)
