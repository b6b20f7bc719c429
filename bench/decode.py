"""Time per inbound request of :func:`pykraft.protocol.codec.decode_request` on typical frames.

Usage: ``.venv/bin/python bench/decode.py [--repeat 5]``

Why: every request a listener receives is decoded once before it is routed; this measures
that cost per frame (best of ``--repeat`` timeit runs, as ``python -m timeit`` reports it).
It uses only the codec's public API, so the same script times an older checkout when run
with ``PYTHONPATH=<old checkout>/src``.
"""

from __future__ import annotations

import argparse
import datetime
import timeit
import uuid

from kio.schema.create_topics.v7.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.fetch.v13.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from pykraft.protocol.codec import RequestHeader, decode_request, encode_request

_MS = datetime.timedelta(milliseconds=500)
_METADATA_TOPIC_ID = uuid.UUID(int=1)


def _metadata_v12() -> bytes:
    topics = tuple(MetadataRequestTopic(topic_id=None, name=TopicName(f"t{i}")) for i in range(3))
    body = MetadataRequest(
        topics=topics, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    return encode_request(RequestHeader(3, 12, 7, "bench"), body)


def _fetch_v13_raft() -> bytes:
    """A follower's Raft Fetch of ``__cluster_metadata``: one partition, cluster id tag."""
    partition = FetchPartition(
        partition=i32(0),
        current_leader_epoch=i32(4),
        fetch_offset=i64(123_456),
        last_fetched_epoch=i32(4),
        log_start_offset=i64(-1),
        partition_max_bytes=i32(0),
    )
    body = FetchRequest(
        cluster_id="MkU3OEVBNTcwNTJENDM2Qk",
        replica_id=BrokerId(2),
        max_wait=i32Timedelta.parse(_MS),
        min_bytes=i32(0),
        max_bytes=i32(8 * 1024 * 1024),
        isolation_level=i8(0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(FetchTopic(topic_id=_METADATA_TOPIC_ID, partitions=(partition,)),),
        forgotten_topics_data=(),
        rack_id="",
    )
    return encode_request(RequestHeader(1, 13, 8, "raft-client-2"), body)


def _create_topics_v7(count: int) -> bytes:
    configs = (
        CreatableTopicConfig(name="cleanup.policy", value="compact"),
        CreatableTopicConfig(name="retention.ms", value="604800000"),
    )
    topics = tuple(
        CreatableTopic(
            name=TopicName(f"topic-{i:05d}"),
            num_partitions=i32(12),
            replication_factor=i16(3),
            assignments=(),
            configs=configs,
        )
        for i in range(count)
    )
    body = CreateTopicsRequest(
        topics=topics, timeout=i32Timedelta.parse(_MS), validate_only=False
    )
    return encode_request(RequestHeader(19, 7, 9, "adminclient-1"), body)


FRAMES = {
    "Metadata v12 (3 topics)": _metadata_v12,
    "Fetch v13 (raft, 1 partition)": _fetch_v13_raft,
    "CreateTopics v7 (1 topic)": lambda: _create_topics_v7(1),
    "CreateTopics v7 (1000 topics, big)": lambda: _create_topics_v7(1000),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for name, build in FRAMES.items():
        frame = build()
        decode_request(frame)  # compile and cache the readers outside the timing
        timer = timeit.Timer(lambda frame=frame: decode_request(frame))
        number, _ = timer.autorange()
        best = min(timer.repeat(repeat=args.repeat, number=number)) / number
        print(f"{name:<36} {len(frame):>7} bytes  {best * 1e6:>10.2f} us per request")


if __name__ == "__main__":
    main()
