"""Issue 14's client matrix on a real 1-controller + 1-broker cluster: kcat, confluent-kafka,
kafka-python, aiokafka and Apache Kafka's Java client each produce COUNT keyed messages with
headers to a 6-partition RF-1 topic (confluent-kafka and Java with every codec; kcat,
kafka-python and aiokafka SMALL ones with each codec besides) and read every one back by
partition and offset (assign, no group), byte-equal; ListOffsets earliest, latest and by
timestamp, through each client's own API, agree with what was read."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from broker_harness import codecs_on_disk, confluent_produce, create_topic, one_broker_cluster
from java_clients import Message, decode, encode, run_probe

from pykraft.records.compression import CODECS
from pykraft.tools.local_cluster import LocalCluster

COUNT = 10_000
SMALL = 200  # messages per codec for the clients whose uncompressed run sends COUNT
PARTITIONS = 6
DEADLINE_S = 60.0
KCAT_HEADERS = (("client", b"kcat"), ("run", "\u00fc".encode()))

#: (partition, offset) -> the message there and its timestamp
Read = dict[tuple[int, int], tuple[Message, int]]
#: (partition, offset) of each message, in the order sent (None: the client does not say)
Placed = list[tuple[int, int]] | None
#: a client's answers to ListOffsets: partition -> earliest, latest; (partition, ts) -> found
Offsets = tuple[dict[int, int], dict[int, int], Callable[[int, int], int | None]]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with one_broker_cluster(tmp_path_factory.mktemp("matrix") / "cluster") as made:
        yield made


def messages(tag: str, fixed_headers: tuple[tuple[str, bytes], ...] | None = None,
             count: int = COUNT) -> list[Message]:
    """Text (kcat reads lines) that compresses well (or librdkafka sends it uncompressed)."""
    return [(f"{tag}-key-{i}".encode(),
             f"{tag}-value-{i}-\u00e9-".encode() + b"x" * (50 * (i % 7)),
             fixed_headers or (("seq", str(i).encode()), ("tag", tag.encode())))
            for i in range(count)]


def assert_codec_or_plain(cluster: LocalCluster, topic: str, codec: str) -> None:
    """librdkafka, kafka-python and aiokafka send a batch uncompressed when compressing would
    not shrink it (a batch of a few small messages, as a loaded machine's linger makes), so
    their topics may also hold plain batches besides the codec's (the broker stores what
    they sent)."""
    expected = CODECS[codec]
    found = codecs_on_disk(cluster, topic)
    assert expected in found
    assert found <= {expected, CODECS["none"]}


def check_read_back(sent: list[Message], placed: Placed, read: Read) -> None:
    """Every message once, offsets dense from 0 per partition, at the offset the producer
    was told."""
    assert sorted(message for message, _ in read.values()) == sorted(sent)
    for partition in range(PARTITIONS):
        offsets = sorted(o for p, o in read if p == partition)
        assert offsets == list(range(len(offsets)))
    if placed is not None:
        assert {at: message for at, message in zip(placed, sent, strict=True)} == {
            at: message for at, (message, _) in read.items()}


def sized(codec: str) -> int:
    """How many messages a codec's run sends: COUNT uncompressed, else SMALL."""
    return COUNT if codec == "none" else SMALL


def check_offsets(read: Read, offsets: Offsets) -> None:
    """Earliest 0, latest the count read; by timestamp the first offset at or after it."""
    earliest, latest, by_time = offsets
    assert earliest == dict.fromkeys(range(PARTITIONS), 0)
    assert latest == {p: sum(1 for q, _ in read if q == p) for p in range(PARTITIONS)}
    for (partition, _), (_, timestamp) in list(read.items())[::997]:
        expected = min(o for (p, o), (_, ts) in read.items()
                       if p == partition and ts >= timestamp)
        assert by_time(partition, timestamp) == expected
    last = max(ts for _, ts in read.values())
    assert by_time(0, last + 1) is None


# -- kcat -------------------------------------------------------------------------------------


def kcat(cluster: LocalCluster, *args: str, stdin: bytes = b"") -> bytes:
    done = subprocess.run(["kcat", "-b", cluster.bootstrap_servers, *args], input=stdin,
                          capture_output=True, timeout=DEADLINE_S, check=True)
    return done.stdout


def kcat_offset(cluster: LocalCluster, topic: str, partition: int, at: int) -> int:
    """``kcat -Q``: ListOffsets for a timestamp (-1 latest, -2 earliest); -1 if none."""
    out = kcat(cluster, "-Q", "-t", f"{topic}:{partition}:{at}").decode()
    return int(out.split("offset")[-1].split()[0])


