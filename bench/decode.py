"""Time per frame of the request/response codec the listeners run (``pykraft.protocol.codec``,
the generated classes of ``pykraft.messages.kafka``).

Usage: ``.venv/bin/python bench/decode.py [--repeat 5]``

Why: every request a listener receives is decoded once before it is routed, and every answer
encoded once. One run prints, per frame, decode and encode in µs (best of ``--repeat`` timeit
runs, as ``python -m timeit`` reports it). Only the codec's public API is used, so an older
commit is timed with ``PYTHONPATH=<clone at that commit>/src``.
"""

from __future__ import annotations

import argparse
import timeit
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.messages import rpc
from pykraft.messages.kafka.create_topics_request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from pykraft.messages.kafka.fetch_request import FetchPartition, FetchRequest, FetchTopic
from pykraft.messages.kafka.fetch_response import (
    FetchableTopicResponse,
    FetchResponse,
    PartitionData,
)
from pykraft.messages.kafka.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.messages.kafka.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from pykraft.protocol import codec
from pykraft.protocol.header import RequestHeader

_TOPIC_ID = uuid.UUID(int=0x1234)
_RECORDS = bytes(1024)  # the codecs copy records as bytes: their content does not matter


@dataclass(frozen=True)
class Case:
    """A frame and how the codec decodes and re-encodes it."""

    api_key: int
    version: int
    body: object
    response: bool = False

    def frame(self) -> bytes:
        if self.response:
            return rpc.encode_response(5, self.api_key, self.version, self.body)
        return rpc.encode_request(rpc.RequestHeader(self.api_key, self.version, 5, "bench"),
                                  self.body)

    def paths(self, frame: bytes) -> tuple[Callable[[], object], Callable[[], object]]:
        """(decode, encode) of ``frame``."""
        key, version = self.api_key, self.version
        if self.response:
            body = codec.decode_response(key, version, frame).body
            return (lambda: codec.decode_response(key, version, frame),
                    lambda: codec.encode_response(5, key, version, body))
        request = codec.decode_request(frame)
        request_header = RequestHeader(key, version, 5, "bench")
        return (lambda: codec.decode_request(frame),
                lambda: codec.encode_request(request_header, request.body))


def _metadata() -> MetadataRequest:
    return MetadataRequest(
        topics=tuple(MetadataRequestTopic(name=f"t{i}") for i in range(3)),
        allow_auto_topic_creation=False,
    )


def _produce() -> ProduceRequest:
    partition = PartitionProduceData(index=0, records=_RECORDS)
    return ProduceRequest(acks=-1, timeout_ms=30_000,
                          topic_data=(TopicProduceData(name="t", partition_data=(partition,)),))


def _fetch_raft() -> FetchRequest:
    """A follower's Raft Fetch of ``__cluster_metadata``: one partition, cluster id tag."""
    partition = FetchPartition(partition=0, current_leader_epoch=4, fetch_offset=123_456,
                               last_fetched_epoch=4, log_start_offset=-1)
    return FetchRequest(cluster_id="MkU3OEVBNTcwNTJENDM2Qk", replica_id=2, max_wait_ms=500,
                        max_bytes=8 * 1024 * 1024, session_epoch=-1,
                        topics=(FetchTopic(topic_id=_TOPIC_ID, partitions=(partition,)),))


def _fetch_response(partitions: int) -> FetchResponse:
    data = tuple(
        PartitionData(partition_index=i, high_watermark=1000, last_stable_offset=1000,
                      log_start_offset=0, records=_RECORDS)
        for i in range(partitions)
    )
    return FetchResponse(responses=(FetchableTopicResponse(topic_id=_TOPIC_ID, partitions=data),))


def _join_group() -> JoinGroupRequest:
    protocols = tuple(JoinGroupRequestProtocol(name=name, metadata=bytes(40))
                      for name in ("range", "cooperative-sticky"))
    return JoinGroupRequest(group_id="group-1", session_timeout_ms=45_000,
                            rebalance_timeout_ms=300_000, member_id="", protocol_type="consumer",
                            protocols=protocols)


def _create_topics(count: int) -> CreateTopicsRequest:
    configs = (
        CreatableTopicConfig(name="cleanup.policy", value="compact"),
        CreatableTopicConfig(name="retention.ms", value="604800000"),
    )
    topics = tuple(
        CreatableTopic(name=f"topic-{i:05d}", num_partitions=12, replication_factor=3,
                       configs=configs)
        for i in range(count)
    )
    return CreateTopicsRequest(topics=topics, timeout_ms=500)


CASES = {
    "Metadata v12 request (3 topics)": Case(3, 12, _metadata()),
    "Produce v9 request (1 KiB)": Case(0, 9, _produce()),
    "Fetch v13 request (raft, 1 partition)": Case(1, 13, _fetch_raft()),
    "Fetch v13 response (1 partition, 1 KiB)": Case(1, 13, _fetch_response(1), response=True),
    "Fetch v13 response (100 partitions)": Case(1, 13, _fetch_response(100), response=True),
    "JoinGroup v9 request": Case(11, 9, _join_group()),
    "CreateTopics v7 request (1000 topics)": Case(19, 7, _create_topics(1000)),
}


def _best(run: Callable[[], object], repeat: int) -> float:
    """µs per call, best of ``repeat`` autoranged timeit runs."""
    run()  # compile and cache the readers and writers outside the timing
    timer = timeit.Timer(run)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'frame':<42} {'bytes':>7}  {'decode (us)':>11}  {'encode (us)':>11}")
    for name, case in CASES.items():
        frame = case.frame()
        decode, encode = case.paths(frame)
        assert encode() == frame, name  # the listeners' codec writes what messages.rpc wrote
        print(f"{name:<42} {len(frame):>7}  {_best(decode, args.repeat):>11.1f}"
              f"  {_best(encode, args.repeat):>11.1f}")


if __name__ == "__main__":
    main()
