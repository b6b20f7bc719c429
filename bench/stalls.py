"""The longest stall one expensive request causes on a node (issue 24, defect 5).

A local cluster of 3 controllers and 1 broker (``LocalCluster``, Kafka's default timeouts:
``broker.session.timeout.ms`` 9 s, ``controller.quorum.fetch.timeout.ms`` 2 s) is sent each
request below in turn; meanwhile a probe process per node (the active controller and the
broker) sends ApiVersions every 50 ms over its own connection
(:class:`pykraft.testing.stalls.StallProbe`). Per case: the worst ApiVersions round trip on
each node, how long the request took, whether the metadata quorum's leader epoch changed
(an election) and how often the controller fenced the broker.

* ``create-topics-validate``: CreateTopics of ``--topics`` topics (1 partition each),
  validate_only, sent to the broker, which forwards it to the active controller;
* ``create-partitions``: CreateTopics of one topic with ``--partitions`` partitions, until
  the broker serves them all (ListOffsets answered for each: it creates their logs after
  its image shows them);
* ``delete-partitions``: DeleteTopics of a topic of ``--partitions`` partitions (created and
  served before the probes start), until the broker no longer knows any of them;
* ``offset-commit``: an OffsetCommit of ``--commit-partitions`` partitions (one topic) to
  the group coordinator (the broker), generation -1 (a simple commit);
* ``produce``: ``--produce-requests`` Produce requests at once, each of ``--produce-mb``
  one-MB batches (one per partition of a 100-partition topic), acks=1;
* ``bomb-<codec>`` and ``record-<codec>`` (gzip, snappy, lz4, zstd): one batch within
  max.message.bytes holding NUL bytes only (a bomb: an invalid record) or one valid record
  of them, as many as the codec packs in 1 MiB (:data:`EXPANSION`), acks=1.

    .venv/bin/python bench/stalls.py [--cases produce,offset-commit] [--json]

Figures (issue 24, defect 5), the longest stall before (main at cc5c565) -> after, one run
each back to back on a shared 2-core machine (load average 7-9 from other work):

=========================  ===========================================  ===================
case                       before                                       after
=========================  ===========================================  ===================
5,000 topics validated     controller 5.29 s, 5 elections, 16.2 s,      0.22 s, none, 3.2 s,
                           every topic NOT_CONTROLLER                   every topic NONE
150 partitions             broker 1.84 s                                1.32 s
1,000 partitions           broker 10.27 s, fenced once, the retried     6.96 s, not fenced,
                           forward answered TOPIC_ALREADY_EXISTS        NONE
OffsetCommit, 100,000      broker 6.11 s, COORDINATOR_NOT_AVAILABLE     0.27 s, UNKNOWN_
                                                                        SERVER_ERROR (too
                                                                        large for a batch);
                                                                        0.24 s with main's
                                                                        existence check (1
                                                                        partition NONE, the
                                                                        rest UNKNOWN_TOPIC_
                                                                        OR_PARTITION)
5 x 100 MB Produce         broker 2.85 s, 15.8 s                        0.26 s, 6.3 s
=========================  ===========================================  ===================

The partition cases until every partition is served (ListOffsets answered for each), before
(main at b633047, whose broker created each new log, three fsyncs, on its loop and renamed
each deleted one with an fsync) -> after (logs created and removed on the broker's disk
worker thread, deletions' renames synced once), back to back, load average 6-7:

=========================  ===========================================  ===================
case                       before                                       after
=========================  ===========================================  ===================
1,000 partitions           broker 19.54 s, fenced once, 22.0 s          0.04 s, none, 7.5 s
2,000 partitions           broker 29.55 s, fenced once, 32.5 s          0.15 s, none, 11.0 s
1,000 partitions deleted   broker 3.32 s, 3.5 s                         0.14 s, 0.22 s
=========================  ===========================================  ===================

The compressed cases (before: b633047, after: a costly batch validated on the validation
thread), the broker's longest stall, one run each on the same loaded machine; every bomb
was refused INVALID_RECORD and every record accepted, before and after:

=========================  ===========================================  ===================
case                       before                                       after
=========================  ===========================================  ===================
record-gzip (1 GiB)        7.61 s, fenced once, 7.7 s                   0.21 s, none, 6.9 s
record-lz4 (128 MiB)       0.30 s                                       0.01 s
record-zstd (1 GiB)        0.26 s                                       0.01 s
record-snappy (16 MiB)     0.05 s                                       0.01 s
bombs (any codec)          0.06 s at most                               0.01 s
=========================  ===========================================  ===================
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from peers.base import BenchError
from peers.pykraft_metadata import call, connect, create_topics_request, created_or_exists
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
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
from pykraft.protocol.apis import Listener
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import encode_batch
from pykraft.records.compression import CODECS as CODEC_IDS
from pykraft.testing.compression_bombs import MiB, batch, bomb, huge_record
from pykraft.testing.stalls import StallProbe, fences_of, latest_offsets, serves_all
from pykraft.tools.admin_client import admin_settings
from pykraft.tools.broker_clients import BrokerClients
from pykraft.tools.group_admin import GroupClient
from pykraft.tools.local_cluster import HOST, LocalCluster
from pykraft.tools.quorum_tool import QuorumInfo, describe_quorum, parse_bootstrap

PROPERTIES = {"pykraft.shutdown.timeout.ms": "3000"}
PRODUCE_TOPIC = "stall-produce"
PRODUCE_PARTITIONS = 100
COMMIT_TOPIC = "stall-commit"
BATCH_BYTES = 1_000_000
SETUP_TIMEOUT_S = 120.0
#: NUL bytes each codec packs within max.message.bytes (1 MiB): a 1019 KiB gzip batch
#: holds 1 GiB.
EXPANSION = {"gzip": 1024 * MiB, "snappy": 16 * MiB, "lz4": 128 * MiB, "zstd": 1024 * MiB}
COMPRESSED_CASES = tuple(f"{kind}-{codec}" for codec in EXPANSION for kind in ("bomb", "record"))
CASES = ("create-topics-validate", "create-partitions", "delete-partitions", "offset-commit",
         "produce", *COMPRESSED_CASES)


@dataclass
class CaseResult:
    case: str
    request_s: float
    controller_stall_s: float
    broker_stall_s: float
    elections: int
    broker_fences: int
    outcome: str


class StallBench:
    """The cluster and the requests; see the module docstring."""

    def __init__(self, cluster: LocalCluster, options: argparse.Namespace) -> None:
        self.cluster = cluster
        self.options = options
        self.broker = cluster.brokers[0]
        self.produce_topic_id = uuid.UUID(int=0)  # Kafka's "no id" until setup's Metadata
        self.doomed_topic: str | None = None

    @property
    def broker_address(self) -> str:
        return self.cluster.nodes[self.broker].address

    async def quorum(self) -> QuorumInfo:
        return await describe_quorum(*parse_bootstrap(self.cluster.bootstrap_controllers),
                                     timeout_s=SETUP_TIMEOUT_S)

    async def broker_call(self, body: Any) -> Any:
        connection = await connect(self.broker_address, Listener.BROKER)
        try:
            return await call(connection, body)
        finally:
            connection.close()

    async def setup(self) -> None:
        """The topics the cases write to, once the broker serves."""
        for topic, partitions in ((PRODUCE_TOPIC, PRODUCE_PARTITIONS), (COMMIT_TOPIC, 1)):
            async def created(topic: str = topic, partitions: int = partitions) -> bool:
                return created_or_exists(await self.broker_call(
                    create_topics_request([topic], partitions, 1)))
            await _until(created, f"cannot create {topic}", 0.5)
        metadata = await self.broker_call(MetadataRequest(
            topics=(MetadataRequestTopic(name=PRODUCE_TOPIC),),
            allow_auto_topic_creation=False, include_topic_authorized_operations=False))
        self.produce_topic_id = metadata.topics[0].topic_id  # Produce v13 names topics by id
        async with BrokerClients(admin_settings(self.broker_address)) as brokers:
            await GroupClient(brokers, timeout_s=SETUP_TIMEOUT_S).coordinator("stall-group")

    async def create_topics_validate(self) -> str:
        body = create_topics_request([f"stall-validate-{i}" for i in range(self.options.topics)],
                                     1, 1)
        answer = await self.broker_call(dataclasses.replace(body, validate_only=True))
        return _codes(t.error_code for t in answer.topics)

    async def create_partitions(self) -> str:
        """Until the broker serves every partition: it creates their logs after it applies
        the image, which may come after the controller's answer."""
        name = f"stall-partitions-{time.monotonic_ns()}"
        answer = await self.broker_call(create_topics_request([name], self.options.partitions,
                                                              1))
        await self.until(name, serves_all)
        return _codes(t.error_code for t in answer.topics)

    async def create_doomed_topic(self) -> None:
        """The topic ``delete-partitions`` deletes, served before the probes start."""
        self.doomed_topic = f"stall-doomed-{time.monotonic_ns()}"
        await self.broker_call(create_topics_request([self.doomed_topic],
                                                     self.options.partitions, 1))
        await self.until(self.doomed_topic, serves_all)

    async def delete_partitions(self) -> str:
        assert self.doomed_topic is not None
        answer = await self.broker_call(DeleteTopicsRequest(
            topics=(DeleteTopicState(name=self.doomed_topic,
                                     topic_id=uuid.UUID(int=0)),),
            timeout_ms=30000))
        await self.until(self.doomed_topic, lambda offsets: all(
            p.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            for t in offsets.topics for p in t.partitions))
        return _codes(t.error_code for t in answer.responses)

    async def until(self, topic: str, done: Callable[[Any], bool]) -> None:
        """Until the broker's answer to ListOffsets (latest) of every partition of ``topic``
        is ``done``."""
        async def changed() -> bool:
            return done(await self.broker_call(latest_offsets(topic, self.options.partitions)))
        await _until(changed, f"the broker's ListOffsets of {topic} never changed", 0.05)

    async def offset_commit(self) -> str:
        body = OffsetCommitRequest(
            group_id="stall-group", generation_id_or_member_epoch=-1,
            member_id="", group_instance_id=None, topics=(OffsetCommitRequestTopic(
                name=COMMIT_TOPIC, partitions=tuple(OffsetCommitRequestPartition(
                    partition_index=p, committed_offset=1,
                    committed_leader_epoch=-1, committed_metadata="")
                    for p in range(self.options.commit_partitions))),))
        answer = await self.broker_call(body)
        return _codes(p.error_code for t in answer.topics for p in t.partitions)

    async def produce(self) -> str:
        batch = encode_batch(0, [(None, os.urandom(BATCH_BYTES))], partition_leader_epoch=-1,
                             timestamp=int(time.time() * 1000))
        body = ProduceRequest(
            acks=1, timeout_ms=30_000,
            topic_data=(TopicProduceData(topic_id=self.produce_topic_id, partition_data=tuple(
                PartitionProduceData(index=p % PRODUCE_PARTITIONS, records=batch)
                for p in range(self.options.produce_mb))),))
        connections = [await connect(self.broker_address, Listener.BROKER)
                       for _ in range(self.options.produce_requests)]
        try:  # connected first: encoding 100 MB holds this client's loop too
            answers = await asyncio.gather(*(call(c, body) for c in connections))
        finally:
            for connection in connections:
                connection.close()
        return _codes(p.error_code for a in answers for t in a.responses
                      for p in t.partition_responses)

    async def compressed(self, records: bytes) -> str:
        """A ``bomb-<codec>`` or ``record-<codec>`` case: its batch (see
        :func:`compressed_batch`) to partition 0."""
        answer = await self.broker_call(ProduceRequest(
            acks=1, timeout_ms=30_000,
            topic_data=(TopicProduceData(topic_id=self.produce_topic_id, partition_data=(
                PartitionProduceData(index=0, records=records),)),)))
        return _codes(p.error_code for t in answer.responses for p in t.partition_responses)

    async def measure(self, case: str, run: Callable[[], Awaitable[str]]) -> CaseResult:
        before = await self.quorum()
        fences = fences_of(self.cluster.nodes[before.leader_id].data, self.broker)
        leader = self.cluster.nodes[before.leader_id]
        broker = self.cluster.nodes[self.broker]
        with StallProbe(HOST, leader.port, Listener.CONTROLLER) as on_c, \
                StallProbe(HOST, broker.port, Listener.BROKER) as on_b:
            started = time.monotonic()
            try:
                outcome = await run()
            except BenchError as exc:
                outcome = str(exc)
            took = time.monotonic() - started
            on_controller, on_broker = on_c.stop(), on_b.stop()
        after = await self.quorum()
        return CaseResult(case, round(took, 2), round(on_controller.worst_s, 2),
                          round(on_broker.worst_s, 2), after.leader_epoch - before.leader_epoch,
                          fences_of(self.cluster.nodes[after.leader_id].data, self.broker)
                          - fences, outcome)


