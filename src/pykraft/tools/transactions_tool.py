"""``pykraft transactions``: Kafka's ``kafka-transactions.sh`` (``TransactionsCommand``).

Interface (the CLI in :mod:`pykraft.cli.transactions` is a thin shell over it)::

    async with BrokerClients(admin_settings(bootstrap)) as brokers:
        admin = TxnAdmin(brokers, timeout_s=60)
        rows = await list_rows(admin, duration_filter=None, pattern=None)
        print("\\n".join(table(LIST_HEADERS, rows)))

Commands as Kafka 4.4's, with its checks, its tables (``ToolsUtils.prettyPrintTable``: each
column padded to its widest cell, every cell followed by a tab) and its error lines
(``<what failed>: <the admin client's message>. Enable debug logging for additional
detail.`` on stderr, exit status 1, raised here as :class:`TxnToolError`):

* ``list [--duration-filter MS] [--transactional-id-pattern REGEX]``: every broker's
  transactions (ListTransactions v1 for a duration, v2 for a pattern);
* ``describe --transactional-id ID``: the id's state at its coordinator;
* ``describe-producers --topic T --partition P [--broker-id B]``: a partition's active
  producers at its leader (or at replica B);
* ``abort --topic T --partition P`` with ``--start-offset O`` (the producer found by its
  open transaction's first offset, through DescribeProducers) or ``--producer-id
  --producer-epoch --coordinator-epoch``: an ABORT marker written by the leader
  (WriteTxnMarkers, as Kafka's ``Admin.abortTransaction``);
* ``find-hanging`` (``--broker-id B`` and/or ``--topic T [--partition P]``,
  ``--max-transaction-timeout MINUTES``, 15 by default): every open transaction older than
  the timeout whose producer id no coordinator lists, or whose coordinator does not hold
  that partition in the transaction;
* ``forceTerminateTransaction --transactionalId ID``: the id's epoch bumped (InitProducerId,
  as ``Admin.forceTerminateTransaction``), aborting its open transaction.

Kafka prints some of these from Java hash maps: ``list`` by broker, ``describe``'s
partitions, ``find-hanging``'s rows by producer id; they come here in the same order
(:func:`~pykraft.tools.log_dirs_tool.java_hash_order`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pykraft.errors import PyKraftError
from pykraft.ids import TopicPartition
from pykraft.java import java_hash_order, java_string_hash
from pykraft.tools.admin_client import AdminError
from pykraft.tools.broker_clients import tp_name
from pykraft.tools.quorum_tool import pretty_table
from pykraft.tools.txn_admin import (
    AbortSpec,
    ProducerInfo,
    TxnAdmin,
    TxnDescription,
    TxnListing,
    as_mapping,
)

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                    "TransactionState", "TransactionTimeoutMs", "CurrentTransactionStartTimeMs",
                    "TransactionDurationMs", "TopicPartitions")
PRODUCERS_HEADERS = ("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                     "LastTimestamp", "CurrentTransactionStartOffset")
HANGING_HEADERS = ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                   "StartOffset", "LastTimestamp", "Duration(min)")
DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN = 15
#: find-hanging asks about this many topics, then partitions, at a time (Kafka's batches)
MAX_BATCH_SIZE = 500
_MINUTE_MS = 60_000
Clock = Callable[[], int]  # epoch milliseconds
Row = tuple[str, ...]
T = TypeVar("T")


class TxnToolError(PyKraftError):
    """What Kafka's ``printErrorAndExit`` prints on stderr before exiting 1."""


def failed(what: str, cause: Exception) -> TxnToolError:
    """Kafka's ``printErrorAndExit(message, throwable)``."""
    return TxnToolError(f"{what}: {cause}. Enable debug logging for additional detail.")


def table(headers: Row, rows: Sequence[Row]) -> list[str]:
    """Kafka's ``ToolsUtils.prettyPrintTable``."""
    return pretty_table(headers, list(rows))


def _none(value: int | None) -> str:
    return "None" if value is None else str(value)


# -- list ------------------------------------------------------------------------------------

async def list_rows(admin: TxnAdmin, *, duration_filter: int | None,
                    pattern: str | None) -> list[Row]:
    """``list``'s rows: broker by broker, each broker's transactions in its order."""
    try:
        by_broker = await admin.list_transactions(duration_ms=duration_filter, pattern=pattern)
    except AdminError as exc:
        raise failed("Failed to list transactions", exc) from None
    return [(t.transactional_id, str(broker), str(t.producer_id), t.state)
            for broker, listings in by_broker.items() for t in listings]


# -- describe --------------------------------------------------------------------------------

