"""The data-plane tools without a cluster: Kafka's argument rules and messages, output
formats, the default partitioner, and each tool's requests and answers through a fake
cluster (:class:`FakeBrokers` answers as a broker would)."""

from __future__ import annotations

import asyncio
import io
import json
import random
import re
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_murmur2
from kafka.record.default_records import DefaultRecordBatch
from typer.testing import CliRunner

from pykraft.errors import CorruptRecordError, UsageError
from pykraft.java import java_hash_order
from pykraft.messages.kafka.delete_records_response import (
    DeleteRecordsPartitionResult,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from pykraft.messages.kafka.describe_log_dirs_response import (
    DescribeLogDirsPartition,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)
from pykraft.messages.kafka.fetch_response import (
    FetchableTopicResponse,
    FetchResponse,
    PartitionData,
)
from pykraft.messages.kafka.list_offsets_response import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from pykraft.messages.kafka.produce_response import (
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.compression import GZIP
from pykraft.tools import console_consumer_tool as consumer_tool
from pykraft.tools import console_producer_tool as producer_tool
from pykraft.tools import delete_records_tool, get_offsets_tool, log_dirs_tool
from pykraft.tools.admin_client import ClusterMetadata, PartitionMetadata, TopicMetadata

TOPIC_ID = uuid.UUID(int=7)
Handler = Callable[[int, Any], Any]


def _cluster(topics: dict[str, list[int | None]]) -> ClusterMetadata:
    """Topics with their partitions' leaders (None: leaderless); brokers 1 and 2."""
    return ClusterMetadata(cluster_id="c", controller_id=1,
                           brokers={1: ("h1", 9092), 2: ("h2", 9092)},
                           topics={name: TopicMetadata(name, TOPIC_ID, False, tuple(
                               PartitionMetadata(i, leader, 0, (1,), (1,), ())
                               for i, leader in enumerate(leaders)))
                               for name, leaders in topics.items()})


class FakeBrokers:
    """A cluster: Metadata from ``cluster``, every other request answered by ``handler``
    (broker id, request) and recorded."""

    def __init__(self, cluster: ClusterMetadata, handler: Handler) -> None:
        self.cluster = cluster
        self.handler = handler
        self.sent: list[tuple[int, Any]] = []

    async def metadata(self, topics: Sequence[str] | None = None) -> ClusterMetadata:
        return self.cluster

    async def request_to(self, broker_id: int, body: Any) -> Any:
        self.sent.append((broker_id, body))
        return self.handler(broker_id, body)


# -- the default partitioner ----------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40))
def test_murmur2_is_kafkas(key: bytes) -> None:
    # kafka-python returns the same 32 bits unsigned; Kafka's Java int is signed
    assert producer_tool.murmur2(key) & 0xFFFFFFFF == kafka_murmur2(key)
    assert -(2**31) <= producer_tool.murmur2(key) < 2**31


def test_keyed_records_go_where_kafkas_default_partitioner_puts_them() -> None:
    # values from Kafka's DefaultPartitionerTest / kafka-python's murmur2 & 0x7fffffff
    for key in (b"", b"a", b"abc", b"key-17", "ключ".encode()):
        assert producer_tool.partition_for_key(key, 7) == (kafka_murmur2(key) & 0x7FFFFFFF) % 7


# -- console-producer -----------------------------------------------------------------------

def test_line_reader_parses_keys_headers_and_null_markers() -> None:
    reader = producer_tool.LineReader(producer_tool.reader_config({
        "parse.key": "true", "key.separator": ":", "parse.headers": "true",
        "headers.delimiter": "|", "null.marker": "NULL"}))
    record = reader.parse("h1:v1,h2:NULL|k:v:w")
    assert record == producer_tool.ProducerRecord(b"k", b"v:w", (("h1", b"v1"), ("h2", None)))
    assert reader.parse("NULL|NULL:NULL") == producer_tool.ProducerRecord(None, None, ())
    with pytest.raises(producer_tool.ReaderError,
                       match=re.escape("No key separator found on line number 3: 'a|b'") + "$"):
        reader.parse("a|b")


def test_line_reader_defaults_and_ignore_error() -> None:
    plain = producer_tool.LineReader(producer_tool.reader_config({}))
    assert plain.parse("a\tb") == producer_tool.ProducerRecord(None, b"a\tb")
    lenient = producer_tool.LineReader(producer_tool.reader_config(
        {"parse.key": "TRUE ", "ignore.error": "true"}))
    assert lenient.parse("no-separator") == producer_tool.ProducerRecord(None, b"no-separator")


@pytest.mark.parametrize(("props", "message"), [
    ({"headers.separator": "\t"}, "headers.delimiter and headers.separator may not be equal"),
    ({"null.marker": "\t"}, "null.marker and key.separator may not be equal"),
    ({"headers.key.separator": ","},
     "headers.separator and headers.key.separator may not be equal"),
])
def test_reader_settings_that_clash(props: dict[str, str], message: str) -> None:
    with pytest.raises(producer_tool.ReaderError, match="^" + re.escape(message) + "$"):
        producer_tool.reader_config(props)


def test_producer_settings_refusals() -> None:
    with pytest.raises(Exception, match="Invalid value 2 for configuration acks"):
        producer_tool.producer_settings({"acks": "2"})
    with pytest.raises(Exception, match=re.escape("compression.type")):
        producer_tool.producer_settings({"compression.type": "brotli"})
    assert producer_tool.producer_settings({"acks": "all"}).acks == -1


def _produce_ok(broker: int, body: Any) -> ProduceResponse:
    return ProduceResponse(responses=tuple(TopicProduceResponse(
        name=t.name, partition_responses=tuple(PartitionProduceResponse(
            index=p.index, error_code=ErrorCode.NONE, base_offset=0)
            for p in t.partition_data)) for t in body.topic_data))


def _batches(sent: list[tuple[int, Any]]) -> dict[int, list[DefaultRecordBatch]]:
    out: dict[int, list[DefaultRecordBatch]] = {}
    for _, body in sent:
        for topic in body.topic_data:
            for part in topic.partition_data:
                out.setdefault(part.index, []).append(DefaultRecordBatch(bytes(part.records)))
    return out


def test_producer_sends_one_batch_per_partition_to_each_leader_read_by_kafka_python() -> None:
    brokers = FakeBrokers(_cluster({"t": [1, 2, 1]}), _produce_ok)
    settings_ = producer_tool.producer_settings({"compression.type": "gzip"})
    producer = producer_tool.Producer(brokers, "t", settings_, brokers.cluster, warn=print)
    keys = [b"a", b"b", b"c", b"d", b"a"]
    for key in keys:
        producer.add(producer_tool.ProducerRecord(key, b"v-" + key, (("h", b"x"),)),
                     timestamp_ms=1000)
    asyncio.run(producer.flush())
    assert {b for b, _ in brokers.sent} == {1, 2}
    assert producer.sent == 5 and producer.failed == 0
    batches = _batches(brokers.sent)
    for partition, [batch] in batches.items():
        assert batch.compression_type == GZIP and batch.validate_crc()
        records = list(batch)
        assert [r.key for r in records] == [k for k in keys
                                            if producer_tool.partition_for_key(k, 3) == partition]
        assert all(r.value == b"v-" + r.key and r.headers == [("h", b"x")]
                   and r.timestamp == 1000 for r in records)


def test_keyless_records_stick_to_one_partition_until_sent() -> None:
    brokers = FakeBrokers(_cluster({"t": [1, 1, 1, 1]}), _produce_ok)
    producer = producer_tool.Producer(brokers, "t", producer_tool.ProducerSettings(),
                                      brokers.cluster, warn=print, rng=random.Random(3))
    for value in (b"1", b"2", b"3"):
        producer.add(producer_tool.ProducerRecord(None, value))
    asyncio.run(producer.flush())
    assert [len(list(b)) for bs in _batches(brokers.sent).values() for b in bs] == [3]


def test_a_failed_partition_is_reported_like_kafkas_error_logging_callback() -> None:
    def refuse(broker: int, body: Any) -> ProduceResponse:
        answer = _produce_ok(broker, body)
        part = answer.responses[0].partition_responses[0]
        bad = PartitionProduceResponse(index=part.index, error_code=ErrorCode.INVALID_RECORD,
                                       base_offset=-1, error_message="bad record")
        return ProduceResponse(responses=(TopicProduceResponse(
            name=answer.responses[0].name, partition_responses=(bad,)),))

    warnings: list[str] = []
    brokers = FakeBrokers(_cluster({"t": [1]}), refuse)
    producer = producer_tool.Producer(brokers, "t", producer_tool.ProducerSettings(),
                                      brokers.cluster, warn=warnings.append)
    producer.add(producer_tool.ProducerRecord(b"k", b"12345"))
    asyncio.run(producer.flush())
    assert producer.failed == 1 and len(brokers.sent) == 1  # not retriable: sent once
    assert warnings == ["Error when sending message to topic t with key: 1 bytes, value: 5 "
                        "bytes with error: org.apache.kafka.common.errors."
                        "InvalidRecordException: bad record"]


class HeldBrokers(FakeBrokers):
    """Brokers whose answers wait until released, counting the requests unanswered."""

    def __init__(self, cluster: ClusterMetadata, handler: Handler) -> None:
        super().__init__(cluster, handler)
        self.release = asyncio.Event()
        self.unanswered = 0
        self.most_unanswered = 0

    async def request_to(self, broker_id: int, body: Any) -> Any:
        self.sent.append((broker_id, body))
        self.unanswered += 1
        self.most_unanswered = max(self.most_unanswered, self.unanswered)
        await self.release.wait()
        self.unanswered -= 1
        return self.handler(broker_id, body)


def test_full_batches_are_sent_while_the_next_fill_up_to_max_in_flight() -> None:
    """send() returns before the answer (the console producer waited for each one, so
    --batch-size changed nothing); the oldest send is awaited once max.in.flight are out,
    and flush() waits for every answer."""
    async def scenario() -> tuple[HeldBrokers, producer_tool.Producer, list[int]]:
        brokers = HeldBrokers(_cluster({"t": [1]}), _produce_ok)
        settings_ = producer_tool.producer_settings(
            {"max.in.flight.requests.per.connection": "2"})
        producer = producer_tool.Producer(brokers, "t", settings_, brokers.cluster,
                                          warn=print)
        unanswered = []
        for value in (b"1", b"2"):
            producer.add(producer_tool.ProducerRecord(b"k", value))
            await producer.send()
            await asyncio.sleep(0)  # the send task writes its request
            unanswered.append(brokers.unanswered)
        producer.add(producer_tool.ProducerRecord(b"k", b"3"))
        third = asyncio.create_task(producer.send())
        await asyncio.sleep(0)
        assert not third.done()  # two out: it waits for the oldest answer
        brokers.release.set()
        await third
        await producer.flush()
        return brokers, producer, unanswered

    brokers, producer, unanswered = asyncio.run(scenario())
    assert unanswered == [1, 2] and brokers.most_unanswered == 2
    assert producer.sent == 3 and producer.failed == 0
    assert [next(iter(b)).value for b in _batches(brokers.sent)[0]] == [b"1", b"2", b"3"]


def test_stdin_is_read_a_chunk_of_lines_at_a_time() -> None:
    from pykraft.cli.console_producer import _LineChunks

    stream = io.TextIOWrapper(io.BytesIO(b"a\r\nb\n\xc3\xbc\nlast"), encoding="utf-8")
    chunks = _LineChunks(stream)
    assert chunks.read() == ["a", "b", "\u00fc"]
    assert chunks.read() == ["last"]
    assert chunks.read() is None


# -- console-consumer -----------------------------------------------------------------------

@pytest.mark.parametrize(("partition", "offset", "beginning", "expected"), [
    (None, None, False, get_offsets_tool.LATEST),
    (None, None, True, get_offsets_tool.EARLIEST),
    (0, "EARLIEST", False, get_offsets_tool.EARLIEST),
    (0, "latest", False, get_offsets_tool.LATEST),
    (0, "42", False, 42),
])
def test_start_offsets(partition: int | None, offset: str | None, beginning: bool,
                       expected: int) -> None:
    assert consumer_tool.start_offset(partition, offset, beginning) == expected


@pytest.mark.parametrize(("partition", "offset", "beginning", "message"), [
    (None, "5", False, "The partition is required when offset is specified."),
    (0, "5", True, "Options from-beginning and offset cannot be specified together."),
    (0, "-3", False, "The provided offset value '-3' is incorrect. Valid values are "
                     "'earliest', 'latest', or a non-negative long."),
    (0, "x", False, "The provided offset value 'x' is incorrect."),
])
def test_offset_option_rules(partition: int | None, offset: str, beginning: bool,
                             message: str) -> None:
    with pytest.raises(UsageError) as info:
        consumer_tool.start_offset(partition, offset, beginning)
    assert str(info.value).startswith(message)


RECORD = consumer_tool.ConsumedRecord(2, 17, 1000, "CreateTime", 4, b"k", b"v",
                                      (("a", b"1"), ("b", None)))


@pytest.mark.parametrize(("props", "line"), [
    ({}, b"v\n"),
    ({"print.key": "true"}, b"k\tv\n"),
    ({"print.timestamp": "true", "print.partition": "true", "print.offset": "true",
      "print.headers": "true", "print.key": "true", "key.separator": " | "},
     b"CreateTime:1000 | Partition:2 | Offset:17 | a:1,b:null | k | v\n"),
    ({"print.epoch": "true", "print.value": "false", "print.key": "true"}, b"Epoch:4\tk\n"),
    ({"print.value": "false"}, b""),
    ({"print.headers": "true", "headers.separator": ";", "null.literal": "-",
      "line.separator": "\r\n"}, b"a:1;b:-\tv\r\n"),
])
def test_default_message_formatter(props: dict[str, str], line: bytes) -> None:
    assert consumer_tool.format_record(consumer_tool.formatter_config(props), RECORD) == line


def test_no_headers_and_null_key() -> None:
    config = consumer_tool.formatter_config({"print.headers": "true", "print.key": "true"})
    record = consumer_tool.ConsumedRecord(0, 0, 5, "LogAppendTime", 0, None, None)
    assert consumer_tool.format_record(config, record) == b"NO_HEADERS\tnull\tnull\n"


def _fetch_answer(batches: dict[int, bytes]) -> Callable[[int, Any], FetchResponse]:
    def answer(broker: int, body: Any) -> FetchResponse:
        assert body.topics[0].topic_id == TOPIC_ID
        return FetchResponse(responses=(
            FetchableTopicResponse(topic_id=TOPIC_ID, partitions=tuple(PartitionData(
                partition_index=p.partition, error_code=ErrorCode.NONE, high_watermark=10,
                aborted_transactions=None, records=batches.pop(p.partition, b""))
                for p in body.topics[0].partitions)),))
    return answer


def test_consumer_reads_whole_batches_from_the_position_on() -> None:
    values = [producer_tool.ProducerRecord(None, b"v%d" % i) for i in range(5)]
    batch = producer_tool.encode_batch(values, [1000 + i for i in range(5)], GZIP)
    brokers = FakeBrokers(_cluster({"t": [1]}), _fetch_answer({0: batch}))
    consumer = consumer_tool.Consumer(brokers, "t", brokers.cluster, {0: 2})
    lines: list[bytes] = []
    config = consumer_tool.formatter_config({"print.offset": "true",
                                             "print.timestamp": "true"})
    count, timed_out = asyncio.run(consumer_tool.consume(
        consumer, config, lines.append, max_messages=2))
    assert (count, timed_out) == (2, False)
    assert lines == [b"CreateTime:1002\tOffset:2\tv2\n", b"CreateTime:1003\tOffset:3\tv3\n"]
    assert consumer.positions == {0: 5}


def _batch_at(base_offset: int, count: int) -> bytes:
    values = [producer_tool.ProducerRecord(None, b"v%d" % (base_offset + i)) for i in range(count)]
    batch = bytearray(producer_tool.encode_batch(values, [1000] * count, GZIP))
    batch[:8] = base_offset.to_bytes(8, "big")  # outside the CRC, as a leader assigns it
    return bytes(batch)


def test_consumer_drops_a_fetch_responses_trailing_partial_batch() -> None:
    """A response cut at partition_max_bytes ends inside a batch: the whole ones are read,
    the next fetch starts at the partial one (as Kafka's fetcher does)."""
    first, second, third = _batch_at(0, 3), _batch_at(3, 3), _batch_at(6, 2)
    answers = [first + second + third[:30], third]

    def answer(broker: int, body: Any) -> FetchResponse:
        return _fetch_answer({0: answers.pop(0)})(broker, body)

    brokers = FakeBrokers(_cluster({"t": [1]}), answer)
    consumer = consumer_tool.Consumer(brokers, "t", brokers.cluster, {0: 0})
    lines: list[bytes] = []
    count, _ = asyncio.run(consumer_tool.consume(
        consumer, consumer_tool.FormatterConfig(), lines.append, max_messages=8))
    assert count == 8
    assert lines == [b"v%d\n" % i for i in range(8)]
    assert [int(body.topics[0].partitions[0].fetch_offset) for _, body in brokers.sent] == [0, 6]


def test_consumer_names_the_partition_and_offset_of_a_corrupt_batch() -> None:
    damaged = bytearray(_batch_at(3, 3))
    damaged[-1] ^= 0xFF
    brokers = FakeBrokers(_cluster({"t": [1]}), _fetch_answer({0: _batch_at(0, 3) + damaged}))
    consumer = consumer_tool.Consumer(brokers, "t", brokers.cluster, {0: 0})
    with pytest.raises(CorruptRecordError, match=r"^Record batch for partition t-0 at offset 3 "
                       r"is invalid, cause: CRC mismatch"):
        asyncio.run(consumer_tool.consume(consumer, consumer_tool.FormatterConfig(), print))


def test_consumer_timeout_ends_with_what_it_read() -> None:
    brokers = FakeBrokers(_cluster({"t": [1]}), _fetch_answer({}))
    consumer = consumer_tool.Consumer(brokers, "t", brokers.cluster, {0: 0})
    assert asyncio.run(consumer_tool.consume(
        consumer, consumer_tool.FormatterConfig(), print, timeout_ms=50)) == (0, True)


# -- get-offsets ----------------------------------------------------------------------------

def test_time_option() -> None:
    assert [get_offsets_tool.parse_time(t) for t in ("latest", "earliest", "max-timestamp",
                                                     "-4", "1700000000000")] == [
        -1, -2, -3, -4, 1700000000000]
    with pytest.raises(UsageError,
                       match=re.escape("Malformed time argument x. Please")):
        get_offsets_tool.parse_time("x")


def test_topic_partition_patterns() -> None:
    rules = get_offsets_tool.pattern_filter("t.*:1,u:2-4,v:5-,:-1")
    assert [p for p in range(7) if rules.allows("tx", p)] == [0, 1]
    assert [p for p in range(7) if rules.allows("u", p)] == [0, 2, 3]
    assert [p for p in range(7) if rules.allows("v", p)] == [0, 5, 6]
    with pytest.raises(UsageError, match="cannot be used with --topic"):
        get_offsets_tool.check_options("t", "t", None)
    with pytest.raises(UsageError, match="numeric partition ids, but received"):
        get_offsets_tool.check_options(None, None, "1,x")


def _list_offsets_answer(broker: int, body: Any) -> ListOffsetsResponse:
    def offset(partition: int) -> tuple[ErrorCode, int]:
        return {3: (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1), 4: (ErrorCode.NONE, -1)}.get(
            partition, (ErrorCode.NONE, 100 + partition))
    return ListOffsetsResponse(topics=tuple(ListOffsetsTopicResponse(
        name=t.name, partitions=tuple(ListOffsetsPartitionResponse(
            partition_index=p.partition_index, error_code=offset(p.partition_index)[0],
            offset=offset(p.partition_index)[1]) for p in t.partitions))
        for t in body.topics))


def test_offsets_sorted_as_kafka_sorts_topic_partition_strings() -> None:
    leaders: list[int | None] = [1, 2, 1, 1, 1, None, 1, 1, 1, 1, 2, 1]
    brokers = FakeBrokers(_cluster({"t": leaders, "other": [1]}), _list_offsets_answer)
    warnings: list[str] = []
    offsets = asyncio.run(get_offsets_tool.get_offsets(
        brokers, get_offsets_tool.partition_filter("t", None), -1, warn=warnings.append))
    lines = get_offsets_tool.offset_lines(offsets)
    assert lines[:4] == ["t:0:100", "t:1:101", "t:10:110", "t:11:111"]
    assert "t:3:103" not in lines and "t:4:104" not in lines and "t:5:105" not in lines
    assert all(line.startswith("t:") for line in lines)
    assert {b for b, _ in brokers.sent} == {1, 2}
    assert "Skip getting offsets for topic-partition t-3 due to error: org.apache.kafka." \
           "common.errors.NotLeaderOrFollowerException: " in "\n".join(warnings)
    with pytest.raises(UsageError, match="Could not match any"):
        asyncio.run(get_offsets_tool.get_offsets(
            brokers, get_offsets_tool.partition_filter("nope", None), -1))


# -- delete-records -------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "message"), [
    ("{", "The input string is not a valid JSON"),
    ('{"version": 2, "partitions": []}', "Not supported version field value 2"),
    ('{"version": 1}', "Missing partitions field"),
    ('{"partitions": [{"topic": "a", "partition": 0, "offset": 1}, '
     '{"topic": "a", "partition": 0, "offset": 2}]}',
     "Offset json file contains duplicate topic partitions: a-0"),
    ('{"partitions": [{"topic": "a", "partition": 0}]}', "No such field exists: `offset`"),
])
def test_offset_json_refusals(text: str, message: str) -> None:
    with pytest.raises(UsageError, match="^" + re.escape(message) + "$"):
        delete_records_tool.parse_offset_json(text)


