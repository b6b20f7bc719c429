"""What a ``kafka-segments`` read plans: replicas, high watermarks, Spark Kafka options and
clear errors for wrong paths (no Spark session)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pykraft.errors import ConfigError, StorageError
from pykraft.ids import TopicPartition
from pykraft.spark.segment_plan import (
    DataLossError,
    OffsetBounds,
    ReadSpec,
    TopicFilter,
    plan,
)
from pykraft.spark.segment_rows import read_segment
from pykraft.spark.segment_source import parse_options
from pykraft.storage.offset_checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    write_offset_checkpoint,
)
from user_segments import checkpoint_high_watermarks, write_partition

END = 21  # the log end offset of user_segments.write_partition


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three brokers' log directories: ``orders-0`` and ``orders-1`` on all of them with
    high watermarks 21 (b1), 15 (b2) and none (b3: a partition newer than its checkpoint);
    ``audit-0`` on b1 only, and what a reader passes over."""
    root = tmp_path_factory.mktemp("cluster")
    (root / "b1").mkdir()
    write_partition(root / "b1" / "orders-0")
    for broker in ("b1", "b2", "b3"):
        for name in ("orders-0", "orders-1", "audit-0"):
            if not (root / broker / name).exists() and (name != "audit-0" or broker == "b1"):
                shutil.copytree(root / "b1" / "orders-0", root / broker / name)
    shutil.copytree(root / "b1" / "orders-0", root / "b1" / "__cluster_metadata-0")
    shutil.copytree(root / "b1" / "orders-0",
                    root / "b1" / "orders-2.0123456789abcdef0123456789abcdef-delete")
    (root / "b1" / "meta.properties").write_text("node.id=1\n")
    checkpoint_high_watermarks(root / "b1")
    checkpoint_high_watermarks(root / "b2", {"orders-0": 15, "orders-1": 15})
    write_offset_checkpoint(root / "b3" / REPLICATION_OFFSET_CHECKPOINT,
                            {TopicPartition("orders", 0): 15})
    return root


def _offsets(spec: ReadSpec, bounds: OffsetBounds | None = None
             ) -> dict[tuple[str, int], list[int]]:
    out: dict[tuple[str, int], list[int]] = {}
    for segment in plan(spec, bounds or OffsetBounds()):
        out.setdefault((segment.topic, segment.partition), []).extend(
            row[4] for row in read_segment(segment, include_headers=False))
    return out


ALL = [o for o in range(END) if o != 19]  # 19: a transaction marker


def test_one_replica_per_partition_up_to_its_high_watermark(cluster: Path) -> None:
    brokers = [str(cluster / b) for b in ("b1", "b2", "b3")]
    assert _offsets(ReadSpec(tuple(brokers))) == {
        ("audit", 0): ALL, ("orders", 0): ALL, ("orders", 1): ALL}
    tasks = plan(ReadSpec(tuple(brokers)))
    assert {Path(t.path).parts[-3] for t in tasks} == {"b1"}
    assert _offsets(ReadSpec((brokers[1],))) == {
        ("orders", 0): list(range(15)), ("orders", 1): list(range(15))}
    with pytest.raises(StorageError, match=r"orders-1: no high watermark in .*b3/replication-"
                       r"offset-checkpoint .* set committedOnly=false"):
        plan(ReadSpec((brokers[2],)))
    assert _offsets(ReadSpec((brokers[2],), committed_only=False))[("orders", 1)] == ALL


def test_spark_kafka_offsets_and_assign(cluster: Path) -> None:
    b1 = (str(cluster / "b1"),)
    assign = TopicFilter(assign=(TopicPartition("orders", 1),))
    assert _offsets(ReadSpec(b1, assign)) == {("orders", 1): ALL}
    orders = {TopicPartition("orders", 0): 4, TopicPartition("orders", 1): -2}
    ending = {TopicPartition("orders", 0): 13, TopicPartition("orders", 1): 99}
    assert _offsets(ReadSpec(b1, TopicFilter(("orders",)), orders, ending)) == {
        ("orders", 0): list(range(4, 13)), ("orders", 1): ALL}
    with pytest.raises(ConfigError, match=r"must name exactly the partitions read.*orders-1"):
        plan(ReadSpec(b1, TopicFilter(("orders",)), {TopicPartition("orders", 0): 4}))
    with pytest.raises(ConfigError, match="starting offset 9 is after the ending offset 5"):
        plan(ReadSpec(b1, TopicFilter(("orders",)), {
            TopicPartition("orders", 0): 9, TopicPartition("orders", 1): 0}, {
            TopicPartition("orders", 0): 5, TopicPartition("orders", 1): 5}))
    pushed = OffsetBounds().narrowed(10, 13).only([1])
    assert _offsets(ReadSpec(b1, TopicFilter(("orders",))), pushed) == {
        ("orders", 1): [10, 11, 12, 13]}
    assert [t.base_offset for t in plan(ReadSpec(b1, assign), pushed)] == [0, 12]


