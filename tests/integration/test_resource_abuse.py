"""The resource-abuse suite: every request type a node serves, at the largest size it
accepts (``socket.request.max.bytes``, see :data:`abuse_harness.MAX_REQUEST_BYTES`) and with
the largest counts its schema allows (every array repeated as often as fits, its element a
duplicate naming a topic with data), compression bombs of every codec and a Fetch naming one
partition tens of thousands of times, sent to a 1-controller + 1-broker cluster. Each must
leave the node's memory bounded, its event loop answering ApiVersions within 1 s, the broker
unfenced, the quorum without an election, and a producer/consumer beside it unharmed: every
case asserts every bound. ``-s`` prints each case's figures (RSS growth and worst ApiVersions
per node, fencing, elections, the good client's rounds)."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import NamedTuple

import pytest
from abuse_harness import (
    ANSWER_WITHIN_S,
    MAX_REQUEST_BYTES,
    STALL_LIMIT_S,
    Abused,
    Figures,
    quorum_epoch,
    read_answer,
    recover,
    send_and_measure,
    start_capped,
)
from abuse_requests import (
    BOMB_CODECS,
    BOMB_EXPANDED,
    Shape,
    Target,
    bomb_batch,
    check_bomb,
    frame_of,
    largest_request,
)
from broker_harness import (
    PROPERTIES,
    create_topic,
    partition_state,
    wait_for,
    wait_for_brokers,
)

from pykraft.ids import ZERO_UUID, TopicPartition
from pykraft.messages.kafka import produce_request as produce
from pykraft.messages.kafka.api_versions_request import ApiVersionsRequest
from pykraft.messages.kafka.fetch_request import FetchPartition, FetchRequest, FetchTopic
from pykraft.protocol.api_versions import ranges_from_response
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.codec import decode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import encode_batch
from pykraft.tools.get_offsets_tool import list_offsets_request
from pykraft.tools.local_cluster import HOST, LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ABUSED_TOPIC, STEADY_TOPIC = "abuse", "steady"
GROUP = "abuse-group"
#: The brokers' heartbeat interval: a longer stall may bring a fence (see ``recover``).
HEARTBEAT_S = int(PROPERTIES["broker.heartbeat.interval.ms"]) / 1000
#: Kafka's ``fetch.max.bytes`` default: the most one Fetch answer may carry.
FETCH_MAX_BYTES = 55 << 20
#: The abused topic's data: enough that reading it once per duplicate is ruinous.
DATA_BATCHES, DATA_VALUE = 4, 256 << 10


class Case(NamedTuple):
    shape: Shape = Shape()


def _absent(target: Target) -> str:
    return f"{target.topic}-absent"


def _records(target: Target) -> bytes:
    return encode_batch(0, [(None, b"abuse")], partition_leader_epoch=-1,
                        timestamp=1_700_000_000_000)


#: A DeleteTopics of the abused topic would delete it for the cases after it (named, with
#: the zero topic id: none).
_DELETE_ABSENT = Shape({"name": _absent, "topic_id": lambda t: ZERO_UUID})
_PRODUCE = Shape({"records": _records, "acks": lambda t: -1})

BROKER_CASES: Mapping[ApiKey, Case] = {
    ApiKey.PRODUCE: Case(_PRODUCE),
    ApiKey.FETCH: Case(),
    ApiKey.LIST_OFFSETS: Case(),
    ApiKey.METADATA: Case(),
    ApiKey.OFFSET_COMMIT: Case(),
    ApiKey.OFFSET_FETCH: Case(),
    ApiKey.FIND_COORDINATOR: Case(),
    ApiKey.JOIN_GROUP: Case(),
    ApiKey.HEARTBEAT: Case(),
    ApiKey.LEAVE_GROUP: Case(),
    ApiKey.SYNC_GROUP: Case(),
    ApiKey.DESCRIBE_GROUPS: Case(),
    ApiKey.LIST_GROUPS: Case(),
    ApiKey.SASL_HANDSHAKE: Case(),
    ApiKey.API_VERSIONS: Case(),
    ApiKey.CREATE_TOPICS: Case(),
    ApiKey.DELETE_TOPICS: Case(_DELETE_ABSENT),
    ApiKey.DELETE_RECORDS: Case(),
    ApiKey.INIT_PRODUCER_ID: Case(),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: Case(),
    ApiKey.DESCRIBE_ACLS: Case(),
    ApiKey.CREATE_ACLS: Case(),
    ApiKey.DELETE_ACLS: Case(),
    ApiKey.DESCRIBE_CONFIGS: Case(),
    ApiKey.ALTER_CONFIGS: Case(),
    ApiKey.ALTER_REPLICA_LOG_DIRS: Case(),
    ApiKey.DESCRIBE_LOG_DIRS: Case(),
    ApiKey.SASL_AUTHENTICATE: Case(),
    ApiKey.CREATE_PARTITIONS: Case(),
    ApiKey.CREATE_DELEGATION_TOKEN: Case(),
    ApiKey.RENEW_DELEGATION_TOKEN: Case(),
    ApiKey.EXPIRE_DELEGATION_TOKEN: Case(),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: Case(),
    ApiKey.DELETE_GROUPS: Case(),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: Case(),
    ApiKey.OFFSET_DELETE: Case(),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: Case(),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: Case(),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: Case(),
    ApiKey.ALTER_CLIENT_QUOTAS: Case(),
    ApiKey.DESCRIBE_QUORUM: Case(),
    ApiKey.UPDATE_FEATURES: Case(),
    ApiKey.DESCRIBE_CLUSTER: Case(),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: Case(),
    ApiKey.LIST_CONFIG_RESOURCES: Case(),
    ApiKey.UNREGISTER_BROKER: Case(),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: Case(),
    ApiKey.CONSUMER_GROUP_DESCRIBE: Case(),
    ApiKey.ADD_RAFT_VOTER: Case(),
    ApiKey.REMOVE_RAFT_VOTER: Case(),
    ApiKey.WRITE_TXN_MARKERS: Case(),
    ApiKey.DESCRIBE_PRODUCERS: Case(),
    ApiKey.ADD_PARTITIONS_TO_TXN: Case(),
    ApiKey.ADD_OFFSETS_TO_TXN: Case(),
    ApiKey.END_TXN: Case(),
    ApiKey.DESCRIBE_TRANSACTIONS: Case(),
    ApiKey.LIST_TRANSACTIONS: Case(),
    ApiKey.TXN_OFFSET_COMMIT: Case(),
    ApiKey.ELECT_LEADERS: Case(),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: Case(),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: Case(),
}

CONTROLLER_CASES: Mapping[ApiKey, Case] = {
    ApiKey.FETCH: Case(),
    ApiKey.SASL_HANDSHAKE: Case(),
    ApiKey.API_VERSIONS: Case(),
    ApiKey.CREATE_TOPICS: Case(),
    ApiKey.DELETE_TOPICS: Case(_DELETE_ABSENT),
    ApiKey.DESCRIBE_ACLS: Case(),
    ApiKey.CREATE_ACLS: Case(),
    ApiKey.DELETE_ACLS: Case(),
    ApiKey.DESCRIBE_CONFIGS: Case(),
    ApiKey.ALTER_CONFIGS: Case(),
    ApiKey.SASL_AUTHENTICATE: Case(),
    ApiKey.CREATE_PARTITIONS: Case(),
    ApiKey.CREATE_DELEGATION_TOKEN: Case(),
    ApiKey.RENEW_DELEGATION_TOKEN: Case(),
    ApiKey.EXPIRE_DELEGATION_TOKEN: Case(),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: Case(),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: Case(),
    ApiKey.ALTER_CLIENT_QUOTAS: Case(),
    ApiKey.VOTE: Case(),
    ApiKey.BEGIN_QUORUM_EPOCH: Case(),
    ApiKey.END_QUORUM_EPOCH: Case(),
    ApiKey.DESCRIBE_QUORUM: Case(),
    ApiKey.ALTER_PARTITION: Case(),
    ApiKey.UPDATE_FEATURES: Case(),
    ApiKey.FETCH_SNAPSHOT: Case(),
    ApiKey.DESCRIBE_CLUSTER: Case(),
    ApiKey.BROKER_REGISTRATION: Case(),
    ApiKey.BROKER_HEARTBEAT: Case(),
    ApiKey.UNREGISTER_BROKER: Case(),
    ApiKey.ALLOCATE_PRODUCER_IDS: Case(),
    ApiKey.CONTROLLER_REGISTRATION: Case(),
    ApiKey.ADD_RAFT_VOTER: Case(),
    ApiKey.REMOVE_RAFT_VOTER: Case(),
    ApiKey.UPDATE_RAFT_VOTER: Case(),
    ApiKey.ENVELOPE: Case(),
    ApiKey.ASSIGN_REPLICAS_TO_DIRS: Case(),
    ApiKey.ELECT_LEADERS: Case(),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: Case(),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: Case(),
}

CASES: Mapping[Listener, Mapping[ApiKey, Case]] = {
    Listener.BROKER: BROKER_CASES, Listener.CONTROLLER: CONTROLLER_CASES}


def _params() -> Iterator[object]:
    for listener, cases in CASES.items():
        for key, case in cases.items():
            yield pytest.param(listener, key, case, id=f"{listener.value}-{key.name}")


class Cluster(NamedTuple):
    abused: Abused
    target: Target


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """1 controller + 1 broker (3 s broker sessions: a stall that long fences), each under
    an address-space cap; the abused topic holds 1 MiB in partition 0."""
    properties = {**PROPERTIES, "socket.request.max.bytes": str(MAX_REQUEST_BYTES),
                  "offsets.topic.replication.factor": "1"}
    made = LocalCluster.create(tmp_path_factory.mktemp("abuse") / "cluster", 1, properties,
                               brokers=1)
    try:
        for node_id in made.nodes:
            start_capped(made, node_id)
        made.wait_listening(made.controllers)
        wait_for_brokers(made, 1)
        ids = {}
        for topic in (ABUSED_TOPIC, STEADY_TOPIC):
            ids[topic] = _created(made, topic)
        abused = Abused(made, ids[STEADY_TOPIC])
        for _ in range(DATA_BATCHES):
            assert _produce(abused, ids[ABUSED_TOPIC], encode_batch(
                0, [(None, bytes(DATA_VALUE))], partition_leader_epoch=-1,
                timestamp=int(time.time() * 1000))) == ErrorCode.NONE
        yield Cluster(abused, Target(made.cluster_id, ABUSED_TOPIC, ids[ABUSED_TOPIC], GROUP))
    finally:
        for node_id in made.nodes:
            made.kill(node_id)


def _created(cluster: LocalCluster, topic: str) -> uuid.UUID:
    """Create a 1-partition topic; its id once the broker knows it."""
    create_topic(cluster.bootstrap_servers, topic, 1)
    state = wait_for(f"{topic} known to the broker",
                     lambda: partition_state(cluster, cluster.brokers[0], topic))
    topic_id: uuid.UUID = state.topic_id
    return topic_id


def _produce_frame(topic_id: uuid.UUID, batch: bytes) -> bytes:
    frame: bytes = frame_of(ApiKey.PRODUCE, 13, produce.ProduceRequest(
        acks=-1, timeout_ms=10_000,
        topic_data=(produce.TopicProduceData(topic_id=topic_id, partition_data=(
            produce.PartitionProduceData(index=0, records=batch),)),)))
    return frame


def _produce(abused: Abused, topic_id: uuid.UUID, batch: bytes) -> ErrorCode:
    """Produce ``batch`` to partition 0 (acks=all): the partition's error code."""
    with socket.create_connection((HOST, abused.port(abused.broker)),
                                  timeout=ANSWER_WITHIN_S) as sock:
        sock.sendall(_produce_frame(topic_id, batch))
        answer = read_answer(sock)
    assert answer is not None, "the broker closed the connection on a produce"
    body = decode_response(ApiKey.PRODUCE, 13, answer).body
    return ErrorCode(body.responses[0].partition_responses[0].error_code)


