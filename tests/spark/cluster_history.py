"""A generated cluster history, written with pykraft's own APIs, for what the recorded one
(tests/fixtures/recorded_history) does not show: a lagging replica, a broker fenced by a
controlled shutdown, a snapshot of a running log, a fourth voter added, and exact record
values (configs included) for the row tests.

It is the metadata log a 3-controller cluster with brokers 101-103 would hold after topics
were created, a broker was fenced and unfenced, partition leaders moved, and controller
leadership changed twice. Every node directory gets the same log (node 3 a shorter copy,
as a lagging follower), plus bootstrap.checkpoint and one snapshot. ``EXPECTED`` lists the
facts the tests check the analytics against.

Run ``python tests/spark/cluster_history.py DIR`` to write one for a demo.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pykraft.records import control as ctl
from pykraft.records import metadata as md
from pykraft.records.batch import encode_batch
from pykraft.storage.bootstrap import write_bootstrap_checkpoint
from pykraft.storage.metadata_log import MetadataLog
from pykraft.storage.snapshot_files import SnapshotId, write_snapshot

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
CONTROLLERS = (1, 2, 3)
BROKERS = (101, 102, 103)
ORDERS = uuid.UUID(int=0x0A)
PAYMENTS = uuid.UUID(int=0x0B)
MV_LEVEL = 19  # metadata.version 3.7-IV4


@dataclass(frozen=True, slots=True)
class Expected:
    topics: tuple[str, ...] = ("orders", "payments")
    removed_topics: tuple[str, ...] = ("payments",)
    partitions: int = 5  # orders 3 + payments 2
    controller_leaders: tuple[tuple[int, int], ...] = ((1, 1), (2, 2), (3, 3))  # (epoch, id)
    fenced_brokers: tuple[int, ...] = (101, 102)
    orders_0_leaders: tuple[int, ...] = (101, 102, 101)  # created, failover, preferred
    voter_sets: tuple[tuple[int, ...], ...] = ((1, 2, 3), (1, 2, 3, 4))


EXPECTED = Expected()


class _Writer:
    """Appends one batch per call with a clock that advances a second per batch."""

    def __init__(self) -> None:
        self.batches: list[bytes] = []
        self.offset = 0
        self.epoch = 1
        self.now = START_MS
        self.marks: dict[str, int] = {}

    def mark(self, event: str) -> None:
        """Remember the time of the batch just written, as the event's known time."""
        self.marks[event] = self.now

    def data(self, *records: object, gap_ms: int = 1000) -> None:
        values = [(None, md.encode_metadata_record(r, _version(r))) for r in records]
        self._append(values, control=False, gap_ms=gap_ms)

    def control(self, *messages: object, gap_ms: int = 1000) -> None:
        self._append([ctl.encode_control(m) for m in messages], control=True, gap_ms=gap_ms)

    def new_epoch(self, leader: int, voters: tuple[int, ...], gap_ms: int = 5000) -> None:
        self.epoch += 1
        self.leader_change(leader, voters, gap_ms)

    def leader_change(self, leader: int, voters: tuple[int, ...], gap_ms: int = 1000) -> None:
        voter_list = tuple(ctl.LeaderChangeVoter(v) for v in voters)
        granting = tuple(ctl.LeaderChangeVoter(v) for v in voters[: len(voters) // 2 + 1])
        self.control(ctl.LeaderChangeMessage(0, leader, voter_list, granting), gap_ms=gap_ms)

    def _append(self, records: Sequence[tuple[bytes | None, bytes | None]], *, control: bool,
                gap_ms: int) -> None:
        self.now += gap_ms
        self.batches.append(encode_batch(self.offset, records, partition_leader_epoch=self.epoch,
                                         timestamp=self.now, control=control))
        self.offset += len(records)


def _version(record: object) -> int:
    """The versions a 3.7 controller writes (metadata.version 3.7-IV4)."""
    if isinstance(record, md.RegisterBrokerRecord):
        return 3
    if isinstance(record, md.PartitionRecord | md.PartitionChangeRecord
                  | md.BrokerRegistrationChangeRecord):
        return 1
    return 0


def _voters_record(ids: tuple[int, ...]) -> ctl.VotersRecord:
    feature = ctl.KRaftVersionFeature(0, 1)
    return ctl.VotersRecord(0, tuple(
        ctl.Voter(v, uuid.UUID(int=0x100 + v), (ctl.VoterEndpoint("CONTROLLER", "127.0.0.1",
                                                                  9090 + v),), feature)
        for v in ids))


def _register(broker: int, epoch: int) -> md.RegisterBrokerRecord:
    return md.RegisterBrokerRecord(
        broker_id=broker, is_migrating_zk_broker=False, incarnation_id=uuid.UUID(int=broker),
        broker_epoch=epoch, end_points=(md.BrokerEndpoint("PLAINTEXT", "127.0.0.1",
                                                          9000 + broker, 0),),
        features=(), rack=None, fenced=True, in_controlled_shutdown=False, log_dirs=())


def _partition(topic: uuid.UUID, index: int, replicas: list[int]) -> md.PartitionRecord:
    return md.PartitionRecord(
        partition_id=index, topic_id=topic, replicas=tuple(replicas), isr=tuple(replicas),
        removing_replicas=(), adding_replicas=(), leader=replicas[0], leader_recovery_state=0,
        leader_epoch=0, partition_epoch=0, directories=tuple(uuid.UUID(int=0) for _ in replicas))


def _change(topic: uuid.UUID, index: int, *, leader: int = -2,
            isr: tuple[int, ...] | None = None) -> md.PartitionChangeRecord:
    return md.PartitionChangeRecord(partition_id=index, topic_id=topic, isr=isr, leader=leader)


def _created_topics() -> tuple[list[object], list[object]]:
    """The TopicRecord and PartitionRecords of orders (3 partitions) and payments (2)."""
    rotation = [list(BROKERS[i:] + BROKERS[:i]) for i in range(3)]
    return ([md.TopicRecord("orders", ORDERS),
             *(_partition(ORDERS, i, rotation[i]) for i in range(3))],
            [md.TopicRecord("payments", PAYMENTS),
             *(_partition(PAYMENTS, i, rotation[i + 1]) for i in range(2))])


def build() -> list[bytes]:
    """The batches of the whole history, in log order."""
    return _write().batches


def event_times() -> dict[str, int]:
    """When (epoch ms, the batch's timestamp) each event of the history was written:
    ``epoch-N`` (its first LeaderChange), ``registered``, ``unfenced``, ``fenced-101``,
    ``unfenced-101``, ``shutdown-102``, ``unfenced-102``, ``end`` (the last record)."""
    return _write().marks


def _write() -> _Writer:
    w = _Writer()
    w.leader_change(1, CONTROLLERS)
    w.mark("epoch-1")
    w.control(ctl.KRaftVersionRecord(0, 1), _voters_record(CONTROLLERS))
    w.data(md.BeginTransactionRecord("Bootstrap records"),
           md.FeatureLevelRecord("metadata.version", MV_LEVEL), md.EndTransactionRecord())
    registered = {b: w.offset for b in BROKERS}
    w.data(*(_register(b, registered[b]) for b in BROKERS))
    w.mark("registered")
    w.data(md.NoOpRecord(), gap_ms=500)
    w.data(*(md.UnfenceBrokerRecord(b, registered[b]) for b in BROKERS))
    w.mark("unfenced")
    orders, payments = _created_topics()
    w.data(*orders, md.ConfigRecord(2, "orders", "retention.ms", "86400000"))
    w.data(*payments)
    for _ in range(3):
        w.data(md.NoOpRecord(), gap_ms=500)
    # broker 101 stops heartbeating: fenced, its leaderships move away
    w.data(md.FenceBrokerRecord(101, registered[101]),
           _change(ORDERS, 0, leader=102, isr=(102, 103)),
           _change(PAYMENTS, 1, isr=(103, 102)), gap_ms=9000)
    w.mark("fenced-101")
    w.new_epoch(2, CONTROLLERS)  # controller 1 fails over to 2
    w.mark("epoch-2")
    w.data(md.NoOpRecord())
    w.data(md.BrokerRegistrationChangeRecord(broker_id=101, broker_epoch=registered[101],
                                             fenced=-1), gap_ms=20_000)
    w.mark("unfenced-101")
    w.data(_change(ORDERS, 0, isr=(102, 103, 101)), _change(PAYMENTS, 1, isr=(103, 102, 101)))
    w.data(_change(ORDERS, 0, leader=101))  # preferred leader election
    w.new_epoch(3, CONTROLLERS)
    w.mark("epoch-3")
    w.control(ctl.KRaftVersionRecord(0, 1), _voters_record((*CONTROLLERS, 4)))
    w.leader_change(3, (*CONTROLLERS, 4))
    w.mark("voters-4")
    w.data(md.RemoveTopicRecord(PAYMENTS))
    # broker 102 restarts: controlled shutdown fences it, re-registration unfences it
    w.data(md.BrokerRegistrationChangeRecord(broker_id=102, broker_epoch=registered[102],
                                             fenced=1, in_controlled_shutdown=1),
           _change(ORDERS, 1, leader=103, isr=(103, 101)))
    w.mark("shutdown-102")
    w.data(_register(102, w.offset), gap_ms=15_000)
    w.data(md.UnfenceBrokerRecord(102, w.offset - 1))
    w.mark("unfenced-102")
    w.data(md.NoOpRecord())
    w.mark("end")
    return w


def write_node(log_dir: Path, batches: list[bytes], *, segment_bytes: int = 1024) -> None:
    """One node's metadata log directory: segments, a snapshot and bootstrap.checkpoint."""
    partition_dir = log_dir / "__cluster_metadata-0"
    log_dir.mkdir(parents=True, exist_ok=True)
    write_bootstrap_checkpoint(log_dir, [md.FeatureLevelRecord("metadata.version", MV_LEVEL)],
                               clock=lambda: START_MS)
    with MetadataLog.open(partition_dir, segment_bytes=segment_bytes) as log:
        for batch in batches:
            log.append(batch)
        log.flush()
        end = log.log_end_offset
        epoch = log.last_epoch or 0
    state = [md.encode_metadata_record(md.FeatureLevelRecord("metadata.version", MV_LEVEL), 0),
             md.encode_metadata_record(md.TopicRecord("orders", ORDERS))]
    write_snapshot(partition_dir, SnapshotId(end, epoch), last_contained_timestamp=START_MS,
                   batches=[state], clock=lambda: START_MS)


def write_cluster(base: Path) -> Path:
    """``base/node-N/data`` for N in 1..3, as ``pykraft cluster up`` lays a cluster out."""
    batches = build()
    for node in CONTROLLERS:
        kept = batches if node != 3 else batches[: len(batches) - 4]
        write_node(base / f"node-{node}" / "data", kept)
    return base


STALE_NODE = 1
USER_PARTITIONS = ("orders-0", "__consumer_offsets-7")
USER_BASE_OFFSET = 5_000_000  # far beyond the metadata log: must not make node 1 "furthest"


def write_stale_cluster(base: Path) -> Path:
    """The issue's trap: node 1 is a broker-like log dir (``meta.properties``, a user
    partition and a consumer-offsets partition whose offsets dwarf the metadata log's)
    whose metadata log stops 5 batches early; nodes 2 and 3 hold the whole history."""
    batches = build()
    for node in CONTROLLERS:
        kept = batches if node != STALE_NODE else batches[: len(batches) - 5]
        write_node(base / f"node-{node}" / "data", kept)
    log_dir = base / f"node-{STALE_NODE}" / "data"
    (log_dir / "meta.properties").write_text(
        f"version=1\nnode.id={STALE_NODE}\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n")
    for name in USER_PARTITIONS:
        partition = log_dir / name
        partition.mkdir()
        user = encode_batch(USER_BASE_OFFSET, [(b"k%d" % i, b"not metadata") for i in range(50)],
                            partition_leader_epoch=0, timestamp=START_MS + 3_600_000)
        (partition / f"{USER_BASE_OFFSET:020d}.log").write_bytes(user)
    return base


TRUNCATED_AT = 23  # a segment base after both topics' creation, before payments' removal


def write_truncated_node(log_dir: Path) -> Path:
    """A node whose metadata log was cleaned after a snapshot at offset 23, as Kafka's
    metadata retention does: the segments below it deleted, the snapshot holding the topics
    and partitions created before it (the same records as the log's)."""
    batches = build()
    write_node(log_dir, batches)
    partition_dir = log_dir / "__cluster_metadata-0"
    for path in partition_dir.iterdir():
        if path.stem.isdigit() and int(path.stem) < TRUNCATED_AT:
            path.unlink()
    assert (partition_dir / f"{TRUNCATED_AT:020d}.log").exists()
    orders, payments = _created_topics()
    state = [md.FeatureLevelRecord("metadata.version", MV_LEVEL), *orders, *payments]
    write_snapshot(partition_dir, SnapshotId(TRUNCATED_AT, 2), last_contained_timestamp=START_MS,
                   batches=[[md.encode_metadata_record(r, _version(r)) for r in state]],
                   clock=lambda: START_MS)
    return log_dir


if __name__ == "__main__":
    print(write_cluster(Path(sys.argv[1])))
