"""Produce against a replica manager on real directories: acks 0, 1 and all, duplicates,
per-partition errors with KIP-951 leader hints and record errors."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from replica_fixtures import broker, client_batch, request, topic, until, with_records

from pykraft.broker.produce import AcksZeroFailedError, ProduceHandler
from pykraft.broker.replica_manager import ReplicaManager
from pykraft.image.image import MetadataImage
from pykraft.log.log_manager import LogManager
from pykraft.messages.kafka import produce_request as req
from pykraft.messages.kafka.produce_response import ProduceResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_response, encode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import ConfigRecord, PartitionChangeRecord
from pykraft.storage.log_config import LogConfig

ME = 1
T1 = uuid.UUID(int=7)


@pytest.fixture
def replicas(tmp_path: Path) -> ReplicaManager:
    logs = LogManager([tmp_path], LogConfig())
    logs.startup(0)
    manager = ReplicaManager(ME, logs, {})
    manager.apply_image(with_records(
        MetadataImage(), broker(ME, 9092), broker(2, 9093),
        *topic("t", T1, (ME,), (2, ME), (ME, 2)),
        *topic("compacted", uuid.UUID(int=8), (ME,)),
        ConfigRecord(resource_type=2, resource_name="compacted", name="cleanup.policy",
                     value="compact"),
        *topic("appended", uuid.UUID(int=9), (ME,)),
        ConfigRecord(resource_type=2, resource_name="appended", name="message.timestamp.type",
                     value="LogAppendTime")), 0)
    return manager


def produce(replicas: ReplicaManager, body: req.ProduceRequest) -> list[tuple[int, str, int]]:
    response = asyncio.run(ProduceHandler(replicas, lambda: 5_000, "PLAINTEXT").handle(
        body, api_version=12))
    assert response is not None
    return [(p.index, ErrorCode(p.error_code).name, p.base_offset)
            for t in response.responses for p in t.partition_responses]


def test_acks_1_appends_and_a_retry_gets_the_original_offset(
        replicas: ReplicaManager) -> None:
    batch = client_batch([b"a", b"b"], producer_id=3, epoch=0, sequence=0)
    assert produce(replicas, request({0: batch})) == [(0, "NONE", 0)]
    assert produce(replicas, request({0: batch})) == [(0, "NONE", 0)]
    assert produce(replicas, request({0: client_batch([b"c"])})) == [(0, "NONE", 2)]


def test_acks_all_with_the_leader_alone_in_the_isr_answers_at_once(
        replicas: ReplicaManager) -> None:
    assert produce(replicas, request({0: client_batch([b"a"])}, acks=-1)) == [(0, "NONE", 0)]


def test_acks_all_times_out_while_followers_do_not_replicate(
        replicas: ReplicaManager) -> None:
    answer = produce(replicas, request({2: client_batch([b"a"])}, acks=-1, timeout_ms=50))
    assert answer == [(2, "REQUEST_TIMED_OUT", 0)]  # the batch is in the log all the same
    assert replicas.partition_for("t", 2).log_end_offset == 1


def test_acks_all_completes_once_the_high_watermark_passes(replicas: ReplicaManager) -> None:
    handler = ProduceHandler(replicas, lambda: 5_000, "PLAINTEXT")

    async def run() -> object:
        waiting = asyncio.create_task(handler.handle(
            request({2: client_batch([b"a"])}, acks=-1), api_version=12))
        await until(lambda: replicas.partition_for("t", 2).log_end_offset == 1, "appended")
        assert not waiting.done()  # the append happened; the answer waits
        replicas.apply_image(with_records(replicas.image, PartitionChangeRecord(
            partition_id=2, topic_id=T1, isr=(ME,))), 6_000)
        return await asyncio.wait_for(waiting, 10)

    response = asyncio.run(run())
    (part,) = response.responses[0].partition_responses  # type: ignore[attr-defined]
    assert (part.error_code, part.base_offset) == (ErrorCode.NONE, 0)


def test_acks_all_answers_not_leader_when_leadership_moves_while_waiting(
        replicas: ReplicaManager) -> None:
    handler = ProduceHandler(replicas, lambda: 5_000, "PLAINTEXT")

    async def run() -> object:
        waiting = asyncio.create_task(handler.handle(
            request({2: client_batch([b"a"])}, acks=-1), api_version=12))
        await until(lambda: replicas.partition_for("t", 2).log_end_offset == 1, "appended")
        replicas.apply_image(with_records(replicas.image, PartitionChangeRecord(
            partition_id=2, topic_id=T1, leader=2)), 6_000)
        return await asyncio.wait_for(waiting, 10)

    response = asyncio.run(run())
    (part,) = response.responses[0].partition_responses  # type: ignore[attr-defined]
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (2, 1)


def test_not_leader_names_the_leader_and_its_endpoint(replicas: ReplicaManager) -> None:
    response = asyncio.run(ProduceHandler(replicas, lambda: 5_000, "PLAINTEXT").handle(
        request({1: client_batch([b"a"])}), api_version=12))
    assert response is not None
    (part,) = response.responses[0].partition_responses
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (2, 0)
    assert [(e.node_id, e.host, e.port, e.rack) for e in response.node_endpoints] == [
        (2, "127.0.0.1", 9093, "r1")]


def test_acks_0_answers_nothing_and_a_failure_closes_the_connection(
        replicas: ReplicaManager) -> None:
    handler = ProduceHandler(replicas, lambda: 5_000, "PLAINTEXT")
    assert asyncio.run(handler.handle(request({0: client_batch([b"a"])}, acks=0),
                                      api_version=12)) is None
    assert replicas.partition_for("t", 0).log_end_offset == 1
    with pytest.raises(AcksZeroFailedError, match="t-1: NOT_LEADER_OR_FOLLOWER"):
        asyncio.run(handler.handle(request({1: client_batch([b"a"])}, acks=0), api_version=12))


def test_request_level_refusals(replicas: ReplicaManager) -> None:
    batch = client_batch([b"a"])
    assert produce(replicas, request({0: batch}, acks=2)) == [(0, "INVALID_REQUIRED_ACKS", -1)]
    assert produce(replicas, request({0: batch}, name="nope")) == [
        (0, "UNKNOWN_TOPIC_OR_PARTITION", -1)]
    assert replicas.partition_for("t", 0).log_end_offset == 0


def test_transactional_records_need_a_transactional_id_the_session_may_write(
        replicas: ReplicaManager) -> None:
    """Kafka's ``hasTransactionalRecords`` check: every partition refused, nothing written."""
    handler = ProduceHandler(replicas, lambda: 5_000, "PLAINTEXT")
    batch = client_batch([b"a"], producer_id=7, epoch=0, sequence=0, transactional=True)

    def codes(body: Any, **kwargs: Any) -> list[int]:
        response = asyncio.run(handler.handle(body, api_version=12, **kwargs))
        assert response is not None
        return [p.error_code for t in response.responses for p in t.partition_responses]

    refused = [ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED]
    assert codes(request({0: batch})) == refused  # no transactional id
    assert codes(request({0: batch}, transactional_id="tx"),
                 transactional_id_allowed=False) == refused
    assert replicas.partition_for("t", 0).log_end_offset == 0
    # a transactional id with plain records is no transactional produce
    assert codes(request({0: client_batch([b"b"])}, transactional_id="tx"),
                 transactional_id_allowed=False) == [ErrorCode.NONE]
    assert codes(request({0: batch}, transactional_id="tx")) == [ErrorCode.NONE]
    part = replicas.partition_for("t", 0)
    assert part.log_end_offset == 2 and part.last_stable_offset == 1  # the open transaction