def _measured(cluster: Cluster, node_id: int, frame: bytes, case: str) -> Figures:
    """Send one abusive frame, restore a healthy cluster whatever it did, print and return
    the figures; fails on every invariant it broke."""
    abused = cluster.abused
    recover(abused)
    epoch = quorum_epoch(abused)
    figures = Figures(case)
    try:
        figures = send_and_measure(abused, node_id, frame, case)
    finally:
        stalled = figures.stall_s.get(abused.broker, STALL_LIMIT_S) > HEARTBEAT_S
        recover(abused, time.monotonic() if stalled or figures.fenced else None,
                stuck=not figures.outcome.startswith(("answered", "closed")))
    print(figures.line())
    violations = figures.violations(epoch)
    assert not violations, f"{case}: {'; '.join(violations)}"
    return figures


def _advertised(port: int) -> set[int]:
    frame = frame_of(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(
        client_software_name="abuse", client_software_version="1"))
    with socket.create_connection((HOST, port), timeout=ANSWER_WITHIN_S) as sock:
        sock.sendall(frame)
        answer = read_answer(sock)
    assert answer is not None
    return set(ranges_from_response(decode_response(ApiKey.API_VERSIONS, 3, answer).body))


@pytest.mark.parametrize("listener", list(Listener))
def test_every_advertised_api_has_a_case(cluster: Cluster, listener: Listener) -> None:
    abused = cluster.abused
    node_id = abused.broker if listener is Listener.BROKER else abused.controller
    assert set(CASES[listener]) == _advertised(abused.port(node_id))


