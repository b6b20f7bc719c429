"""``pykraft transactions``: Kafka's ``kafka-transactions.sh`` (list, describe,
describe-producers, abort, find-hanging, forceTerminateTransaction; see
:mod:`pykraft.tools.transactions_tool`).

Global options before the command, as Kafka's: ``--bootstrap-server`` (required) and
``--command-config``. Tables go to stdout; a failure prints Kafka's line on stderr and exits 1,
a missing required argument ``kafka-transactions.sh: error: argument --X is required`` (the
last line of Kafka's argparse message). ``--json`` (list, describe, describe-producers,
find-hanging) is pykraft's addition, for machines.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from pykraft.errors import PyKraftError

if TYPE_CHECKING:
    from pykraft.tools.txn_admin import ProducerInfo, TxnAdmin

T = TypeVar("T")

transactions_app = typer.Typer(
    help="Analyze the transactional state of producers in the cluster; detect and recover "
         "from hanging transactions (kafka-transactions.sh).",
    no_args_is_help=True,
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON "
                                          "(pykraft's addition).")]
TopicOption = Annotated[str | None, typer.Option("--topic", metavar="TOPIC", help="topic name")]
PartitionOption = Annotated[int | None, typer.Option("--partition", metavar="PARTITION",
                                                     help="partition number")]


@transactions_app.callback()
def options(
    ctx: typer.Context,
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", metavar="host:port",
        help="REQUIRED: hostname and port for the broker to connect to, in the form "
             "`host:port` (multiple comma-separated entries can be given)")] = None,
    command_config: Annotated[Path | None, typer.Option(
        "--command-config", metavar="FILE",
        help="property file containing configs to be passed to admin client")] = None,
) -> None:
    """This tool is used to analyze the transactional state of producers in the cluster. It
    can be used to detect and recover from hanging transactions."""
    ctx.obj = (bootstrap_server, command_config)


def _usage_error(argument: str) -> typer.Exit:
    typer.echo(f"kafka-transactions.sh: error: argument {argument} is required", err=True)
    return typer.Exit(1)


def _required(**given: object) -> None:
    """Kafka's argparse check of required arguments, global ones first."""
    for name, value in given.items():
        if value is None:
            raise _usage_error("--" + name.replace("_", "-"))


def _run(ctx: typer.Context, work: Callable[[TxnAdmin], Awaitable[T]]) -> T:
    """``work`` with an admin client of the global options; Kafka's error line and exit 1
    when it fails."""
    from pykraft.tools.admin_client import admin_settings
    from pykraft.tools.broker_clients import BrokerClients
    from pykraft.tools.txn_admin import TxnAdmin

    bootstrap, command_config = ctx.obj
    _required(bootstrap_server=bootstrap)
    if command_config is not None and not command_config.exists():
        typer.echo(f"Failed to load admin client properties: {command_config}. Enable debug "
                   "logging for additional detail.", err=True)
        raise typer.Exit(1)

    async def main() -> T:
        settings = admin_settings(bootstrap, command_config)
        async with BrokerClients(settings) as brokers:
            return await work(TxnAdmin(brokers, settings.api_timeout_s,
                                       int(settings.request_timeout_s * 1000)))

    try:
        return asyncio.run(main())
    except PyKraftError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None


def _now_ms() -> int:
    return int(time.time() * 1000)


def _print_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    from pykraft.tools.transactions_tool import table

    typer.echo("\n".join(table(headers, rows)))


def _producer_json(p: ProducerInfo) -> dict[str, int | None]:
    return {"producerId": p.producer_id, "producerEpoch": p.producer_epoch,
            "latestCoordinatorEpoch": p.coordinator_epoch, "lastSequence": p.last_sequence,
            "lastTimestamp": p.last_timestamp,
            "currentTransactionStartOffset": p.txn_start_offset}


@transactions_app.command("list")
def list_(
    ctx: typer.Context,
    duration_filter: Annotated[int | None, typer.Option(
        "--duration-filter", metavar="DURATION_FILTER",
        help="Duration (in millis) to filter by: if < 0, all transactions will be returned; "
             "otherwise, only transactions running longer than this duration will be "
             "returned")] = None,
    transactional_id_pattern: Annotated[str | None, typer.Option(
        "--transactional-id-pattern", metavar="TRANSACTIONAL_ID_PATTERN",
        help="Transactional id regular expression pattern to filter by")] = None,
    as_json: JsonOption = False,
) -> None:
    """list transactions"""
    from pykraft.tools import transactions_tool as tool

    rows = _run(ctx, lambda admin: tool.list_rows(admin, duration_filter=duration_filter,
                                                  pattern=transactional_id_pattern))
    if as_json:
        typer.echo(json.dumps([{"transactionalId": t, "coordinator": int(c),
                                "producerId": int(p), "transactionState": s}
                               for t, c, p, s in rows], indent=2))
    else:
        _print_table(tool.LIST_HEADERS, rows)


