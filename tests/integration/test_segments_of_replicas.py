"""``kafka-segments`` planning and reading over the log dirs of a real 3-broker cluster
(RF=3, stopped cleanly): the high watermark checkpoint the brokers write bounds each
partition, and three replicas' dirs give each produced record exactly once (from the
replica with the highest HW: a follower's may lag)."""

from __future__ import annotations

import sys
from pathlib import Path

from confluent_kafka import Producer

from pykraft.ids import TopicPartition
from pykraft.spark.segment_plan import ReadSpec, TopicFilter, plan
from pykraft.spark.segment_rows import read_segment
from pykraft.storage.offset_checkpoints import REPLICATION_OFFSET_CHECKPOINT, read_offset_checkpoint

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import PROPERTIES, create_topic, running_cluster
from process_harness import wait_for

RECORDS = 300
CHECKPOINTING = {**PROPERTIES, "replica.high.watermark.checkpoint.interval.ms": "200"}


def checkpointed(dirs: tuple[Path, ...]) -> bool | None:
    """Whether the brokers' checkpoints hold every record below a high watermark (the
    highest of each partition's replicas), as a clean shutdown would also leave them."""
    best = [max(read_offset_checkpoint(d / REPLICATION_OFFSET_CHECKPOINT).get(
        TopicPartition("events", p), 0) for d in dirs) for p in (0, 1)]
    return True if sum(best) == RECORDS else None


def test_three_replicas_give_each_record_once(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "c", CHECKPOINTING, brokers=3) as cluster:
        create_topic(cluster.bootstrap_servers, "events", 2, 3)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                             "linger.ms": 5, "compression.type": "lz4"})
        for number in range(RECORDS):
            producer.produce("events", b"v%d" % number, b"k%d" % number,
                             partition=number % 2)
        assert producer.flush(60) == 0
        data = tuple(cluster.nodes[b].data for b in cluster.brokers)
        wait_for("the high watermarks checkpointed", lambda: checkpointed(data), 60)
        cluster.stop_all()
    dirs = tuple(map(str, data))
    spec = ReadSpec(dirs, TopicFilter(("events",)))
    rows = [row for segment in plan(spec)
            for row in read_segment(segment, include_headers=False)]
    assert sorted((row[3], row[4]) for row in rows) == sorted(
        {(row[3], row[4]) for row in rows})  # each offset once
    assert sorted(row[1] for row in rows) == sorted(b"v%d" % n for n in range(RECORDS))
    for one in dirs:  # a follower's HW may lag the leader's: a prefix of each partition
        alone = [r for s in plan(ReadSpec((one,), spec.topics))
                 for r in read_segment(s, include_headers=False)]
        for partition in (0, 1):
            offsets = [r[4] for r in alone if r[3] == partition]
            assert offsets == sorted(r[4] for r in rows if r[3] == partition)[:len(offsets)]
