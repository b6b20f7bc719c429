"""Resource abuse against a real broker process: compression bombs of every codec, a valid
record expanding to 1 GiB and ListOffsets by timestamp over it, and a Fetch naming one
partition hundreds of times. The broker's peak RSS (``VmHWM``, reset through
``clear_refs`` before each step) must stay bounded, and the broker unfenced.

Before the fix, a 32 KB zstd batch peaked a broker at 2.16 GB, ListOffsets over the 1 GiB
record re-expanded it each time and a 28 KB Fetch was answered with 954 MB.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import pytest
from broker_harness import (
    broker_call,
    create_topic,
    fenced_brokers,
    one_broker_cluster,
    partition_state,
    wait_for,
)

from pykraft.messages.kafka import fetch_request as fetch
from pykraft.messages.kafka import produce_request as produce
from pykraft.messages.kafka.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from pykraft.messages.kafka.list_offsets_response import ListOffsetsResponse
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import encode_batch
from pykraft.records.compression import GZIP, LZ4, SNAPPY, ZSTD
from pykraft.testing.compression_bombs import NOW, MiB, batch, bomb, huge_record
from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "abuse"
GROWTH = 256 * MiB  # the most any one step may add to the broker's resident memory
#: NUL bytes per codec within max.message.bytes (1 MiB) compressed: each codec's ratio
EXPANSION = {GZIP: 512 * MiB, SNAPPY: 16 * MiB, LZ4: 128 * MiB, ZSTD: 1024 * MiB}
DUPLICATES = 850  # a Fetch naming partition 0 this many times (28 KB at v12, 48 KB at v18)
T = TypeVar("T")


def _rss_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for pid {pid}")


def _measured(pid: int, step: str, growth: dict[str, int], action: Callable[[], T]) -> T:
    """``action()``, noting in ``growth`` how far the broker's peak RSS rose above its RSS
    while it ran."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
    before = _rss_kib(pid, "VmRSS")
    result = action()
    growth[step] = (_rss_kib(pid, "VmHWM") - before) * 1024
    print(f"{step}: peak RSS +{growth[step] / MiB:.1f} MiB")  # the closing note's figures
    return result


def _produce(cluster: LocalCluster, broker: int, topic_id: uuid.UUID, records: bytes) -> int:
    answer = broker_call(cluster, broker, produce.ProduceRequest(
        acks=1, timeout_ms=9_000,
        topic_data=(produce.TopicProduceData(topic_id=topic_id, partition_data=(
            produce.PartitionProduceData(index=0, records=records),)),)))
    return int(answer.responses[0].partition_responses[0].error_code)


def _offset_at(cluster: LocalCluster, broker: int, timestamp: int) -> int:
    answer = broker_call(cluster, broker, ListOffsetsRequest(
        replica_id=-1, topics=(ListOffsetsTopic(name=TOPIC, partitions=(ListOffsetsPartition(
            partition_index=0, current_leader_epoch=-1, timestamp=timestamp),)),)))
    assert isinstance(answer, ListOffsetsResponse)
    return answer.topics[0].partitions[0].offset


def _fetch_duplicates(cluster: LocalCluster, broker: int, topic_id: uuid.UUID) -> list[int]:
    """The record bytes of each partition answered to one Fetch naming partition 0
    :data:`DUPLICATES` times, each up to 1 MiB, and no overall limit (2 GiB)."""
    part = fetch.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=MiB)
    answer = broker_call(cluster, broker, fetch.FetchRequest(
        max_wait_ms=0, min_bytes=1, max_bytes=(1 << 31) - 1,
        topics=(fetch.FetchTopic(topic_id=topic_id, partitions=(part,) * DUPLICATES),)))
    return [len(p.records or b"") for t in answer.responses for p in t.partitions]


def test_bombs_and_amplified_fetches_leave_the_broker_bounded(tmp_path: Path) -> None:
    with one_broker_cluster(tmp_path) as cluster:
        (broker,) = cluster.brokers
        pid = cluster.pids[broker]
        create_topic(cluster.nodes[broker].address, TOPIC, 1)
        topic_id = wait_for(f"{TOPIC} led", lambda: partition_state(cluster, broker, TOPIC)
                            ).topic_id
        growth: dict[str, int] = {}
        for codec, zeros in EXPANSION.items():
            records = batch(codec, bomb(codec, b"", zeros))
            step = f"bomb of codec {codec} ({len(records) // 1024} KiB)"
            assert _measured(pid, step, growth, partial(
                _produce, cluster, broker, topic_id, records)) == ErrorCode.INVALID_RECORD

        head, tail = huge_record(1024 * MiB)
        valid = batch(ZSTD, bomb(ZSTD, head, 1024 * MiB, tail), timestamp=NOW)
        assert _measured(pid, "1 GiB record produced", growth, partial(
            _produce, cluster, broker, topic_id, valid)) == ErrorCode.NONE
        assert _measured(pid, "ListOffsets by timestamp", growth, partial(
            _offset_at, cluster, broker, NOW)) == 0

        for _ in range(16):  # about 1 MiB to read after the bomb
            assert _produce(cluster, broker, topic_id, encode_batch(
                0, [(None, os.urandom(64 * 1024))], partition_leader_epoch=-1,
                timestamp=NOW)) == ErrorCode.NONE
        answered = _measured(pid, "duplicate-partition Fetch", growth, partial(
            _fetch_duplicates, cluster, broker, topic_id))
        assert len(answered) == 1 and 0 < answered[0] <= 2 * MiB

        assert fenced_brokers(cluster, broker) == {broker: False}
        assert {step: size for step, size in growth.items() if size > GROWTH} == {}