@pytest.mark.parametrize("codec", list(CODECS))
def test_kcat(cluster: LocalCluster, codec: str) -> None:
    topic = f"matrix-kcat-{codec}"
    create_topic(cluster.bootstrap_servers, topic, PARTITIONS)
    sent = messages("kcat", KCAT_HEADERS, sized(codec))
    lines = b"".join(key + b"\t" + value + b"\n" for key, value, _ in sent)
    kcat(cluster, "-P", "-t", topic, "-K", "\t", "-z", codec,
         *(f"-H{k}={v.decode()}" for k, v in KCAT_HEADERS), stdin=lines)
    assert_codec_or_plain(cluster, topic, codec)
    read: Read = {}
    for line in kcat(cluster, "-C", "-t", topic, "-o", "beginning", "-e", "-J").splitlines():
        record = json.loads(line)
        names = record["headers"][::2]
        values = [v.encode() for v in record["headers"][1::2]]
        read[(record["partition"], record["offset"])] = (
            (record["key"].encode(), record["payload"].encode(),
             tuple(zip(names, values, strict=True))), record["ts"])
    check_read_back(sent, None, read)
    check_offsets(read, (
        {p: kcat_offset(cluster, topic, p, -2) for p in range(PARTITIONS)},
        {p: kcat_offset(cluster, topic, p, -1) for p in range(PARTITIONS)},
        lambda p, ts: o if (o := kcat_offset(cluster, topic, p, ts)) >= 0 else None))


# -- confluent-kafka --------------------------------------------------------------------------


@pytest.mark.parametrize("codec", list(CODECS))
def test_confluent_kafka(cluster: LocalCluster, codec: str) -> None:
    import confluent_kafka

    topic = f"matrix-confluent-{codec}"
    create_topic(cluster.bootstrap_servers, topic, PARTITIONS)
    sent = messages(f"ck-{codec}")
    reports = confluent_produce({
        "bootstrap.servers": cluster.bootstrap_servers, "compression.type": codec,
        "enable.idempotence": True, "linger.ms": 5}, topic, sent, DEADLINE_S)
    at = {r.key(): (r.partition(), r.offset()) for r in reports}
    placed = [at[key] for key, _, _ in sent]  # reports come per partition: match by key
    assert_codec_or_plain(cluster, topic, codec)

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": "unused-with-assign",
        "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    read: Read = {}
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                         for p in range(PARTITIONS)])
        deadline = time.monotonic() + DEADLINE_S
        while len(read) < len(sent) and time.monotonic() < deadline:
            message: Any
            for message in consumer.consume(1000, 0.2):
                assert message.error() is None, message.error()
                headers = tuple((k, bytes(v)) for k, v in message.headers() or ())
                read[(message.partition(), message.offset())] = (
                    (message.key(), message.value(), headers), message.timestamp()[1])
        check_read_back(sent, placed, read)
        marks = {p: consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p),
                                                   timeout=10, cached=False)
                 for p in range(PARTITIONS)}

        def by_time(partition: int, ts: int) -> int | None:
            (found,) = consumer.offsets_for_times(
                [confluent_kafka.TopicPartition(topic, partition, ts)], timeout=10)
            assert found.error is None
            return None if found.offset < 0 else int(found.offset)

        check_offsets(read, ({p: low for p, (low, _) in marks.items()},
                             {p: high for p, (_, high) in marks.items()}, by_time))
    finally:
        consumer.close()


# -- kafka-python -----------------------------------------------------------------------------


@pytest.mark.parametrize("codec", list(CODECS))
def test_kafka_python(cluster: LocalCluster, codec: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = f"matrix-kafka-python-{codec}"
    create_topic(cluster.bootstrap_servers, topic, PARTITIONS)
    sent = messages(f"kp-{codec}", count=sized(codec))
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=5,
                             compression_type=None if codec == "none" else codec)
    try:
        assert producer._transaction_manager is not None  # idempotent by default
        futures = [producer.send(topic, key=k, value=v, headers=list(h)) for k, v, h in sent]
        producer.flush(DEADLINE_S)
        placed = [(m.partition, m.offset) for m in (f.get(timeout=5) for f in futures)]
    finally:
        producer.close(timeout=5)
    assert_codec_or_plain(cluster, topic, codec)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=None,
                             enable_auto_commit=False, fetch_max_wait_ms=100)
    parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    read: Read = {}
    try:
        consumer.assign(parts)
        consumer.seek_to_beginning()
        deadline = time.monotonic() + DEADLINE_S
        while len(read) < len(sent) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                for r in records:
                    read[(r.partition, r.offset)] = (
                        (r.key, r.value, tuple((k, bytes(v)) for k, v in r.headers)),
                        r.timestamp)
        check_read_back(sent, placed, read)

        def by_time(partition: int, ts: int) -> int | None:
            tp = TopicPartition(topic, partition)
            found = consumer.offsets_for_times({tp: ts})[tp]
            return None if found is None else int(found.offset)

        check_offsets(read, (
            {tp.partition: o for tp, o in consumer.beginning_offsets(parts).items()},
            {tp.partition: o for tp, o in consumer.end_offsets(parts).items()}, by_time))
    finally:
        consumer.close()


