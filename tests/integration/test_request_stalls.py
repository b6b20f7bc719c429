"""One expensive request must not stall a node past its timeouts (issue 24, defect 5).

Each node runs one event loop; a request that held it for seconds stopped heartbeats and
Raft timers: CreateTopics of 5,000 topics (validate-only) froze the active controller ~18 s
and caused elections, an OffsetCommit of 100,000 partitions froze the broker 5-7 s, five
100 MB Produce requests at once ~3.5 s, validating a gzip record of 1 GiB (1019 KiB
compressed) 7.6 s and cleaning it, compacted, 11.3 s, creating the logs of a
1,000-partition topic (three fsyncs each) 13-20 s, fencing the broker. Here 3 controllers
and 1 broker run with a short ``broker.session.timeout.ms``; during each request a probe
process sends ApiVersions every 50 ms to the node serving it
(:class:`pykraft.testing.stalls.StallProbe`), and afterwards the quorum must have kept
its leader and epoch and the controller must not have fenced the broker.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
from process_harness import describe, wait_for

from pykraft.errors import PyKraftError
from pykraft.ids import TopicPartition
from pykraft.messages.kafka.create_topics_request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.messages.kafka.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from pykraft.messages.kafka.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from pykraft.protocol.api_versions import listener_ranges, offsets_by_name
from pykraft.protocol.apis import Listener
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import encode_batch
from pykraft.records.compression import GZIP
from pykraft.runtime.kafka_client import ClientConnection, open_with_timeout
from pykraft.storage.offset_checkpoints import read_offset_checkpoint
from pykraft.testing.compression_bombs import MiB, batch, bomb, huge_record
from pykraft.testing.stalls import (
    ProbeResult,
    StallProbe,
    fences_of,
    latest_offsets,
    serves_all,
)
from pykraft.tools.admin_client import admin_settings
from pykraft.tools.broker_clients import BrokerClients
from pykraft.tools.group_admin import GroupClient
from pykraft.tools.local_cluster import HOST, LocalCluster
from pykraft.tools.quorum_tool import QuorumInfo

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
T = TypeVar("T")

#: Shorter than Kafka's 9 s so that a stall of the original code fences the broker, long
#: enough for a loaded 2-core machine, where every loop turn takes several times longer.
SESSION_TIMEOUT_MS = 6000
PROPERTIES = {
    "pykraft.shutdown.timeout.ms": "3000",
    "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "broker.heartbeat.interval.ms": "500",
    "log.cleaner.backoff.ms": "200",  # the compacted topic's log is cleaned at once
    # the periodic checkpoints fall inside each request's probe (1,000 new partitions' are
    # 1,000 leader-epoch files: 0.7 s of fsyncs, seconds on a busy disk, on the loop once)
    "log.flush.offset.checkpoint.interval.ms": "1000",
    "replica.high.watermark.checkpoint.interval.ms": "500",
}
#: The longest ApiVersions round trip allowed on the node serving the request: Kafka's
#: controller.quorum.fetch.timeout.ms (2 s), past which an active controller's followers
#: elect another (measured figures, well below it, are in bench/stalls.py's docstring).
STALL_LIMIT_S = 2.0
REQUEST_TIMEOUT_S = 120.0
SETUP_TIMEOUT_S = 90.0  # the broker registers and is unfenced first (a loaded machine)
PRODUCE_TOPIC = "stall-produce"
PRODUCE_PARTITIONS = 100
BATCH_BYTES = 1_000_000
HUGE_RECORD_BYTES = 1024 * MiB  # one valid record, gzip within max.message.bytes (1019 KiB)
HUGE_RECORDS = 2  # partitions, each sent one: seconds of zlib in all
GROUP = "stall-group"
NEW_PARTITIONS = 1000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    made = LocalCluster.create(tmp_path_factory.mktemp("stalls") / "c", 3, PROPERTIES,
                               brokers=1)
    try:
        made.start_all()
        made.wait_listening(made.brokers)
        wait_for(f"{PRODUCE_TOPIC} created", lambda: True if all(
            r.error_code in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS)
            for r in run(broker_request(made, create_topics(
                [PRODUCE_TOPIC], PRODUCE_PARTITIONS))).topics) else None,
            timeout_s=SETUP_TIMEOUT_S)
        yield made
    finally:
        for node_id in made.nodes:
            made.kill(node_id)


def run(work: Awaitable[T]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(REQUEST_TIMEOUT_S):
            return await work
    return asyncio.run(bounded())


async def connect(cluster: LocalCluster) -> ClientConnection:
    broker = cluster.nodes[cluster.brokers[0]]
    return await open_with_timeout(HOST, broker.port, client_id="stall-test",
                                   ours=offsets_by_name(listener_ranges(Listener.BROKER)),
                                   timeout_s=10.0)


async def broker_request(cluster: LocalCluster, body: Any) -> Any:
    connection = await connect(cluster)
    try:
        return await connection.request(body)
    finally:
        connection.close()


def create_topics(names: list[str], partitions: int, *, validate_only: bool = False,
                  configs: dict[str, str] | None = None) -> CreateTopicsRequest:
    settings = tuple(CreatableTopicConfig(name=key, value=value)
                     for key, value in (configs or {}).items())
    return CreateTopicsRequest(topics=tuple(
        CreatableTopic(name=name, num_partitions=partitions,
                       replication_factor=1, assignments=(), configs=settings)
        for name in names), validate_only=validate_only)


def quorum(cluster: LocalCluster) -> QuorumInfo:
    info: QuorumInfo = wait_for("the quorum described", lambda: describe(cluster))
    return info


def probed(cluster: LocalCluster, node_id: int, listener: Listener,
           request: Callable[[], T]) -> tuple[T, ProbeResult]:
    """``request()`` while a probe asks ``node_id`` for ApiVersions; the quorum keeps its
    leader and epoch, and the broker is not fenced."""
    before = quorum(cluster)
    fences = fences_of(cluster.nodes[before.leader_id].data, cluster.brokers[0])
    with StallProbe(HOST, cluster.nodes[node_id].port, listener) as probe:
        answer = request()
        result = probe.stop()
    after = quorum(cluster)
    assert (after.leader_id, after.leader_epoch) == (before.leader_id, before.leader_epoch), (
        result)
    assert fences_of(cluster.nodes[after.leader_id].data, cluster.brokers[0]) == fences, (
        result)
    assert result.error is None and result.answered > 0
    return answer, result


def test_five_thousand_topics_validated_at_once_keep_the_controller_leading(
        cluster: LocalCluster) -> None:
    names = [f"stall-validate-{i}" for i in range(5000)]
    leader = quorum(cluster).leader_id
    answer, probe = probed(cluster, leader, Listener.CONTROLLER, lambda: run(broker_request(
        cluster, create_topics(names, 1, validate_only=True))))
    assert [t.name for t in answer.topics] == names
    assert {t.error_code for t in answer.topics} == {ErrorCode.NONE}
    assert probe.worst_s < STALL_LIMIT_S, probe


def test_an_offset_commit_of_100000_partitions_keeps_the_broker_serving(
        cluster: LocalCluster) -> None:
    """The partitions the topic has are committed, the others answered
    UNKNOWN_TOPIC_OR_PARTITION; decoding and answering 100,000 of them stall nothing."""
    async def coordinator() -> None:
        async with BrokerClients(admin_settings(cluster.bootstrap_servers)) as brokers:
            await GroupClient(brokers, timeout_s=60.0).coordinator(GROUP)
    run(coordinator())  # the only broker: __consumer_offsets exists and is loaded
    body = OffsetCommitRequest(
        group_id=GROUP, generation_id_or_member_epoch=-1, member_id="",
        group_instance_id=None, topics=(OffsetCommitRequestTopic(
            name=PRODUCE_TOPIC, partitions=tuple(OffsetCommitRequestPartition(
                partition_index=p, committed_offset=1, committed_leader_epoch=-1,
                committed_metadata="") for p in range(100_000))),))
    answer, probe = probed(cluster, cluster.brokers[0], Listener.BROKER,
                           lambda: run(broker_request(cluster, body)))
    codes = {int(p.partition_index): p.error_code for t in answer.topics for p in t.partitions}
    assert sorted(codes) == list(range(100_000))
    assert {codes[p] for p in range(PRODUCE_PARTITIONS)} == {ErrorCode.NONE}
    assert {codes[p] for p in range(PRODUCE_PARTITIONS, 100_000)} == {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert probe.worst_s < STALL_LIMIT_S, probe


def produce_request(cluster: LocalCluster, batches: list[bytes], *,
                    topic: str = PRODUCE_TOPIC) -> ProduceRequest:
    """acks=1, one batch per partition of ``topic`` from partition 0 on."""
    metadata = run(broker_request(cluster, MetadataRequest(
        topics=(MetadataRequestTopic(name=topic),),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False)))
    return ProduceRequest(
        acks=1, timeout_ms=30_000,
        topic_data=(TopicProduceData(topic_id=metadata.topics[0].topic_id, partition_data=tuple(
            PartitionProduceData(index=p, records=records)
            for p, records in enumerate(batches))),))


def test_five_large_produce_requests_at_once_keep_the_broker_serving(
        cluster: LocalCluster) -> None:
    records = encode_batch(0, [(None, os.urandom(BATCH_BYTES))], partition_leader_epoch=-1,
                           timestamp=int(time.time() * 1000))
    body = produce_request(cluster, [records] * PRODUCE_PARTITIONS)

    async def produce_at_once() -> list[Any]:
        connections = [await connect(cluster) for _ in range(5)]
        try:
            return list(await asyncio.gather(*(c.request(body) for c in connections)))
        finally:
            for connection in connections:
                connection.close()

    answers, probe = probed(cluster, cluster.brokers[0], Listener.BROKER,
                            lambda: run(produce_at_once()))
    codes = [p.error_code for a in answers for t in a.responses for p in t.partition_responses]
    assert len(codes) == 5 * PRODUCE_PARTITIONS and set(codes) == {ErrorCode.NONE}
    assert probe.worst_s < STALL_LIMIT_S, probe



@pytest.fixture(scope="module")
def gigabyte_record() -> bytes:
    """A 1019 KiB gzip batch holding one valid record of 1 GiB, keyed: seconds of zlib to
    read (Kafka spends them too, on a request handler thread or its cleaner's)."""
    head, tail = huge_record(HUGE_RECORD_BYTES, key=b"huge")
    return batch(GZIP, bomb(GZIP, head, HUGE_RECORD_BYTES, tail),
                 timestamp=int(time.time() * 1000))


def test_records_expanding_to_gigabytes_are_validated_while_the_broker_serves(
        cluster: LocalCluster, gigabyte_record: bytes) -> None:
    """Two such batches in one Produce: the broker's loop validated them (about 3 s of CPU
    each); the validation thread does now."""
    body = produce_request(cluster, [gigabyte_record] * HUGE_RECORDS)
    answer, probe = probed(cluster, cluster.brokers[0], Listener.BROKER,
                           lambda: run(broker_request(cluster, body)))
    parts = [p for t in answer.responses for p in t.partition_responses]
    assert [(p.error_code, p.base_offset >= 0) for p in parts] == [
        (ErrorCode.NONE, True)] * HUGE_RECORDS
    assert probe.worst_s < STALL_LIMIT_S, probe


def test_a_compacted_record_of_a_gigabyte_is_cleaned_while_the_broker_serves(
        cluster: LocalCluster, gigabyte_record: bytes) -> None:
    """The cleaner walks such a record twice (offset map, cleaned segment): seconds on the
    broker's loop before, on the cleaner's thread now."""
    name = "stall-compacted"
    answer = run(broker_request(cluster, create_topics([name], 1, configs={
        "cleanup.policy": "compact",  # the huge batch fills a segment, the next rolls it
        "internal.segment.bytes": str(len(gigabyte_record))})))  # below the 1 MiB floor
    assert answer.topics[0].error_code == ErrorCode.NONE
    tp = f"{name}-0"
    checkpoint = cluster.nodes[cluster.brokers[0]].data / "cleaner-offset-checkpoint"
    wait_for(f"{tp} hosted", lambda: True if (
        cluster.nodes[cluster.brokers[0]].data / tp).is_dir() else None)
    small = encode_batch(0, [(b"huge", b"small")], partition_leader_epoch=-1,
                         timestamp=int(time.time() * 1000))

    def produce_then_clean() -> list[ErrorCode]:
        codes = [p.error_code for records in (gigabyte_record, small)
                 for t in run(broker_request(cluster, produce_request(
                     cluster, [records], topic=name))).responses
                 for p in t.partition_responses]
        wait_for(f"{tp} cleaned", lambda: True if checkpoint.is_file() and TopicPartition(
            name, 0) in read_offset_checkpoint(checkpoint) else None,
            timeout_s=REQUEST_TIMEOUT_S)
        return codes

    codes, probe = probed(cluster, cluster.brokers[0], Listener.BROKER, produce_then_clean)
    assert codes == [ErrorCode.NONE, ErrorCode.NONE]
    assert probe.worst_s < STALL_LIMIT_S, probe


def test_a_topic_of_1000_partitions_keeps_the_broker_serving(cluster: LocalCluster) -> None:
    """The broker creates the 1,000 logs off its event loop: it answers ApiVersions and
    heartbeats meanwhile, then serves every partition (ListOffsets answered)."""
    topic = "stall-partitions"

    def serving() -> bool | None:
        try:
            answer = run(broker_request(cluster, latest_offsets(topic, NEW_PARTITIONS)))
        except (PyKraftError, OSError):  # a broker holding its loop takes no connection
            return None
        return True if serves_all(answer) else None

    def create_until_served() -> Any:
        answer = run(broker_request(cluster, create_topics([topic], NEW_PARTITIONS)))
        wait_for(f"the broker serving the partitions of {topic}", serving,
                 timeout_s=REQUEST_TIMEOUT_S)
        return answer

    answer, probe = probed(cluster, cluster.brokers[0], Listener.BROKER, create_until_served)
    assert [(t.name, t.error_code) for t in answer.topics] == [(topic, ErrorCode.NONE)]
    assert probe.worst_s < STALL_LIMIT_S, probe
