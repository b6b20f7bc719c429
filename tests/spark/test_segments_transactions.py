"""``kafka-segments`` with ``isolationLevel=read_committed`` on a real broker's files: a
committed transaction is read, an aborted one (its records spread over segment rolls,
another producer's transaction interleaved) is not, and nothing from the first record of
a transaction still open on, while ``read_uncommitted`` reads every record. Spark itself is
not needed: the plan and the rows are what its reader runs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykraft.errors import ConfigError
from pykraft.spark.segment_plan import ReadSpec, TopicFilter, plan
from pykraft.spark.segment_rows import read_segment
from pykraft.spark.segment_source import parse_options
from pykraft.storage.offset_checkpoints import (
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
)
from pykraft.tools.local_cluster import LocalCluster

sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import PROPERTIES, create_topic, running_cluster
from process_harness import wait_for
from txn_clients import TIMEOUT_S, producer

TOPIC = "spark-txn"
PROPS = {**PROPERTIES, "transaction.state.log.num.partitions": "1",
         "offsets.topic.num.partitions": "1",
         "replica.high.watermark.checkpoint.interval.ms": "200"}


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One broker's data directory holding ``spark-txn-0``: short segments, committed,
    aborted and open transactions of three producers and plain records between them."""
    import confluent_kafka

    with running_cluster(tmp_path_factory.mktemp("segments-txn") / "cluster", PROPS,
                         brokers=1) as cluster:
        create_topic(cluster.bootstrap_servers, TOPIC, 1,
                     configs={"segment.ms": "20"})
        write_history(cluster, confluent_kafka)
        data = cluster.nodes[next(iter(cluster.brokers))].data
        end = _log_end(data)
        until_checkpointed(data, end)
        yield data


def write_history(cluster: LocalCluster, kafka: Any) -> None:
    plain = kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    kept, dropped, still_open = (producer(cluster, name) for name in ("kept", "dropped", "open"))
    kept.begin_transaction()
    dropped.begin_transaction()
    for i in range(30):  # segments roll every 20 ms: inside the transactions
        kept.produce(TOPIC, b"kept-%03d" % i + b"." * 100, partition=0)
        dropped.produce(TOPIC, b"dropped-%03d" % i + b"." * 100, partition=0)
        kept.flush(TIMEOUT_S)
        dropped.flush(TIMEOUT_S)
    dropped.abort_transaction(TIMEOUT_S)
    kept.commit_transaction(TIMEOUT_S)
    plain.produce(TOPIC, b"plain-before", partition=0)
    plain.flush(TIMEOUT_S)
    still_open.begin_transaction()
    still_open.produce(TOPIC, b"open-000", partition=0)
    still_open.flush(TIMEOUT_S)
    plain.produce(TOPIC, b"plain-after", partition=0)
    plain.flush(TIMEOUT_S)


def _log_end(data: Path) -> int:
    from pykraft.records.batch import iter_batches

    last = sorted((data / f"{TOPIC}-0").glob("*.log"))[-1]
    return max(b.last_offset + 1 for b in iter_batches(last.read_bytes()))


def until_checkpointed(data: Path, end: int) -> None:
    """Until the broker's checkpoint file (another process's) holds the high watermark ``end``."""

    def checkpointed() -> bool | None:
        offsets = read_offset_checkpoint(data / REPLICATION_OFFSET_CHECKPOINT)
        return any(tp.topic == TOPIC and hw == end for tp, hw in offsets.items()) or None

    wait_for(f"{TOPIC}-0's high watermark {end} in the checkpoint", checkpointed, TIMEOUT_S)


def values(log_dir: Path, read_committed: bool) -> list[bytes]:
    spec = ReadSpec((str(log_dir),), TopicFilter((TOPIC,)), read_committed=read_committed)
    tasks = plan(spec)
    if read_committed:  # an aborted transaction began in an earlier segment than this one
        assert any(first < task.base_offset for task in tasks for _, first, _ in task.aborted)
    return [row[1] for task in tasks for row in read_segment(task, include_headers=False)]


def test_read_committed_skips_aborted_records_and_stops_at_the_open_transaction(
        log_dir: Path) -> None:
    committed = [v.split(b".")[0] for v in values(log_dir, read_committed=True)]
    assert committed == [b"kept-%03d" % i for i in range(30)] + [b"plain-before"]


def test_read_uncommitted_reads_every_record(log_dir: Path) -> None:
    every = [v.split(b".")[0] for v in values(log_dir, read_committed=False)]
    assert sorted(every) == sorted(
        [b"kept-%03d" % i for i in range(30)] + [b"dropped-%03d" % i for i in range(30)]
        + [b"plain-before", b"open-000", b"plain-after"])


def test_the_isolation_option() -> None:
    spec = parse_options({"path": "/x", "isolationLevel": "READ_COMMITTED"})
    assert spec.read_committed
    assert not parse_options({"path": "/x"}).read_committed
    with pytest.raises(ConfigError, match="isolationLevel must be"):
        parse_options({"path": "/x", "isolationLevel": "serializable"})
    with pytest.raises(ConfigError, match="committedOnly=false"):
        parse_options({"path": "/x", "isolationLevel": "read_committed",
                       "committedOnly": "false"})
