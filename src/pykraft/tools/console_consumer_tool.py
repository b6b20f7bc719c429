"""``pykraft console-consumer``: Kafka's ``kafka-console-consumer.sh``.

Interface (the CLI in :mod:`pykraft.cli.console_consumer` is a thin shell over it)::

    start = start_offset(partition=0, offset="earliest", from_beginning=False)  # or UsageError
    formatter = MessageFormatter(formatter_config({"print.key": "true"}))
    client = client_settings(bootstrap, props, client_id="console-consumer")  # sasl, ssl
    async with BrokerClients(client) as brokers:
        consumer = await Consumer.open(brokers, "topic", partition=None, start=start)
        # or, with --group: Consumer.open_group(brokers, "topic", GroupMember(...), ...)
        count = await consume(consumer, formatter, write, max_messages=10, timeout_ms=5000)
        await consumer.close()                   # commits and leaves the group

With ``--group`` (or ``group.id``) the tool is a member of that consumer group, as Kafka's
is (:mod:`pykraft.tools.group_member`): its partitions are the range assignor's share,
each starting at the group's committed offset, else at ``auto.offset.reset`` (earliest
with ``--from-beginning``, else latest); what it printed is committed every
``auto.commit.interval.ms``, at a rebalance and at the end. Without a group (Kafka's makes
a throw-away one that commits nothing) it assigns itself every partition of ``--topic``
(or the one of ``--partition``), starting at ``--offset`` (earliest, latest or N, with
``--partition``), else at the log start with ``--from-beginning``, else at the end.
Records are fetched from each leader (Fetch v13+, by topic id, read uncommitted), whole
batches with records before the position skipped, control batches dropped and a batch a
response cut short fetched again. Output is DefaultMessageFormatter's
(``print.timestamp``, ``print.partition``, ``print.offset``, ``print.epoch``,
``print.headers``, ``print.key``, ``print.value``, ``key.separator``, ``line.separator``,
``headers.separator``, ``null.literal``); the CLI ends with ``Processed a total of N
messages`` on stderr. ``--timeout-ms`` ends the tool when no record came for that long.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pykraft.errors import CorruptRecordError, UsageError
from pykraft.ids import TopicPartition
from pykraft.log.batch_records import batch_records, record_timestamp, timestamp_type_name
from pykraft.messages.kafka.fetch_request import FetchPartition, FetchRequest, FetchTopic
from pykraft.messages.kafka.fetch_response import FetchResponse, PartitionData
from pykraft.protocol.errors import ErrorCode, for_code
from pykraft.records.batch import (
    Record,
    RecordBatch,
    complete_batches,
    iter_batches,
    read_header,
    records_field,
)
from pykraft.tools.admin_client import AdminError, ApiError, ClusterMetadata
from pykraft.tools.broker_clients import Brokers, by_leader
from pykraft.tools.get_offsets_tool import EARLIEST, LATEST, list_offsets_request
from pykraft.tools.group_member import GroupMember

DEFAULT_FORMATTER = "org.apache.kafka.tools.consumer.DefaultMessageFormatter"
_FORMATTERS = frozenset({DEFAULT_FORMATTER, "kafka.tools.DefaultMessageFormatter", "default"})
_MAX_WAIT_MS = 500
_PARTITION_MAX_BYTES = 1024 * 1024
_FETCH_MAX_BYTES = 50 * 1024 * 1024
_EMPTY_BACKOFF_S = 0.05  # a broker that answers an empty fetch at once is not hammered



def start_offset(partition: int | None, offset: str | None, from_beginning: bool) -> int:
    """ConsoleConsumerOptions' checks and ``parseOffset``: EARLIEST, LATEST or an offset."""
    if partition is not None:
        if from_beginning and offset is not None:
            raise UsageError("Options from-beginning and offset cannot be specified together.")
    elif offset is not None:
        raise UsageError("The partition is required when offset is specified.")
    if offset is None:
        return EARLIEST if from_beginning else LATEST
    named = {"earliest": EARLIEST, "latest": LATEST}.get(offset.lower())
    if named is not None:
        return named
    try:
        value = int(offset)
    except ValueError:
        value = -1
    if value < 0:
        raise UsageError(f"The provided offset value '{offset}' is incorrect. Valid values are "
                         "'earliest', 'latest', or a non-negative long.")
    return value