def test_delete_records_lines() -> None:
    def answer(broker: int, body: Any) -> DeleteRecordsResponse:
        return DeleteRecordsResponse(topics=tuple(DeleteRecordsTopicResult(
            name=t.name, partitions=tuple(DeleteRecordsPartitionResult(
                partition_index=p.partition_index, low_watermark=p.offset if p.offset >= 0
                else -1, error_code=ErrorCode.NONE if p.offset >= 0
                else ErrorCode.OFFSET_OUT_OF_RANGE) for p in t.partitions))
            for t in body.topics))

    brokers = FakeBrokers(_cluster({"a": [1, 2]}), answer)
    offsets = delete_records_tool.parse_offset_json(json.dumps({"partitions": [
        {"topic": "a", "partition": 1, "offset": 5}, {"topic": "a", "partition": 0,
                                                      "offset": -7},
        {"topic": "gone", "partition": 0, "offset": 1}]}))
    assert asyncio.run(delete_records_tool.delete_records(brokers, offsets)) == [
        "Executing records delete operation", "Records delete operation completed:",
        "partition: a-1\tlow_watermark: 5",
        "partition: a-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: "
        "OFFSET_OUT_OF_RANGE",
        "partition: gone-0\terror: org.apache.kafka.common.errors."
        "UnknownTopicOrPartitionException: This server does not host this topic-partition."]