@pytest.mark.parametrize(("listener", "api_key", "case"), list(_params()))
def test_largest_request(cluster: Cluster, listener: Listener, api_key: ApiKey,
                         case: Case) -> None:
    abused = cluster.abused
    node_id = abused.broker if listener is Listener.BROKER else abused.controller
    abuse = largest_request(api_key, case.shape, cluster.target, MAX_REQUEST_BYTES)
    _measured(cluster, node_id, abuse.frame, f"{listener.value} {abuse.describe()}")


def _bomb_size(codec: str) -> int:
    """The most a bomb of ``codec`` may expand to while its Produce fits the frame limit:
    :data:`BOMB_EXPANDED`, or less for snappy, whose format caps the ratio near 21:1."""
    size: int = BOMB_EXPANDED
    while len(bomb_batch(codec, size, 0)) > MAX_REQUEST_BYTES - 1024:
        size //= 2
    return size


def _bomb(codec: str, timestamp: int | None = None, last_later: int = 0) -> tuple[bytes, str]:
    """A bomb batch of ``codec`` (checked to expand as told by the broker's own codec), its
    last record ``last_later`` ms after the others."""
    expanded = _bomb_size(codec)
    batch = bomb_batch(codec, expanded, int(time.time() * 1000) if timestamp is None
                       else timestamp, last_later)
    assert check_bomb(codec, batch) >= expanded
    return batch, f"{codec} bomb ({len(batch)} bytes expanding to {expanded >> 20} MiB)"


