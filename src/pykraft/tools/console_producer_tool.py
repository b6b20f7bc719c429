"""``pykraft console-producer``: Kafka's ``kafka-console-producer.sh`` (ConsoleProducer).

Interface (the CLI in :mod:`pykraft.cli.console_producer` reads stdin and drives it)::

    reader = LineReader(reader_config({"parse.key": "true", "key.separator": ":"}))
    settings = producer_settings(props)             # acks, compression.type, linger, batch.size
    client = client_settings(bootstrap, props, client_id="console-producer")  # sasl, ssl
    async with BrokerClients(client) as brokers:
        producer = await Producer.open(brokers, "topic", settings, warn=print_to_stderr)
        if producer.add(reader.parse(line)):         # True: a partition's batch is full
            await producer.send()                    # sent while the next batch fills
        await producer.flush()                       # at the end (and send after linger.ms)

Kafka's behaviour kept: LineMessageReader's properties (``parse.key``, ``key.separator``,
``parse.headers``, ``headers.delimiter``, ``headers.separator``, ``headers.key.separator``,
``ignore.error``, ``null.marker``) with its messages; a keyed record goes to
``toPositive(murmur2(key)) % partitions`` (the default partitioner), keyless records stick
to one random partition until its batch is sent; one v2 batch per partition (CreateTime,
the producer's codec) in one Produce per leader, sent while the next batches fill (up to
``max.in.flight.requests.per.connection`` pipelined requests); retriable errors are retried
after a Metadata refresh (``retries``, ``retry.backoff.ms``); a failed record is reported
as Kafka's ErrorLoggingCallback does, and with ``--sync`` it ends the tool with status 1.
Not done: ``acks=0`` (the client awaits every answer, and Kafka's broker sends none then)
and idempotence (no producer id: a retried batch may be written twice).
"""

from __future__ import annotations

import asyncio
import collections
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pykraft.errors import ConfigError, PyKraftError
from pykraft.ids import TopicPartition
from pykraft.messages.kafka.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from pykraft.messages.kafka.produce_response import ProduceResponse
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import Record, assemble_batch, encode_records
from pykraft.records.compression import CODECS, NONE, compress
from pykraft.tools.admin_client import AdminError, ApiError, ClusterMetadata
from pykraft.tools.broker_clients import Brokers, by_leader, java_exception

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_ACKS = {"all": -1, "-1": -1, "1": 1, "0": 0}


class ReaderError(PyKraftError):
    """LineMessageReader refused a setting or a line (Kafka's KafkaException message)."""


# -- the partitioner ------------------------------------------------------------------------

def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (seed 0x9747b28c) as a signed 32-bit int."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """The default partitioner's choice for a keyed record (``Utils.toPositive``)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


# -- reading lines --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ReaderConfig:
    parse_key: bool = False
    key_separator: str = "\t"
    parse_headers: bool = False
    headers_delimiter: str = "\t"
    headers_separator: str = ","
    headers_key_separator: str = ":"
    ignore_error: bool = False
    null_marker: str | None = None


def _true(value: str) -> bool:
    return value.strip().lower() == "true"


def reader_config(props: Mapping[str, str]) -> ReaderConfig:
    """LineMessageReader.configure: the ``--property`` settings and their clash checks."""
    config = ReaderConfig(
        parse_key=_true(props.get("parse.key", "false")),
        key_separator=props.get("key.separator", "\t"),
        parse_headers=_true(props.get("parse.headers", "false")),
        headers_delimiter=props.get("headers.delimiter", "\t"),
        headers_separator=props.get("headers.separator", ","),
        headers_key_separator=props.get("headers.key.separator", ":"),
        ignore_error=_true(props.get("ignore.error", "false")),
        null_marker=props.get("null.marker"))
    pairs: list[tuple[str, str | None, str, str]] = [
        ("headers.delimiter", config.headers_delimiter, "headers.separator",
         config.headers_separator),
             ("headers.delimiter", config.headers_delimiter, "headers.key.separator",
              config.headers_key_separator),
             ("headers.separator", config.headers_separator, "headers.key.separator",
              config.headers_key_separator)]
    pairs += [("null.marker", config.null_marker, name, value) for name, value in (
        ("key.separator", config.key_separator), ("headers.separator", config.headers_separator),
        ("headers.delimiter", config.headers_delimiter),
        ("headers.key.separator", config.headers_key_separator))]
    for first, one, second, other in pairs:
        if one == other:
            raise ReaderError(f"{first} and {second} may not be equal")
    return config