# -- log-dirs -------------------------------------------------------------------------------

def _log_dirs_answer(broker: int, body: Any) -> DescribeLogDirsResponse:
    assert body.topics is None
    def partition(index: int) -> DescribeLogDirsPartition:
        return DescribeLogDirsPartition(partition_index=index, partition_size=10 * index,
                                        offset_lag=0, is_future_key=False)
    return DescribeLogDirsResponse(error_code=ErrorCode.NONE, results=(
        DescribeLogDirsResult(error_code=ErrorCode.NONE, log_dir=f"/data/b{broker}", topics=(
            DescribeLogDirsTopic(name="t", partitions=(partition(0), partition(1))),
            DescribeLogDirsTopic(name="u", partitions=(partition(0),)))),
        DescribeLogDirsResult(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir="/bad",
                              topics=())))


def test_log_dirs_json_is_kafkas_hash_map_order() -> None:
    brokers = FakeBrokers(_cluster({}), _log_dirs_answer)
    lines = asyncio.run(log_dirs_tool.describe(brokers, "2", "t"))
    assert lines[:2] == ["Querying brokers for log directories information",
                         "Received log directory information from brokers 2"]
    # Jackson writes LogDirsCommand's HashMaps in bucket order: keys as in Kafka's documented
    # sample; "/bad" hashes to bucket 0 and "/data/b2" to 13; t-1 to bucket 4 and t-0 to 5
    assert lines[2] == (
        '{"brokers":[{"broker":2,"logDirs":[{"partitions":[],'
        '"error":"org.apache.kafka.common.errors.KafkaStorageException","logDir":"/bad"},'
        '{"partitions":['
        '{"partition":"t-1","size":10,"offsetLag":0,"isFuture":false},'
        '{"partition":"t-0","size":0,"offsetLag":0,"isFuture":false}],'
        '"error":null,"logDir":"/data/b2"}]}],"version":1}')