def group_id(option: str | None, file_props: Mapping[str, str],
             extra_props: Mapping[str, str], partition: int | None) -> str | None:
    """ConsoleConsumerOptions.checkConsumerGroup: ``--group``, ``group.id`` of
    ``--consumer.config`` and of ``--consumer-property`` must agree, and exclude
    ``--partition``; None when no group is given."""
    given = {g for g in (option, file_props.get("group.id"), extra_props.get("group.id"))
             if g is not None}
    if len(given) > 1:
        raise UsageError("The group ids provided in different places (directly using "
                         "'--group', via '--consumer-property', or via '--consumer.config') "
                         "do not match. Detected group ids: "
                         + ", ".join(f"'{g}'" for g in sorted(given)))
    if given and partition is not None:
        raise UsageError("Options group and partition cannot be specified together.")
    return next(iter(given), None)


def offset_reset(props: Mapping[str, str], from_beginning: bool) -> int:
    """``auto.offset.reset`` (EARLIEST or LATEST) as ConsoleConsumerOptions sets it:
    earliest with ``--from-beginning``, latest otherwise, unless the property is given."""
    text = props.get("auto.offset.reset", "earliest" if from_beginning else "latest")
    named = {"earliest": EARLIEST, "latest": LATEST}.get(text.strip().lower())
    if named is None:
        raise UsageError(f"Invalid value {text} for configuration auto.offset.reset: String "
                         "must be one of: latest, earliest, none")
    return named


# -- the formatter --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FormatterConfig:
    print_timestamp: bool = False
    print_key: bool = False
    print_value: bool = True
    print_partition: bool = False
    print_offset: bool = False
    print_epoch: bool = False
    print_headers: bool = False
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    null_literal: bytes = b"null"


def formatter_config(props: Mapping[str, str]) -> FormatterConfig:
    """DefaultMessageFormatter.configure (a flag is true when its value is ``true``)."""
    def flag(name: str, default: bool) -> bool:
        return props[name].strip().lower() == "true" if name in props else default

    def text(name: str, default: bytes) -> bytes:
        return props[name].encode() if name in props else default

    return FormatterConfig(
        print_timestamp=flag("print.timestamp", False), print_key=flag("print.key", False),
        print_value=flag("print.value", True), print_partition=flag("print.partition", False),
        print_offset=flag("print.offset", False), print_epoch=flag("print.epoch", False),
        print_headers=flag("print.headers", False),
        key_separator=text("key.separator", b"\t"), line_separator=text("line.separator", b"\n"),
        headers_separator=text("headers.separator", b","),
        null_literal=text("null.literal", b"null"))


def check_formatter(name: str) -> None:
    if name not in _FORMATTERS:
        raise UsageError(f"{name}: pykraft's console consumer has only the default formatter "
                         f"({DEFAULT_FORMATTER})")


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    partition: int
    offset: int
    timestamp: int
    timestamp_type: str  # CreateTime or LogAppendTime
    leader_epoch: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def format_record(config: FormatterConfig, record: ConsumedRecord) -> bytes:
    """DefaultMessageFormatter.writeTo: the enabled columns, key-separated, then a line end."""
    c = config
    columns: list[bytes] = []
    if c.print_timestamp:
        columns.append(f"{record.timestamp_type}:{record.timestamp}".encode())
    if c.print_partition:
        columns.append(b"Partition:%d" % record.partition)
    if c.print_offset:
        columns.append(b"Offset:%d" % record.offset)
    if c.print_epoch:
        columns.append(b"Epoch:%d" % record.leader_epoch if record.leader_epoch >= 0
                       else b"Epoch:NOT_PRESENT")
    if c.print_headers:
        columns.append(c.headers_separator.join(
            key.encode() + b":" + (c.null_literal if value is None else value)
            for key, value in record.headers) or b"NO_HEADERS")
    if c.print_key:
        columns.append(c.null_literal if record.key is None else record.key)
    if c.print_value:
        columns.append(c.null_literal if record.value is None else record.value)
    return c.key_separator.join(columns) + (c.line_separator if columns else b"")


# -- the consumer ---------------------------------------------------------------------------