def test_log_start_offset_and_data_loss(cluster: Path, tmp_path: Path) -> None:
    broker = tmp_path / "b1"
    shutil.copytree(cluster / "b1", broker)
    write_offset_checkpoint(broker / LOG_START_OFFSET_CHECKPOINT, {TopicPartition("audit", 0): 7})
    audit = TopicFilter(("audit",))
    assert _offsets(ReadSpec((str(broker),), audit)) == {("audit", 0): [*range(7, 19), 20]}
    below = {TopicPartition("audit", 0): 2}
    with pytest.raises(DataLossError, match="startingOffsets 2 is below the earliest offset 7"):
        plan(ReadSpec((str(broker),), audit, below))
    lenient = ReadSpec((str(broker),), audit, below, fail_on_data_loss=False)
    assert _offsets(lenient)[("audit", 0)][0] == 7


def test_paths_that_are_not_log_directories(cluster: Path, tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="no such log directory"):
        plan(ReadSpec((str(tmp_path / "missing"),)))
    with pytest.raises(StorageError, match=r"holds no topic partition directories .*not a Kafka"):
        plan(ReadSpec((str(tmp_path),)))
    with pytest.raises(StorageError, match=r"log directories one level down: load those \(.*b1"):
        plan(ReadSpec((str(cluster),)))
    with pytest.raises(StorageError, match=r"not found in .*: payments \(topic partitions "
                       r"there: audit-0, orders-0, orders-1\)"):
        plan(ReadSpec((str(cluster / "b1"),), TopicFilter(("orders", "payments"))))
    with pytest.raises(StorageError, match=r"not found in .*: orders-7"):
        plan(ReadSpec((str(cluster / "b1"),),
                      TopicFilter(assign=(TopicPartition("orders", 7),))))
    assert plan(ReadSpec((str(cluster / "b1"),), TopicFilter(pattern="ord"))) == []
    one = plan(ReadSpec((str(cluster / "b1" / "orders-1"),)))
    assert {(t.topic, t.partition) for t in one} == {("orders", 1)}


def test_options_are_spark_kafka_ones_or_refused(cluster: Path) -> None:
    path = str(cluster / "b1")
    spec = parse_options({"path": path, "assign": '{"orders":[0,1]}',
                          "startingoffsets": '{"orders":{"0":3,"1":-2}}',
                          "endingOffsets": "latest", "failOnDataLoss": "false"})
    assert spec.topics.assign == (TopicPartition("orders", 0), TopicPartition("orders", 1))
    assert spec.starting == {TopicPartition("orders", 0): 3, TopicPartition("orders", 1): -2}
    assert spec.ending == -1 and not spec.fail_on_data_loss
    with pytest.raises(ConfigError, match=r"unknown option\(s\) of the kafka-segments source: "
                       r"kafka.bootstrap.servers, maxOffsetsPerTrigger; the known ones are "
                       r"path, paths, subscribe"):
        parse_options({"path": path, "maxOffsetsPerTrigger": "5",
                       "kafka.bootstrap.servers": "x:9092"})
    with pytest.raises(ConfigError, match="Only one of assign, subscribe"):
        parse_options({"path": path, "assign": '{"a":[0]}', "subscribe": "a"})
    with pytest.raises(ConfigError, match="startingOffsets must be earliest or JSON"):
        parse_options({"path": path, "startingOffsets": "latest"})
    with pytest.raises(ConfigError, match="endingOffsets: offset -2 is not allowed"):
        parse_options({"path": path, "endingOffsets": '{"orders":{"0":-2}}'})