def test_java_hash_map_order_follows_buckets() -> None:
    # Integer keys hash to themselves: 17 lands in bucket 1 of 16, 3 in bucket 3
    assert java_hash_order([3, 17, 1], lambda v: v) == [17, 1, 3]


def test_log_dirs_refuses_brokers_not_in_the_cluster() -> None:
    brokers = FakeBrokers(_cluster({}), _log_dirs_answer)
    with pytest.raises(UsageError, match=re.escape(
            "ERROR: The given brokers do not exist from --broker-list: 5,7. Current existent "
            "brokers: 1,2")):
        asyncio.run(log_dirs_tool.describe(brokers, "7,5,1"))


# -- the command lines, with no cluster -----------------------------------------------------

@pytest.mark.parametrize(("args", "message"), [
    (["console-producer", "--bootstrap-server", "h:1"], 'Missing required argument "[topic]"'),
    (["console-producer", "--topic", "t"], 'Missing required argument "[bootstrap-server]"'),
    (["console-producer", "--topic", "t", "--bootstrap-server", "h:1",
      "--request-required-acks", "2"], "Invalid value 2 for configuration acks"),
    (["console-producer", "--topic", "t", "--bootstrap-server", "h:1", "--property",
      "null.marker=\t"], "null.marker and key.separator may not be equal"),
    (["console-consumer", "--bootstrap-server", "h:1"],
     "Exactly one of --include/--topic is required."),
    (["console-consumer", "--bootstrap-server", "h:1", "--topic", "t", "--offset", "3"],
     "The partition is required when offset is specified."),
    (["console-consumer", "--bootstrap-server", "h:1", "--topic", "t", "--formatter", "x.Y"],
     "x.Y: pykraft's console consumer has only the default formatter"),
    (["get-offsets", "--topic", "t"], 'Missing required argument "[bootstrap-server]"'),
    (["get-offsets", "--bootstrap-server", "h:1", "--time", "soon"],
     "Error occurred: Malformed time argument soon."),
    (["log-dirs", "--bootstrap-server", "h:1"], 'Missing required argument "[describe]"'),
    (["delete-records", "--bootstrap-server", "h:1"],
     'Missing required argument "[offset-json-file]"'),
])
def test_command_line_refusals_need_no_cluster(args: list[str], message: str) -> None:
    from pykraft.cli.main import app

    result = CliRunner().invoke(app, args, input="")
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(message), result.stderr


def test_delete_records_reads_the_file_before_connecting(tmp_path: Path) -> None:
    from pykraft.cli.main import app

    path = tmp_path / "offsets.json"
    path.write_text('{"partitions": [{"topic": "a", "partition": 0, "offset": 1}, '
                    '{"topic": "a", "partition": 0, "offset": 1}]}')
    result = CliRunner().invoke(app, ["delete-records", "--bootstrap-server", "127.0.0.1:1",
                                      "--offset-json-file", str(path)])
    assert result.exit_code == 1
    assert result.stderr == "Offset json file contains duplicate topic partitions: a-0\n"