@pytest.mark.parametrize("codec", list(BOMB_CODECS))
def test_compression_bomb(cluster: Cluster, codec: str) -> None:
    """A small Produce whose batch expands to hundreds of MB (a valid batch: Kafka takes it,
    reading it as a stream)."""
    batch, case = _bomb(codec)
    topic_id = _created(cluster.abused.cluster, f"bomb-{codec}")
    _measured(cluster, cluster.abused.broker, _produce_frame(topic_id, batch), case)


@pytest.mark.parametrize("codec", list(BOMB_CODECS))
def test_list_offsets_by_timestamp_over_a_bomb(cluster: Cluster, codec: str) -> None:
    """A 31-byte ListOffsets by timestamp over a partition holding a bomb, for its last
    record, 1 ms later than the others: batches are skipped by their headers and the time
    index, and the bomb's records, expanded to find it (gzip's 256 MiB held the broker's
    loop 0.7-1.4 s), are walked on a thread of its own."""
    now = int(time.time() * 1000)
    batch, case = _bomb(codec, now, last_later=1)
    topic = f"timestamps-{codec}"
    assert _produce(cluster.abused, _created(cluster.abused.cluster, topic), batch) == (
        ErrorCode.NONE)
    recover(cluster.abused, time.monotonic())  # a fence the bomb's stall may bring
    figures = _measured(cluster, cluster.abused.broker, frame_of(
        ApiKey.LIST_OFFSETS, 11, list_offsets_request([TopicPartition(topic, 0)], now + 1)),
        f"ListOffsets by its last record's timestamp over a {case}")
    (listed,) = decode_response(ApiKey.LIST_OFFSETS, 11, figures.answer).body.topics
    assert (listed.partitions[0].error_code, listed.partitions[0].offset) == (
        ErrorCode.NONE, _bomb_size(codec) // (1 << 20) - 1)


def test_duplicate_partition_fetch(cluster: Cluster) -> None:
    """One partition holding 1 MiB named as many times as one Fetch holds: read once, the
    answer within ``fetch.max.bytes``."""
    one = FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)

    def request(count: int) -> bytes:
        frame: bytes = frame_of(ApiKey.FETCH, 18, FetchRequest(
            max_wait_ms=0, min_bytes=1, max_bytes=2**31 - 1,
            topics=(FetchTopic(topic_id=cluster.target.topic_id,
                               partitions=(one,) * count),)))
        return frame
    count = (MAX_REQUEST_BYTES - len(request(0))) // (len(request(1)) - len(request(0)))
    frame = request(count)
    assert len(frame) - 4 <= MAX_REQUEST_BYTES
    figures = _measured(cluster, cluster.abused.broker, frame,
                        f"Fetch of partition 0 named {count} times")
    assert len(figures.answer) <= FETCH_MAX_BYTES + MAX_REQUEST_BYTES
    answer = decode_response(ApiKey.FETCH, 18, figures.answer).body
    assert answer.error_code == ErrorCode.NONE
    read = [p for topic in answer.responses for p in topic.partitions
            if p.error_code == ErrorCode.NONE and p.records]
    assert read, "the partition's data is read at least once"