@dataclass(frozen=True, slots=True)
class ProducerRecord:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(slots=True)
class LineReader:
    """LineMessageReader: each line one record (``[headers<delim>][key<sep>]value``)."""

    config: ReaderConfig
    line_number: int = 0

    def parse(self, line: str) -> ProducerRecord:
        self.line_number += 1
        c = self.config
        headers = self._part(c.parse_headers, line, 0, c.headers_delimiter, "headers delimiter")
        start = 0 if headers is None else len(headers) + len(c.headers_delimiter)
        key = self._part(c.parse_key, line, start, c.key_separator, "key separator")
        value = line[start + (0 if key is None else len(key) + len(c.key_separator)):]
        parsed = () if headers is None or headers == c.null_marker else tuple(
            self._header(pair) for pair in headers.split(c.headers_separator))
        return ProducerRecord(self._bytes(key), self._bytes(value), parsed)

    def _bytes(self, text: str | None) -> bytes | None:
        return None if text is None or text == self.config.null_marker else text.encode()

    def _part(self, enabled: bool, line: str, start: int, mark: str, name: str) -> str | None:
        if not enabled:
            return None
        index = line.find(mark, start)
        if index == -1:
            if self.config.ignore_error:
                return None
            raise ReaderError(f"No {name} found on line number {self.line_number}: '{line}'")
        return line[start:index]

    def _header(self, pair: str) -> tuple[str, bytes | None]:
        key, found, value = pair.partition(self.config.headers_key_separator)
        if not found:
            if self.config.ignore_error:
                return pair, None
            raise ReaderError(f"No header key separator found in pair '{pair}' on line number "
                              f"{self.line_number}")
        if key == self.config.null_marker:
            raise ReaderError("Header keys should not be equal to the null marker "
                              f"'{self.config.null_marker}' as they can't be null")
        return key, self._bytes(value)


# -- producing ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ProducerSettings:
    acks: int = -1
    compression: int = NONE
    linger_ms: int = 1000
    batch_size: int = 16 * 1024
    request_timeout_ms: int = 1500
    retries: int = 3
    retry_backoff_ms: int = 100
    max_in_flight: int = 5


def _int(props: Mapping[str, str], key: str, default: int) -> int:
    text = props.get(key)
    try:
        return default if text is None else int(text.strip())
    except ValueError:
        raise ConfigError(f"Invalid value {text} for configuration {key}: Not a number of "
                          "type INT") from None


def producer_settings(props: Mapping[str, str]) -> ProducerSettings:
    """The producer configs the tool honours, with Kafka's ConfigException messages."""
    acks = props.get("acks", "-1").strip()
    if acks not in _ACKS:
        raise ConfigError(f'Invalid value {acks} for configuration acks: String must be one of: '
                          'all, -1, 0, 1')
    if _ACKS[acks] == 0:
        raise ConfigError("acks=0 is not supported by pykraft's console producer: its client "
                          "awaits an answer to every request")
    codec = props.get("compression.type", "none").strip()
    if codec not in CODECS:
        raise ConfigError(f"Invalid value {codec} for configuration compression.type: String "
                          "must be one of: none, gzip, snappy, lz4, zstd")
    return ProducerSettings(
        acks=_ACKS[acks], compression=CODECS[codec], linger_ms=_int(props, "linger.ms", 1000),
        batch_size=_int(props, "batch.size", 16 * 1024),
        request_timeout_ms=_int(props, "request.timeout.ms", 1500),
        retries=_int(props, "retries", 3), retry_backoff_ms=_int(props, "retry.backoff.ms", 100),
        max_in_flight=max(1, _int(props, "max.in.flight.requests.per.connection", 5)))


def encode_batch(records: list[ProducerRecord], timestamps: list[int], codec: int) -> bytes:
    """One producer batch (base offset 0, CreateTime, no producer id) of ``records``."""
    base = timestamps[0]
    body = encode_records([Record(i, ts, r.key, r.value, r.headers) for i, (r, ts)
                           in enumerate(zip(records, timestamps, strict=True))], 0, base)
    return assemble_batch(
        compress(codec, body) if codec != NONE else body, base_offset=0,
        partition_leader_epoch=-1, attributes=codec, last_offset_delta=len(records) - 1,
        base_timestamp=base, max_timestamp=max(timestamps), records_count=len(records))


@dataclass(slots=True)
class _Pending:
    records: list[ProducerRecord] = field(default_factory=list)
    timestamps: list[int] = field(default_factory=list)
    size: int = 0


def _size(record: ProducerRecord) -> int:
    return (len(record.key or b"") + len(record.value or b"")
            + sum(len(k) + len(v or b"") for k, v in record.headers) + 8)


def _describe(topic: str, record: ProducerRecord, error: str) -> str:
    key = "null" if record.key is None else f"{len(record.key)} bytes"
    value = "null" if record.value is None else f"{len(record.value)} bytes"
    return (f"Error when sending message to topic {topic} with key: {key}, value: {value} "
            f"with error: {error}")