class Consumer:
    """Fetches the assigned partitions from their leaders, in offset order per partition;
    in a group (:meth:`open_group`) its member's partitions, heartbeats and commits."""

    def __init__(self, brokers: Brokers, topic: str, cluster: ClusterMetadata,
                 positions: dict[int, int], member: GroupMember | None = None,
                 *, reset: int = LATEST, auto_commit: bool = True) -> None:
        self.brokers = brokers
        self.topic = topic
        self.cluster = cluster
        self.positions = positions  # partition -> next offset to read
        self.member = member
        self.reset = reset  # auto.offset.reset: where a partition without a commit starts
        self.auto_commit = auto_commit and member is not None
        self.delivered: dict[int, int] = {}  # partition -> offset after the last printed
        self._next_commit = 0.0

    @classmethod
    async def open_group(cls, brokers: Brokers, topic: str, member: GroupMember, *,
                         reset: int, auto_commit: bool) -> Consumer:
        """Join ``member``'s group; its partitions start at the group's committed offsets,
        else at ``reset`` (EARLIEST or LATEST: auto.offset.reset)."""
        cluster = await brokers.metadata([topic])
        if topic not in cluster.topics:
            raise AdminError(f"Topic {topic} not present in metadata.")
        consumer = cls(brokers, topic, cluster, {}, member, reset=reset,
                       auto_commit=auto_commit)
        await consumer._join()
        return consumer

    async def _join(self) -> None:
        assert self.member is not None
        partitions = await self.member.join()
        committed = await self.member.committed(partitions)
        missing = [p for p in partitions if p not in committed]
        reset = (await _list_offsets(self.brokers, self.cluster, self.topic, missing,
                                     self.reset) if missing else {})
        self.positions = {**reset, **committed}
        self.delivered = {}
        self._next_commit = time.monotonic() + self.member.commit_interval_s

    def deliver(self, record: ConsumedRecord) -> None:
        """``record`` was printed: a commit now includes it."""
        self.delivered[record.partition] = record.offset + 1

    async def commit(self) -> None:
        """Commit what was printed (enable.auto.commit: every auto.commit.interval.ms, at a
        rebalance and at the end, as KafkaConsumer does)."""
        if self.auto_commit and self.member is not None and self.delivered:
            await self.member.commit(self.delivered)
            self.delivered = {}

    async def close(self) -> None:
        """Commit and leave the group (nothing without one)."""
        if self.member is not None:
            await self.commit()
            await self.member.leave()

    async def _keep_membership(self) -> None:
        assert self.member is not None
        if await self.member.heartbeat_due():
            await self.commit()
            await self._join()
        elif time.monotonic() >= self._next_commit:
            await self.commit()
            self._next_commit = time.monotonic() + self.member.commit_interval_s

    @classmethod
    async def open(cls, brokers: Brokers, topic: str, partition: int | None,
                   start: int) -> Consumer:
        cluster = await brokers.metadata([topic])
        meta = cluster.topics.get(topic)
        if meta is None:
            raise AdminError(f"Topic {topic} not present in metadata.")
        partitions = [p.partition for p in meta.partitions]
        if partition is not None:
            if partition not in partitions:
                raise AdminError(f"Partition {partition} of topic {topic} does not exist")
            partitions = [partition]
        positions = (dict.fromkeys(partitions, start) if start >= 0
                     else await _list_offsets(brokers, cluster, topic, partitions, start))
        return cls(brokers, topic, cluster, positions)

    @property
    def topic_id(self) -> uuid.UUID:
        return self.cluster.topics[self.topic].topic_id

    async def poll(self) -> list[ConsumedRecord]:
        """One Fetch to each leader; the records past each position, positions moved on."""
        if self.member is not None:
            await self._keep_membership()
        partitions = [TopicPartition(self.topic, p) for p in self.positions]
        leaders, _ = by_leader(self.cluster, partitions)
        records: list[ConsumedRecord] = []
        for leader, tps in sorted(leaders.items()):
            answer = await self.brokers.request_to(leader, self._request([p for _, p in tps]))
            assert isinstance(answer, FetchResponse)
            if answer.error_code != ErrorCode.NONE:
                raise ApiError(for_code(answer.error_code), None)
            for topic in answer.responses:
                for part in topic.partitions:
                    records += self._read(part.partition_index, part)
        if len(leaders) < len(set(self.positions)):
            self.cluster = await self.brokers.metadata([self.topic])
        return records

    def _request(self, partitions: list[int]) -> FetchRequest:
        return FetchRequest(
            max_wait_ms=_MAX_WAIT_MS, min_bytes=1, max_bytes=_FETCH_MAX_BYTES,
            topics=(FetchTopic(topic_id=self.topic_id, partitions=tuple(
                FetchPartition(partition=p, fetch_offset=self.positions[p],
                               partition_max_bytes=_PARTITION_MAX_BYTES)
                for p in partitions)),))

    def _read(self, partition: int, part: PartitionData) -> list[ConsumedRecord]:
        if part.error_code != ErrorCode.NONE:
            error = for_code(part.error_code)
            if error.retriable:
                return []
            raise ApiError(error, None)
        position = self.positions[partition]
        out: list[ConsumedRecord] = []
        for batch in self._complete_batches(partition, records_field(part.records)):
            self.positions[partition] = max(self.positions[partition], batch.header.next_offset)
            if batch.is_control:
                continue
            out += (_consumed(partition, batch.header, r) for r in batch_records(batch)
                    if r.offset >= position)
        return out

    def _complete_batches(self, partition: int, data: bytes) -> list[RecordBatch]:
        """The whole batches of a fetched partition, checked: a response is cut at
        ``partition_max_bytes`` and may end inside a batch, which Kafka's fetcher drops
        (the next fetch starts at it); a damaged batch is reported as Kafka's
        ``CompletedFetch`` does, with its partition and offset."""
        _, end = complete_batches(data)
        batches: list[RecordBatch] = []
        try:
            if end == 0 and data:
                read_header(data)  # a header too damaged to size the batch is named below
            for batch in iter_batches(data[:end], verify_crc=False):
                batches.append(batch)
                batch.verify()
        except CorruptRecordError as exc:
            offset = batches[-1].base_offset if batches else self.positions[partition]
            raise CorruptRecordError(
                f"Record batch for partition {self.topic}-{partition} at offset {offset} is "
                f"invalid, cause: {exc}") from exc
        if not batches and data:
            raise AdminError(
                f"The batch at offset {self.positions[partition]} of {self.topic}-{partition}"
                f" is larger than the fetch size {_PARTITION_MAX_BYTES}")
        return batches


