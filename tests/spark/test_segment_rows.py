"""The ``kafka-segments`` reader's discovery and rows, without Spark, against kafka-python."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pykraft.errors import CorruptLogError, StorageError
from pykraft.records.batch import iter_batches
from pykraft.spark.segment_rows import SegmentFile, TopicFilter, discover, read_segment
from user_segments import expected_rows, write_partition


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A broker log directory: two partitions of ``orders``, one of ``audit``, and what a
    reader must pass over (the metadata log, a partition being deleted, other files)."""
    root = tmp_path_factory.mktemp("broker") / "data"
    root.mkdir()
    write_partition(root / "orders-0")
    shutil.copytree(root / "orders-0", root / "orders-1")
    shutil.copytree(root / "orders-0", root / "audit-0")
    shutil.copytree(root / "orders-0", root / "orders-2.0123456789abcdef0123456789abcdef-delete")
    shutil.copytree(root / "orders-0", root / "__cluster_metadata-0")
    (root / "meta.properties").write_text("node.id=1\n")
    (root / "cleaner-offset-checkpoint").write_text("0\n0\n")
    return root


def test_discovery_finds_live_partitions_segments(log_dir: Path) -> None:
    found = discover([str(log_dir)], TopicFilter())
    segments = sorted(p.name for p in (log_dir / "orders-0").glob("*.log"))
    assert [(s.topic, s.partition) for s in found] == \
        [("audit", 0)] * len(segments) + [("orders", 0)] * len(segments) \
        + [("orders", 1)] * len(segments)
    assert [Path(s.path).name for s in found[: len(segments)]] == segments
    assert [s.base_offset for s in found[: len(segments)]] == [int(n[:20]) for n in segments]
    assert {s.topic for s in discover([str(log_dir)], TopicFilter(("audit", "x")))} \
        == {"audit"}
    assert {(s.topic, s.partition) for s in discover([str(log_dir)], TopicFilter(
        pattern="ord.*"))} == {("orders", 0), ("orders", 1)}
    assert discover([str(log_dir)], TopicFilter(pattern="ord")) == []  # whole name
    single = discover([str(log_dir / "orders-1")], TopicFilter())
    assert {(s.topic, s.partition) for s in single} == {("orders", 1)}
    with pytest.raises(StorageError, match="no such log directory"):
        discover([str(log_dir / "missing")], TopicFilter())


def test_rows_are_what_kafka_python_reads(log_dir: Path) -> None:
    """Every codec, null keys and values, headers, LogAppendTime; the marker is skipped."""
    for segment in discover([str(log_dir)], TopicFilter(("orders",))):
        expected = expected_rows(Path(segment.path), segment.topic, segment.partition)
        assert expected
        assert list(read_segment(segment, include_headers=True)) == expected
        assert list(read_segment(segment, include_headers=False)) == [r[:-1] for r in expected]
    kinds = {row[6] for s in discover([str(log_dir)], TopicFilter(("audit",)))
             for row in read_segment(s, include_headers=False)}
    assert kinds == {0, 1}


def test_partial_tail_ends_a_segment_and_damage_fails(log_dir: Path, tmp_path: Path) -> None:
    source = sorted((log_dir / "orders-0").glob("*.log"))[0]
    data = source.read_bytes()
    copy = tmp_path / source.name
    segment = SegmentFile(str(copy), "orders", 0, 0)
    copy.write_bytes(data[:-3])
    full = expected_rows(source, "orders", 0)
    last = list(iter_batches(data))[-1]
    kept = [row for row in full if row[4] < last.base_offset]
    assert list(read_segment(segment, include_headers=True)) == kept
    damaged = bytearray(data)
    damaged[list(iter_batches(data))[1].position + 70] ^= 0xFF
    copy.write_bytes(bytes(damaged))
    with pytest.raises(CorruptLogError, match="CRC mismatch"):
        list(read_segment(segment, include_headers=False))