@transactions_app.command("describe")
def describe(
    ctx: typer.Context,
    transactional_id: Annotated[str | None, typer.Option(
        "--transactional-id", metavar="TRANSACTIONAL_ID", help="transactional id")] = None,
    as_json: JsonOption = False,
) -> None:
    """describe the state of an active transactional-id"""
    from pykraft.tools import transactions_tool as tool

    _required(bootstrap_server=ctx.obj[0], transactional_id=transactional_id)
    assert transactional_id is not None
    found = _run(ctx, lambda admin: tool.describe(admin, transactional_id))
    now_ms = _now_ms()
    if as_json:
        typer.echo(json.dumps({
            "coordinatorId": found.coordinator_id, "transactionalId": transactional_id,
            "producerId": found.producer_id, "producerEpoch": found.producer_epoch,
            "transactionState": found.state, "transactionTimeoutMs": found.timeout_ms,
            "currentTransactionStartTimeMs": found.start_ms,
            "transactionDurationMs": None if found.start_ms is None else now_ms - found.start_ms,
            "topicPartitions": [{"topic": t, "partition": p} for t, p in found.partitions],
        }, indent=2))
    else:
        _print_table(tool.DESCRIBE_HEADERS, [tool.describe_row(transactional_id, found, now_ms)])


@transactions_app.command("describe-producers")
def describe_producers(
    ctx: typer.Context,
    broker_id: Annotated[int | None, typer.Option(
        "--broker-id", metavar="BROKER_ID", help="optional broker id to describe the producer "
        "state on a specific replica")] = None,
    topic: TopicOption = None,
    partition: PartitionOption = None,
    as_json: JsonOption = False,
) -> None:
    """describe the states of active producers for a topic partition"""
    from pykraft.ids import TopicPartition
    from pykraft.tools import transactions_tool as tool

    _required(bootstrap_server=ctx.obj[0], topic=topic, partition=partition)
    assert topic is not None and partition is not None
    found = _run(ctx, lambda admin: tool.producers(admin, TopicPartition(topic, partition),
                                                   broker_id))
    if as_json:
        typer.echo(json.dumps([_producer_json(p) for p in found], indent=2))
    else:
        _print_table(tool.PRODUCERS_HEADERS, [tool.producer_row(p) for p in found])


@transactions_app.command("abort")
def abort(
    ctx: typer.Context,
    topic: TopicOption = None,
    partition: PartitionOption = None,
    start_offset: Annotated[int | None, typer.Option(
        "--start-offset", metavar="START_OFFSET", help="start offset of the transaction to "
        "abort (brokers on versions 3.0 and above: nothing else is required)")] = None,
    producer_id: Annotated[int | None, typer.Option(
        "--producer-id", metavar="PRODUCER_ID", help="producer id (brokers on versions older "
        "than 3.0: with --producer-epoch and --coordinator-epoch)")] = None,
    producer_epoch: Annotated[int | None, typer.Option(
        "--producer-epoch", metavar="PRODUCER_EPOCH", help="producer epoch")] = None,
    coordinator_epoch: Annotated[int | None, typer.Option(
        "--coordinator-epoch", metavar="COORDINATOR_EPOCH", help="coordinator epoch")] = None,
) -> None:
    """abort a hanging transaction (requires administrative privileges)"""
    from pykraft.tools import transactions_tool as tool

    _required(bootstrap_server=ctx.obj[0], topic=topic, partition=partition)
    assert topic is not None and partition is not None
    options = tool.AbortOptions(topic, partition, start_offset, producer_id, producer_epoch,
                                coordinator_epoch)
    try:
        tool.check_abort(options)
    except tool.TxnToolError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    _run(ctx, lambda admin: tool.abort(admin, options))


@transactions_app.command("find-hanging")
def find_hanging(
    ctx: typer.Context,
    broker_id: Annotated[int | None, typer.Option(
        "--broker-id", metavar="BROKER_ID",
        help="broker id to search for hanging transactions")] = None,
    max_transaction_timeout: Annotated[int, typer.Option(
        "--max-transaction-timeout", metavar="MAX_TRANSACTION_TIMEOUT",
        help="maximum transaction timeout in minutes to limit the scope of the search (15 "
             "minutes by default)")] = 15,
    topic: Annotated[str | None, typer.Option(
        "--topic", metavar="TOPIC",
        help="topic name to limit search to (required if --partition is specified)")] = None,
    partition: PartitionOption = None,
    as_json: JsonOption = False,
) -> None:
    """find hanging transactions"""
    from pykraft.tools import transactions_tool as tool

    options = tool.HangingOptions(broker_id, topic, partition, max_transaction_timeout)
    _required(bootstrap_server=ctx.obj[0])
    try:
        tool.check_hanging(options)
    except tool.TxnToolError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    hanging = _run(ctx, lambda admin: tool.find_hanging(admin, options, _now_ms))
    now_ms = _now_ms()
    if as_json:
        typer.echo(json.dumps([
            {"topic": h.partition.topic, "partition": h.partition.partition,
             **_producer_json(h.producer),
             "durationMinutes": int(tool.hanging_row(h, now_ms)[-1])} for h in hanging],
            indent=2))
    else:
        _print_table(tool.HANGING_HEADERS, [tool.hanging_row(h, now_ms) for h in hanging])


@transactions_app.command("forceTerminateTransaction")
def force_terminate_transaction(
    ctx: typer.Context,
    transactional_id: Annotated[str | None, typer.Option(
        "--transactionalId", metavar="TRANSACTIONALID", help="transactional id")] = None,
) -> None:
    """Force abort an ongoing transaction on transactionalId (requires administrative
    privileges)"""
    from pykraft.tools import transactions_tool as tool

    _required(bootstrap_server=ctx.obj[0], transactionalId=transactional_id)
    assert transactional_id is not None
    _run(ctx, lambda admin: tool.force_terminate(admin, transactional_id))