def _consumed(partition: int, header: Any, record: Record) -> ConsumedRecord:
    return ConsumedRecord(partition, record.offset, record_timestamp(header, record),
                          timestamp_type_name(header), header.partition_leader_epoch,
                          record.key, record.value, record.headers)


async def _list_offsets(brokers: Brokers, cluster: ClusterMetadata, topic: str,
                        partitions: list[int], timestamp: int) -> dict[int, int]:
    leaders, leaderless = by_leader(cluster, [TopicPartition(topic, p) for p in partitions])
    if leaderless:
        raise ApiError(ErrorCode.LEADER_NOT_AVAILABLE, None)
    positions = {}
    for leader, tps in sorted(leaders.items()):
        answer = await brokers.request_to(leader, list_offsets_request(tps, timestamp))
        for answered in answer.topics:
            for part in answered.partitions:
                if part.error_code != ErrorCode.NONE:
                    raise ApiError(ErrorCode(part.error_code), None)
                positions[part.partition_index] = part.offset
    return positions


async def consume(consumer: Consumer, config: FormatterConfig, write: Callable[[bytes], None],
                  *, max_messages: int | None = None, timeout_ms: int | None = None) -> (
    tuple[int, bool]
):
    """Print records until ``max_messages`` or ``timeout_ms`` without one: the count, and
    whether the timeout ended it (Kafka's consumer wrapper throws a TimeoutException then;
    the CLI reports it and still exits 0)."""
    count = 0
    last = time.monotonic()
    while max_messages is None or count < max_messages:
        records = await consumer.poll()
        for record in records:
            if max_messages is not None and count >= max_messages:
                break
            write(format_record(config, record))
            consumer.deliver(record)
            count += 1
        if records:
            last = time.monotonic()
        elif timeout_ms is not None and (time.monotonic() - last) * 1000 >= timeout_ms:
            return count, True
        if not records:
            await asyncio.sleep(_EMPTY_BACKOFF_S)
    return count, False