async def describe(admin: TxnAdmin, transactional_id: str) -> TxnDescription:
    try:
        found = (await admin.describe_transactions([transactional_id]))[transactional_id]
    except AdminError as exc:  # the coordinator not found in time
        found = exc
    if isinstance(found, AdminError):
        raise failed(f"Failed to describe transaction state of transactional-id "
                     f"`{transactional_id}`", found)
    return found


def describe_row(transactional_id: str, found: TxnDescription, now_ms: int) -> Row:
    duration = None if found.start_ms is None else now_ms - found.start_ms
    return (str(found.coordinator_id), transactional_id, str(found.producer_id),
            str(found.producer_epoch), found.state, str(found.timeout_ms),
            _none(found.start_ms), _none(duration),
            ",".join(tp_name(tp) for tp in found.partitions))


# -- describe-producers ----------------------------------------------------------------------

async def producers(admin: TxnAdmin, tp: TopicPartition,
                    broker_id: int | None) -> tuple[ProducerInfo, ...]:
    try:
        return (await admin.describe_producers([tp], broker_id))[tp]
    except AdminError as exc:
        where = "leader" if broker_id is None else f"broker {broker_id}"
        raise failed(f"Failed to describe producers for partition {tp_name(tp)} on {where}",
                     exc) from None


def producer_row(p: ProducerInfo) -> Row:
    return (str(p.producer_id), str(p.producer_epoch),
            str(-1 if p.coordinator_epoch is None else p.coordinator_epoch),
            str(p.last_sequence), str(p.last_timestamp), _none(p.txn_start_offset))


# -- abort -----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class AbortOptions:
    topic: str
    partition: int
    start_offset: int | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    coordinator_epoch: int | None = None


def check_abort(options: AbortOptions) -> None:
    """Kafka's checks of ``abort``'s arguments, before any call."""
    if options.start_offset is None and options.producer_id is None:
        raise TxnToolError(
            "The transaction to abort must be identified either with --start-offset (for "
            "brokers on 3.0 or above) or with --producer-id, --producer-epoch, and "
            "--coordinator-epoch (for older brokers)")
    if options.start_offset is None:
        if options.producer_epoch is None:
            raise TxnToolError("Missing required argument --producer-epoch")
        if options.coordinator_epoch is None:
            raise TxnToolError("Missing required argument --coordinator-epoch")


async def abort_spec(admin: TxnAdmin, options: AbortOptions) -> AbortSpec:
    """The marker to write: as given, or that of the producer whose open transaction starts
    at ``--start-offset`` (a coordinator epoch below 0, none yet, is taken as 0)."""
    check_abort(options)
    tp = TopicPartition(options.topic, options.partition)
    if options.start_offset is None:
        assert options.producer_id is not None and options.producer_epoch is not None
        assert options.coordinator_epoch is not None
        return AbortSpec(tp, options.producer_id, options.producer_epoch,
                         max(options.coordinator_epoch, 0))
    try:
        active = (await admin.describe_producers([tp]))[tp]
    except AdminError as exc:
        raise failed(f"Failed to validate producer state for partition {tp_name(tp)}",
                     exc) from None
    found = next((p for p in active if p.txn_start_offset == options.start_offset), None)
    if found is None:
        raise TxnToolError(f"Could not find any open transactions starting at offset "
                           f"{options.start_offset} on partition {tp_name(tp)}")
    return AbortSpec(tp, found.producer_id, found.producer_epoch, found.coordinator_epoch or 0)


async def abort(admin: TxnAdmin, options: AbortOptions) -> AbortSpec:
    spec = await abort_spec(admin, options)
    try:
        await admin.abort(spec)
    except AdminError as exc:
        raise failed(f"Failed to abort transaction {spec}", exc) from None
    return spec


# -- find-hanging ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class HangingOptions:
    broker_id: int | None = None
    topic: str | None = None
    partition: int | None = None
    max_transaction_timeout_min: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN


@dataclass(frozen=True, slots=True)
class OpenTxn:
    """An open transaction of one producer on one partition."""

    partition: TopicPartition
    producer: ProducerInfo


def check_hanging(options: HangingOptions) -> None:
    if options.topic is None and options.broker_id is None:
        raise TxnToolError("The `find-hanging` command requires either --topic or --broker-id "
                           "to limit the scope of the search")
    if options.partition is not None and options.topic is None:
        raise TxnToolError("The --partition argument requires --topic to be provided")


def _optional(value: int | None) -> str:
    """Java's ``Optional.toString``."""
    return "Optional.empty" if value is None else f"Optional[{value}]"