async def _until(attempt: Callable[[], Awaitable[bool]], failure: str, pause_s: float) -> None:
    """``attempt()`` every ``pause_s`` until it holds, for up to :data:`SETUP_TIMEOUT_S` (a
    broker holding its loop does not even take a connection: that attempt just fails)."""
    deadline = time.monotonic() + SETUP_TIMEOUT_S
    while True:
        try:
            if await attempt():
                return
        except BenchError:
            pass
        if time.monotonic() > deadline:
            raise BenchError(failure)
        await asyncio.sleep(pause_s)


def compressed_batch(case: str) -> bytes:
    """A ``bomb-<codec>`` or ``record-<codec>`` case's batch (see the module docstring),
    built before the case runs: compressing a gigabyte takes this process seconds."""
    kind, codec_name = case.split("-")
    codec, zeros = CODEC_IDS[codec_name], EXPANSION[codec_name]
    head, tail = huge_record(zeros) if kind == "record" else (b"", b"")
    return batch(codec, bomb(codec, head, zeros, tail), timestamp=int(time.time() * 1000))


def _codes(codes: Any) -> str:
    counts: dict[int, int] = {}
    for code in codes:
        counts[int(code)] = counts.get(int(code), 0) + 1
    return ", ".join(f"error {code} x{count}" for code, count in sorted(counts.items()))