# -- aiokafka ---------------------------------------------------------------------------------


async def aiokafka_round_trip(cluster: LocalCluster, topic: str, sent: list[Message],
                              codec: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                                enable_idempotence=True, linger_ms=5,
                                compression_type=None if codec == "none" else codec)
    await producer.start()
    try:
        futures = [await producer.send(topic, key=k, value=v, headers=list(h))
                   for k, v, h in sent]
        placed = [(m.partition, m.offset) for m in await asyncio.gather(*futures)]
    finally:
        await producer.stop()
    assert_codec_or_plain(cluster, topic, codec)
    consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=None,
                                enable_auto_commit=False, fetch_max_wait_ms=100)
    await consumer.start()
    parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    read: Read = {}
    try:
        consumer.assign(parts)
        await consumer.seek_to_beginning()
        deadline = time.monotonic() + DEADLINE_S
        while len(read) < len(sent) and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                for r in records:
                    read[(r.partition, r.offset)] = (
                        (r.key, r.value, tuple((k, bytes(v)) for k, v in r.headers)),
                        r.timestamp)
        check_read_back(sent, placed, read)
        earliest = await consumer.beginning_offsets(parts)
        latest = await consumer.end_offsets(parts)
        samples = list(read.items())[::997]
        found = {(p, ts): await consumer.offsets_for_times({TopicPartition(topic, p): ts})
                 for (p, _), (_, ts) in samples}
        last = max(ts for _, ts in read.values()) + 1
        found[(0, last)] = await consumer.offsets_for_times({TopicPartition(topic, 0): last})
    finally:
        await consumer.stop()

    def by_time(partition: int, ts: int) -> int | None:
        answer = found[(partition, ts)][TopicPartition(topic, partition)]
        return None if answer is None else int(answer.offset)

    check_offsets(read, ({tp.partition: o for tp, o in earliest.items()},
                         {tp.partition: o for tp, o in latest.items()}, by_time))


@pytest.mark.parametrize("codec", list(CODECS))
def test_aiokafka(cluster: LocalCluster, codec: str) -> None:
    topic = f"matrix-aiokafka-{codec}"
    create_topic(cluster.bootstrap_servers, topic, PARTITIONS)
    asyncio.run(aiokafka_round_trip(cluster, topic, messages(f"aio-{codec}", count=sized(codec)),
                                    codec))


# -- Apache Kafka's Java client ---------------------------------------------------------------


@pytest.mark.parametrize("codec", list(CODECS))
def test_java_client(cluster: LocalCluster, client_probe: list[str], codec: str) -> None:
    topic = f"matrix-java-{codec}"
    create_topic(cluster.bootstrap_servers, topic, PARTITIONS)
    servers = cluster.bootstrap_servers
    sent = messages(f"java-{codec}")
    answers = run_probe(client_probe, "produce", servers, topic, codec,
                   stdin="".join(encode(m) + "\n" for m in sent))
    placed = [(int(p), int(o)) for p, o, _ in answers]
    assert codecs_on_disk(cluster, topic) == {CODECS[codec]}  # the Java client has lz4

    read: Read = {}
    earliest: dict[int, int] = {}
    latest: dict[int, int] = {}
    for words in run_probe(client_probe, "consume", servers, topic, str(PARTITIONS), str(COUNT)):
        if words[0] in ("begin", "end"):
            (earliest if words[0] == "begin" else latest)[int(words[1])] = int(words[2])
        else:
            read[(int(words[0]), int(words[1]))] = (decode(words[3:]), int(words[2]))
    check_read_back(sent, placed, read)
    last = max(ts for _, ts in read.values()) + 1
    asked = [(p, ts) for (p, _), (_, ts) in list(read.items())[::997]] + [(0, last)]
    times = run_probe(client_probe, "times", servers, topic,
                 stdin="".join(f"{p}\t{ts}\n" for p, ts in asked))
    found = {at: (None if int(o) < 0 else int(o)) for at, (_, o, _) in zip(asked, times,
                                                                          strict=True)}
    check_offsets(read, (earliest, latest, lambda p, ts: found[(p, ts)]))

