"""``pykraft console-consumer``: Kafka's ``kafka-console-consumer.sh`` (see
:mod:`pykraft.tools.console_consumer_tool`)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from pykraft.errors import PyKraftError, UsageError


def console_consumer(
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", metavar="HOST:PORT",
        help="REQUIRED: The server(s) to connect to.")] = None,
    topic: Annotated[str | None, typer.Option(
        "--topic", metavar="TOPIC", help="The topic to consume on.")] = None,
    group: Annotated[str | None, typer.Option(
        "--group", metavar="GROUP", help="The consumer group id of the consumer.")] = None,
    partition: Annotated[int | None, typer.Option(
        "--partition", metavar="PARTITION", help="The partition to consume from. Consumption "
        "starts from the end of the partition unless '--offset' is specified.")] = None,
    offset: Annotated[str | None, typer.Option(
        "--offset", metavar="OFFSET", help="The offset to consume from (a non-negative "
        "number), or 'earliest' which means from beginning, or 'latest' which means from end "
        "(default latest).")] = None,
    from_beginning: Annotated[bool, typer.Option(
        "--from-beginning", help="Start with the earliest message present in the log rather "
        "than the latest message.")] = False,
    max_messages: Annotated[int | None, typer.Option(
        "--max-messages", metavar="NUM_MESSAGES", help="The maximum number of messages to "
        "consume before exiting. If not set, consumption is continual.")] = None,
    timeout_ms: Annotated[int | None, typer.Option(
        "--timeout-ms", metavar="TIMEOUT_MS", help="If specified, exit if no message is "
        "available for consumption for the specified interval.")] = None,
    formatter: Annotated[str, typer.Option(
        "--formatter", metavar="CLASS", help="The formatter of messages (only the default).")
    ] = "org.apache.kafka.tools.consumer.DefaultMessageFormatter",
    prop: Annotated[list[str] | None, typer.Option(
        "--property", metavar="KEY=VALUE", help="A formatter property: print.timestamp, "
        "print.key, print.offset, print.epoch, print.partition, print.headers, print.value "
        "(true|false), key.separator, line.separator, headers.separator, null.literal "
        "(repeatable).")] = None,
    formatter_config: Annotated[Path | None, typer.Option(
        "--formatter-config", metavar="FILE", help="Formatter properties file; --property "
        "takes precedence.")] = None,
    consumer_property: Annotated[list[str] | None, typer.Option(
        "--consumer-property", metavar="KEY=VALUE",
        help="A consumer config key=value: client.id, security.protocol=SASL_SSL, "
        "sasl.mechanism, sasl.jaas.config, ssl.truststore.location (repeatable).")] = None,
    consumer_config: Annotated[Path | None, typer.Option(
        "--consumer.config", metavar="FILE", help="Consumer config properties file (a "
        "client.properties with security.protocol, sasl.*, ssl.*); --consumer-property takes "
        "precedence.")] = None,
) -> None:
    """Read a topic's records and print them on standard output (kafka-console-consumer.sh)."""
    from pykraft.config.properties import load_properties
    from pykraft.tools import console_consumer_tool as tool
    from pykraft.tools.admin_client import client_settings
    from pykraft.tools.broker_clients import BrokerClients, parse_key_values
    from pykraft.tools.group_member import GroupMember

    try:
        if topic is None:
            raise UsageError("Exactly one of --include/--topic is required. ")
        start = tool.start_offset(partition, offset, from_beginning)
        if bootstrap_server is None:
            raise UsageError('Missing required argument "[bootstrap-server]"')
        tool.check_formatter(formatter)
        config = tool.formatter_config({
            **(load_properties(formatter_config) if formatter_config else {}),
            **parse_key_values(prop or ())})
        file_props = load_properties(consumer_config) if consumer_config else {}
        extra_props = parse_key_values(consumer_property or ())
        group_id = tool.group_id(group, file_props, extra_props, partition)
        props = {**file_props, **extra_props}
        reset = tool.offset_reset(props, from_beginning)
        settings = client_settings(bootstrap_server, props, client_id="console-consumer")
    except PyKraftError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None

    def write(data: bytes) -> None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    count = 0

    async def main() -> bool:
        nonlocal count
        async with BrokerClients(settings) as brokers:
            if group_id is None:
                consumer = await tool.Consumer.open(brokers, topic or "", partition, start)
            else:
                consumer = await tool.Consumer.open_group(
                    brokers, topic or "", GroupMember(brokers, group_id, topic or "", props),
                    reset=reset, auto_commit=props.get("enable.auto.commit", "true")
                    .strip().lower() == "true")

            def counted(data: bytes) -> None:
                nonlocal count
                write(data)
                count += 1

            try:
                _, timed_out = await tool.consume(consumer, config, counted,
                                                  max_messages=max_messages,
                                                  timeout_ms=timeout_ms)
            finally:
                await consumer.close()
            return timed_out

    status = 0
    try:
        if asyncio.run(main()):
            typer.echo("ERROR Error processing message, terminating consumer process: "
                       "org.apache.kafka.common.errors.TimeoutException", err=True)
    except PyKraftError as exc:
        typer.echo(f"ERROR Error processing message, terminating consumer process: {exc}",
                   err=True)
        status = 1
    except KeyboardInterrupt:
        pass
    typer.echo(f"Processed a total of {count} messages", err=True)
    raise typer.Exit(status)