async def run_cases(bench: StallBench, cases: list[str]) -> list[CaseResult]:
    await bench.setup()
    runs = {"create-topics-validate": bench.create_topics_validate,
            "create-partitions": bench.create_partitions,
            "delete-partitions": bench.delete_partitions,
            "offset-commit": bench.offset_commit, "produce": bench.produce}
    runs.update({case: functools.partial(bench.compressed, compressed_batch(case))
                 for case in COMPRESSED_CASES if case in cases})
    results = []
    for case in cases:
        if case == "delete-partitions":
            await bench.create_doomed_topic()
        result = await bench.measure(case, runs[case])
        print(json.dumps(asdict(result)), file=sys.stderr, flush=True)
        results.append(result)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--topics", type=int, default=5000)
    parser.add_argument("--partitions", type=int, default=150)
    parser.add_argument("--commit-partitions", type=int, default=100_000)
    parser.add_argument("--produce-requests", type=int, default=5)
    parser.add_argument("--produce-mb", type=int, default=100)
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    cases = options.cases.split(",")
    if unknown := set(cases) - set(CASES):
        parser.error(f"unknown cases {sorted(unknown)}; choose from {CASES}")
    with tempfile.TemporaryDirectory() as scratch:
        cluster = LocalCluster.create((options.dir or Path(scratch)) / "stalls", 3, PROPERTIES,
                                      brokers=1)
        try:
            cluster.start_all()
            results = asyncio.run(run_cases(StallBench(cluster, options), cases))
        finally:
            cluster.stop_all()
    if options.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
        return
    print(f"{'case':<24} {'request s':>9} {'ctrl stall s':>12} {'broker stall s':>14} "
          f"{'elections':>9} {'fences':>6}  outcome")
    for r in results:
        print(f"{r.case:<24} {r.request_s:>9} {r.controller_stall_s:>12} "
              f"{r.broker_stall_s:>14} {r.elections:>9} {r.broker_fences:>6}  {r.outcome}")


if __name__ == "__main__":
    main()