class Producer:
    """Buffers records per partition and sends them to the leaders (see module doc)."""

    def __init__(self, brokers: Brokers, topic: str, settings: ProducerSettings,
                 cluster: ClusterMetadata, *, warn: Callable[[str], None],
                 rng: random.Random | None = None) -> None:
        self.brokers = brokers
        self.topic = topic
        self.settings = settings
        self.cluster = cluster
        self.warn = warn
        self.failed = 0
        self.sent = 0
        self._rng = rng or random.Random()
        self._pending: dict[int, _Pending] = {}
        self._sticky: int | None = None
        self.oldest_ms: float | None = None  # monotonic time of the oldest buffered record
        self._in_flight: collections.deque[asyncio.Task[None]] = collections.deque()

    @classmethod
    async def open(cls, brokers: Brokers, topic: str, settings: ProducerSettings, *,
                   warn: Callable[[str], None], rng: random.Random | None = None) -> Producer:
        """A producer for ``topic``, which must exist (Kafka's waits ``max.block.ms``)."""
        cluster = await brokers.metadata([topic])
        if topic not in cluster.topics:
            raise AdminError(f"Topic {topic} not present in metadata.")
        return cls(brokers, topic, settings, cluster, warn=warn, rng=rng)

    @property
    def partitions(self) -> int:
        return len(self.cluster.topics[self.topic].partitions)

    def partition_for(self, record: ProducerRecord) -> int:
        if record.key is not None:
            return partition_for_key(record.key, self.partitions)
        if self._sticky is None:
            available = [p.partition for p in self.cluster.topics[self.topic].partitions
                         if p.leader is not None] or list(range(self.partitions))
            self._sticky = self._rng.choice(available)
        return self._sticky

    def add(self, record: ProducerRecord, timestamp_ms: int | None = None) -> bool:
        """Buffer ``record``; True when its partition's batch reached ``batch.size``."""
        partition = self.partition_for(record)
        pending = self._pending.setdefault(partition, _Pending())
        pending.records.append(record)
        pending.timestamps.append(int(time.time() * 1000) if timestamp_ms is None
                                  else timestamp_ms)
        pending.size += _size(record)
        if self.oldest_ms is None:
            self.oldest_ms = time.monotonic() * 1000
        return pending.size >= self.settings.batch_size

    async def send(self) -> None:
        """Start sending every buffered batch and return: the next batches fill while these
        are on the wire, as Kafka's sender thread works beside the caller, with at most
        ``max.in.flight.requests.per.connection`` sends unanswered (the oldest is awaited
        first). Requests to a broker are pipelined on its connection and answered in order;
        as in Kafka without idempotence, a retried batch may land after a later one."""
        while len(self._in_flight) >= self.settings.max_in_flight:
            await self._in_flight.popleft()
        pending, self._pending, self._sticky, self.oldest_ms = self._pending, {}, None, None
        if pending:
            self._in_flight.append(asyncio.create_task(self._deliver(pending)))

    async def flush(self) -> None:
        """Send every buffered batch and wait for every answer (retrying retriable errors);
        failures are warned."""
        await self.send()
        while self._in_flight:
            await self._in_flight.popleft()

    async def _deliver(self, pending: dict[int, _Pending]) -> None:
        for attempt in range(self.settings.retries + 1):
            if not pending:
                return
            retry = await self._send_all(pending, final=attempt == self.settings.retries)
            if retry:
                await asyncio.sleep(self.settings.retry_backoff_ms / 1000)
                self.cluster = await self.brokers.metadata([self.topic])
            pending = retry

    async def _send_all(self, pending: dict[int, _Pending], final: bool) -> dict[int, _Pending]:
        partitions = [TopicPartition(self.topic, p) for p in pending]
        leaders, leaderless = by_leader(self.cluster, partitions)
        retry = {p: pending[p] for _, p in leaderless}
        if final:
            for partition in retry:
                self._fail(pending[partition], ApiError(ErrorCode.LEADER_NOT_AVAILABLE, None))
            retry = {}
        for leader, tps in sorted(leaders.items()):
            batches = {p: pending[p] for _, p in tps}
            try:
                answer = await self.brokers.request_to(leader, self._request(batches))
            except ApiError as exc:
                errors: dict[int, ApiError] = dict.fromkeys(batches, exc)
            else:
                errors = self._errors(answer)
            for partition, error in errors.items():
                if error.error.retriable and not final:
                    retry[partition] = batches[partition]
                else:
                    self._fail(batches[partition], error)
            self.sent += sum(len(b.records) for p, b in batches.items() if p not in errors)
        return retry

    def _request(self, batches: dict[int, _Pending]) -> ProduceRequest:
        return ProduceRequest(
            acks=self.settings.acks, timeout_ms=self.settings.request_timeout_ms,
            topic_data=(TopicProduceData(name=self.topic, partition_data=tuple(
                PartitionProduceData(index=p, records=encode_batch(
                    b.records, b.timestamps, self.settings.compression))
                for p, b in sorted(batches.items()))),))

    def _errors(self, answer: ProduceResponse) -> dict[int, ApiError]:
        errors = {}
        for topic in answer.responses:
            for part in topic.partition_responses:
                if part.error_code != ErrorCode.NONE:
                    errors[part.index] = ApiError(ErrorCode(part.error_code),
                                                  part.error_message)
        return errors

    def _fail(self, batch: _Pending, error: ApiError) -> None:
        self.failed += len(batch.records)
        for record in batch.records:
            self.warn(_describe(self.topic, record, f"{java_exception(error.error)}: {error}"))