def _batches(items: Sequence[T], size: int = MAX_BATCH_SIZE) -> list[Sequence[T]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


async def _partitions_to_search(admin: TxnAdmin, options: HangingOptions
                                ) -> list[TopicPartition]:
    if options.topic is not None and options.partition is not None:
        return [TopicPartition(options.topic, options.partition)]
    if options.topic is not None:
        topics = [options.topic]
    else:
        try:
            topics = java_hash_order(await admin.topic_names(), java_string_hash)
        except AdminError as exc:
            raise failed("Failed to list topics", exc) from None
    found: list[TopicPartition] = []
    for batch in _batches(topics):
        names = list(batch)
        try:
            replicas = await admin.replicas(names)
        except AdminError as exc:
            raise failed(f"Failed to describe {len(names)} topics", exc) from None
        for topic in java_hash_order(names, java_string_hash, initial_capacity=len(names)):
            found += [TopicPartition(topic, p) for p, nodes in sorted(replicas[topic].items())
                      if options.broker_id is None or options.broker_id in nodes]
    return found


def _long_hash(value: int) -> int:
    """Java's ``Long.hashCode``."""
    value &= 0xFFFFFFFFFFFFFFFF
    return (value ^ (value >> 32)) & 0xFFFFFFFF


async def _candidates(admin: TxnAdmin, options: HangingOptions, partitions:
                      Sequence[TopicPartition], clock: Clock) -> list[OpenTxn]:
    max_ms = options.max_transaction_timeout_min * _MINUTE_MS
    found: list[OpenTxn] = []
    for batch in _batches(partitions):
        tps = list(batch)
        try:
            by_partition = await admin.describe_producers(tps, options.broker_id)
        except AdminError as exc:
            raise failed(f"Failed to describe producers for {len(tps)} partitions on broker "
                         f"{_optional(options.broker_id)}", exc) from None
        now_ms = clock()
        found += [OpenTxn(tp, p) for tp, active in by_partition.items() for p in active
                  if p.txn_start_offset is not None and now_ms - p.last_timestamp > max_ms]
    return found


async def find_hanging(admin: TxnAdmin, options: HangingOptions, clock: Clock,
                       ) -> list[OpenTxn]:
    """Kafka's ``FindHangingTransactionsCommand``: the open transactions older than the
    timeout that no coordinator will end."""
    check_hanging(options)
    candidates = await _candidates(admin, options, await _partitions_to_search(admin, options),
                                   clock)
    if not candidates:
        return []
    by_producer: dict[int, list[OpenTxn]] = {}
    for txn in candidates:
        by_producer.setdefault(txn.producer.producer_id, []).append(txn)
    producer_ids = java_hash_order(list(by_producer), _long_hash)
    try:
        listed = await admin.list_transactions(producer_ids=producer_ids)
    except AdminError as exc:
        raise failed(f"Failed to list transactions for {len(producer_ids)} producers",
                     exc) from None
    transactional_ids = _ids_by_producer(listed.values(), set(producer_ids))
    try:
        described = as_mapping(await admin.describe_transactions(transactional_ids.values()))
    except AdminError as exc:
        raise failed(f"Failed to describe {len(transactional_ids)} transactions",
                     exc) from None
    hanging = []
    for producer_id in producer_ids:
        transactional_id = transactional_ids.get(producer_id)
        description = None if transactional_id is None else described.get(transactional_id)
        hanging += [txn for txn in by_producer[producer_id]
                    if description is None or txn.partition not in description.partitions]
    return hanging


def _ids_by_producer(listed: Iterable[Iterable[TxnListing]], wanted: set[int]
                     ) -> dict[int, str]:
    found: dict[int, str] = {}
    for listings in listed:
        for listing in listings:
            if listing.producer_id in wanted:
                found[listing.producer_id] = listing.transactional_id
    return found


def hanging_row(txn: OpenTxn, now_ms: int) -> Row:
    p = txn.producer
    return (txn.partition.topic, str(txn.partition.partition), str(p.producer_id),
            str(p.producer_epoch), str(-1 if p.coordinator_epoch is None else p.coordinator_epoch),
            str(-1 if p.txn_start_offset is None else p.txn_start_offset), str(p.last_timestamp),
            str(_java_div(now_ms - p.last_timestamp, _MINUTE_MS)))


def _java_div(a: int, b: int) -> int:
    """Java's integer division (``TimeUnit.toMinutes``): truncated toward zero."""
    return -(-a // b) if a < 0 else a // b


# -- forceTerminateTransaction ---------------------------------------------------------------

async def force_terminate(admin: TxnAdmin, transactional_id: str) -> None:
    try:
        await admin.force_terminate(transactional_id)
    except AdminError as exc:
        raise failed(f"Failed to force terminate transactionalId `{transactional_id}`",
                     exc) from None