def test_a_null_key_on_a_compacted_topic_gets_record_errors(replicas: ReplicaManager) -> None:
    response = asyncio.run(ProduceHandler(replicas, lambda: 5_000, "PLAINTEXT").handle(
        request({0: client_batch([b"a", b"b"], key=None)}, name="compacted"), api_version=12))
    assert response is not None
    (part,) = response.responses[0].partition_responses
    assert (part.error_code, part.base_offset, part.log_start_offset) == (
        ErrorCode.INVALID_RECORD, -1, -1)
    assert [e.batch_index for e in part.record_errors] == [0, 1]
    assert part.error_message is not None


def test_v13_names_topics_by_id_and_answers_with_the_id(replicas: ReplicaManager) -> None:
    """KIP-516 (Kafka 4.1): an id the image lacks is UNKNOWN_TOPIC_ID for each partition."""
    unknown = uuid.UUID(int=99)
    body = req.ProduceRequest(
        acks=1, timeout_ms=30_000,
        topic_data=tuple(req.TopicProduceData(topic_id=topic_id, partition_data=(
            req.PartitionProduceData(index=0, records=client_batch([b"a"])),
        )) for topic_id in (T1, unknown)))
    response = asyncio.run(ProduceHandler(replicas, lambda: 5_000, "PLAINTEXT").handle(
        body, api_version=13))
    assert isinstance(response, ProduceResponse)
    assert [(t.topic_id, [(p.index, ErrorCode(p.error_code).name, p.base_offset)
                          for p in t.partition_responses]) for t in response.responses] == [
        (T1, [(0, "NONE", 0)]), (unknown, [(0, "UNKNOWN_TOPIC_ID", -1)])]


def test_log_append_time_in_milliseconds_is_answered_at_every_version(
        replicas: ReplicaManager) -> None:
    """A LogAppendTime topic's answer carries the broker's time to the millisecond at
    every version (a datetime conversion once failed the answer after the append)."""
    now_ms = 1_764_375_000_123
    for version in range(3, 13):
        response = asyncio.run(ProduceHandler(replicas, lambda: now_ms, "PLAINTEXT").handle(
            request({0: client_batch([b"a", b"b"])}, name="appended"), api_version=version))
        assert response is not None
        decoded = decode_response(ApiKey.PRODUCE, version,
                                  encode_response(7, ApiKey.PRODUCE, version, response)).body
        (answered,) = decoded.responses[0].partition_responses
        assert (answered.error_code, answered.log_append_time_ms) == (ErrorCode.NONE, now_ms)


@pytest.mark.parametrize("version", [3, 9, 10, 12])
def test_the_answer_is_the_generated_class_at_the_callers_version(
        replicas: ReplicaManager, version: int) -> None:
    """The handler answers the one generated class, encodable at the version it came in
    (no conversion): the KIP-951 leader hints only from v10, the versions that have them."""
    response = asyncio.run(ProduceHandler(replicas, lambda: 5_000, "PLAINTEXT").handle(
        request({1: client_batch([b"a"])}), api_version=version))
    assert isinstance(response, ProduceResponse)
    decoded = decode_response(ApiKey.PRODUCE, version,
                              encode_response(7, ApiKey.PRODUCE, version, response)).body
    (part,) = decoded.responses[0].partition_responses
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    hinted = version >= 10
    assert part.current_leader.leader_id == (2 if hinted else -1)
    assert len(decoded.node_endpoints) == (1 if hinted else 0)
