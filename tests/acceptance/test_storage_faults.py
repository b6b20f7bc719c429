"""Storage faults on real processes: bytes rotting in a leader's segment fail only the
partition they are in, and a leader whose log directory fills up leaves the cluster so that
another replica leads, as Kafka's log-directory failure handling does."""

from __future__ import annotations

import datetime
import uuid
from pathlib import Path
from typing import Any

from broker_harness import (
    PROPERTIES,
    broker_call,
    create_topic,
    partition_state,
    produce_one,
    running_cluster,
    wait_for,
    wait_for_brokers,
)
from kio.schema.fetch.v18 import request as fetch
from kio.static.primitive import i32, i32Timedelta, i64

from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import iter_batches
from pykraft.tools.local_cluster import LocalCluster


def _topic_id(cluster: LocalCluster, broker: int, topic: str) -> uuid.UUID:
    def led() -> uuid.UUID | None:
        state = partition_state(cluster, broker, topic)
        return state.topic_id if state is not None and state.leader == broker else None

    topic_id: uuid.UUID = wait_for(f"{topic} led by {broker}", led)
    return topic_id


def _fetch(cluster: LocalCluster, broker: int, offsets: dict[uuid.UUID, int]) -> Any:
    """A consumer's Fetch of partition 0 of each topic (by id), from the given offsets."""
    return broker_call(cluster, broker, fetch.FetchRequest(
        max_wait=i32Timedelta.parse(datetime.timedelta(0)), min_bytes=i32(0), topics=tuple(
            fetch.FetchTopic(topic_id=topic_id, partitions=(fetch.FetchPartition(
                partition=i32(0), fetch_offset=i64(offset), partition_max_bytes=i32(1 << 20)),))
            for topic_id, offset in offsets.items()), forgotten_topics_data=()))


def test_rotten_bytes_in_a_segment_fail_only_their_partition(tmp_path: Path) -> None:
    """16 bytes flipped in a cleanly stopped leader's segment, in a batch before its last
    index entry (a restart after a clean shutdown reads from there on only, Kafka's too):
    a Fetch naming that partition and a healthy one answers CORRUPT_MESSAGE for the first
    and the healthy one's records, instead of failing the whole request."""
    with running_cluster(tmp_path, PROPERTIES) as cluster:
        (broker,) = cluster.brokers
        ids = {}
        for topic in ("rot", "sound"):
            create_topic(cluster.bootstrap_servers, topic, 1,
                         configs={"index.interval.bytes": "1"})  # every batch indexed
            ids[topic] = _topic_id(cluster, broker, topic)
            for value in (b"a", b"b", b"c"):
                assert produce_one(cluster, broker, ids[topic], b"k", value, acks=-1) == 0
        assert cluster.stop(broker) == 0
        segment = next((cluster.nodes[broker].data / "rot-0").glob("*.log"))
        data = bytearray(segment.read_bytes())
        second = next(iter_batches(bytes(data))).header.size
        data[second:second + 16] = bytes(b ^ 0xFF for b in data[second:second + 16])
        segment.write_bytes(bytes(data))
        cluster.start(broker)
        wait_for_brokers(cluster, 1)

        answer = _fetch(cluster, broker, {ids["rot"]: 1, ids["sound"]: 0})
        assert answer.error_code == ErrorCode.none
        parts = {t.topic_id: t.partitions[0] for t in answer.responses}
        assert parts[ids["rot"]].error_code == ErrorCode.corrupt_message
        sound = parts[ids["sound"]]
        assert sound.error_code == ErrorCode.none
        assert [b.header.base_offset for b in iter_batches(bytes(sound.records))] == [0, 1, 2]
