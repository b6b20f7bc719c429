"""``pykraft console-producer``: Kafka's ``kafka-console-producer.sh`` (see
:mod:`pykraft.tools.console_producer_tool`): each stdin line is a record."""

from __future__ import annotations

import asyncio
import codecs
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

from pykraft.errors import PyKraftError

if TYPE_CHECKING:
    from pykraft.tools.console_producer_tool import LineReader, Producer

_CHUNK_BYTES = 64 * 1024  # one read of stdin at most: lines parsed between two hand-offs

def console_producer(
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", metavar="HOST1:PORT1,HOST2:PORT2",
        help="REQUIRED: The server(s) to connect to.")] = None,
    topic: Annotated[str | None, typer.Option(
        "--topic", metavar="TOPIC", help="REQUIRED: The topic name to produce messages to.")
    ] = None,
    sync: Annotated[bool, typer.Option(
        "--sync", help="Send each message synchronously, one at a time as they arrive.")
    ] = False,
    compression_codec: Annotated[str | None, typer.Option(
        "--compression-codec", metavar="CODEC",
        help="The compression codec: either 'none', 'gzip', 'snappy', 'lz4', or 'zstd'.")
    ] = None,
    request_required_acks: Annotated[str | None, typer.Option(
        "--request-required-acks", metavar="ACKS",
        help="The required `acks` of the producer requests (default -1).")] = None,
    request_timeout_ms: Annotated[int | None, typer.Option(
        "--request-timeout-ms", metavar="MS",
        help="The ack timeout of the producer requests (default 1500).")] = None,
    batch_size: Annotated[int | None, typer.Option(
        "--batch-size", metavar="SIZE", help="Bytes of a partition's batch before it is sent "
        "when not sending synchronously (batch.size, default 16384).")] = None,
    timeout: Annotated[int | None, typer.Option(
        "--timeout", metavar="MS", help="The longest a message waits for its batch to fill "
        "(linger.ms, default 1000).")] = None,
    message_send_max_retries: Annotated[int | None, typer.Option(
        "--message-send-max-retries", metavar="N", help="Retries before a message is dropped "
        "(retries, default 3).")] = None,
    retry_backoff_ms: Annotated[int | None, typer.Option(
        "--retry-backoff-ms", metavar="MS",
        help="Wait before each retry (retry.backoff.ms, default 100).")] = None,
    prop: Annotated[list[str] | None, typer.Option(
        "--property", metavar="KEY=VALUE", help="A line reader property: parse.key, "
        "key.separator, parse.headers, headers.delimiter, headers.separator, "
        "headers.key.separator, ignore.error, null.marker (repeatable).")] = None,
    reader_config: Annotated[Path | None, typer.Option(
        "--reader-config", metavar="FILE", help="Config properties file for the line reader; "
        "--property takes precedence.")] = None,
    producer_property: Annotated[list[str] | None, typer.Option(
        "--producer-property", metavar="KEY=VALUE",
        help="A producer config key=value, e.g. security.protocol=SASL_SSL, sasl.mechanism, "
        "sasl.jaas.config, ssl.truststore.location, client.id (repeatable).")] = None,
    producer_config: Annotated[Path | None, typer.Option(
        "--producer.config", metavar="FILE", help="Producer config properties file (a "
        "client.properties with security.protocol, sasl.*, ssl.*); --producer-property takes "
        "precedence.")] = None,
) -> None:
    """Read lines from standard input and publish them to a topic (kafka-console-producer.sh)."""
    from pykraft.config.properties import load_properties
    from pykraft.tools import console_producer_tool as tool
    from pykraft.tools.admin_client import client_settings
    from pykraft.tools.broker_clients import BrokerClients, parse_key_values

    for name, value in (("topic", topic), ("bootstrap-server", bootstrap_server)):
        if not value:
            typer.echo(f'Missing required argument "[{name}]"', err=True)
            raise typer.Exit(1)
    try:
        props = {**(load_properties(producer_config) if producer_config else {}),
                 **parse_key_values(producer_property or ())}
        # Kafka's maybeMergeOptions: an option given wins, a default only fills a gap
        for key, given, default in (
                ("acks", request_required_acks, "-1"),
                ("request.timeout.ms", request_timeout_ms, 1500),
                ("batch.size", batch_size, 16384), ("linger.ms", timeout, 1000),
                ("retries", message_send_max_retries, 3),
                ("retry.backoff.ms", retry_backoff_ms, 100)):
            if given is not None or key not in props:
                props[key] = str(default if given is None else given)
        props["compression.type"] = compression_codec or "none"
        settings = tool.producer_settings(props)
        reader = tool.LineReader(tool.reader_config({
            **(load_properties(reader_config) if reader_config else {}),
            **parse_key_values(prop or ())}))
        client = client_settings(bootstrap_server or "", props, client_id="console-producer")
    except PyKraftError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None

    def warn(line: str) -> None:
        typer.echo(line, err=True)

    async def main() -> int:
        async with BrokerClients(client) as brokers:
            producer = await tool.Producer.open(brokers, topic or "", settings, warn=warn)
            await _pump(sys.stdin, reader, producer, sync=sync)
            return producer.failed

    try:
        failed = asyncio.run(main())
    except PyKraftError as exc:
        typer.echo(f"ERROR {exc}", err=True)
        raise typer.Exit(1) from None
    if failed and sync:
        raise typer.Exit(1)


async def _pump(stream: TextIO, reader: LineReader, producer: Producer, *, sync: bool) -> None:
    """Feed stdin's lines to the producer, sending a batch when full, after linger.ms, per
    record with ``--sync``, and the rest at the end; a sync failure stops at once. Input is
    read a chunk at a time (whatever is there, up to 64 KiB), so a line typed at a terminal
    is sent at once and a piped file costs one thread hand-off per chunk, not per line."""
    loop = asyncio.get_running_loop()
    chunks = _LineChunks(stream)
    next_chunk: asyncio.Future[list[str] | None] | None = None
    while True:
        if next_chunk is None:
            next_chunk = loop.run_in_executor(None, chunks.read)
        wait = None
        if producer.oldest_ms is not None:
            wait = max(0.0, (producer.oldest_ms + producer.settings.linger_ms) / 1000
                       - time.monotonic())
        done, _ = await asyncio.wait({next_chunk}, timeout=wait)
        if not done:
            await producer.send()
            continue
        lines, next_chunk = next_chunk.result(), None
        if lines is None:
            break
        for line in lines:
            full = producer.add(reader.parse(line))
            if sync:
                await producer.flush()
                if producer.failed:
                    return
            elif full:
                await producer.send()
    await producer.flush()


class _LineChunks:
    """The lines of a text stream, as many as one read of its bytes returns (a line's end
    is ``\n``, with a ``\r`` before it dropped, as ``readLine`` does)."""

    def __init__(self, stream: TextIO) -> None:
        self._read: Callable[[int], bytes] = getattr(stream.buffer, "read1", stream.buffer.read)
        self._decoder = codecs.getincrementaldecoder(stream.encoding or "utf-8")(
            errors=stream.errors or "strict")
        self._partial = ""

    def read(self) -> list[str] | None:
        """The next complete lines (a last one without an end at EOF); None after EOF."""
        while True:
            data = self._read(_CHUNK_BYTES)
            text = self._partial + self._decoder.decode(data, final=not data)
            if not data:
                self._partial = ""
                return [text.removesuffix("\r")] if text else None
            *lines, self._partial = text.split("\n")
            if lines:
                return [line.removesuffix("\r") for line in lines]
