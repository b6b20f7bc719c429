"""The ``kafka-segments`` reader's rows and checks, without Spark, against kafka-python."""

from __future__ import annotations

import logging
import shutil
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

import crc32c
import pyarrow as pa
import pytest

from pykraft.errors import CorruptLogError
from pykraft.records.batch import CRC_START, HEADER_SIZE, iter_batches
from pykraft.spark.segment_plan import (
    DataLossError,
    OffsetBounds,
    ReadSpec,
    SegmentFile,
    TopicFilter,
    plan,
)
from pykraft.spark.segment_rows import ReadOptions, read_arrow, read_segment
from user_segments import checkpoint_high_watermarks, expected_rows, write_partition


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A broker log directory: ``orders-0`` (two segments) and ``audit-0``."""
    root = tmp_path_factory.mktemp("broker") / "data"
    root.mkdir()
    write_partition(root / "orders-0")
    shutil.copytree(root / "orders-0", root / "audit-0")
    checkpoint_high_watermarks(root)
    return root


@pytest.fixture
def damaged(log_dir: Path, tmp_path: Path) -> Path:
    """A copy of the log directory to damage."""
    copy = tmp_path / "data"
    shutil.copytree(log_dir, copy)
    return copy


def _read(directory: Path, *, fail_on_data_loss: bool = True) -> list[tuple[Any, ...]]:
    spec = ReadSpec((str(directory),), TopicFilter(("orders",)),
                    fail_on_data_loss=fail_on_data_loss)
    return [row for segment in plan(spec)
            for row in read_segment(segment, include_headers=False,
                                    fail_on_data_loss=fail_on_data_loss)]


def _segments(directory: Path) -> list[Path]:
    return sorted((directory / "orders-0").glob("*.log"))


def test_rows_are_what_kafka_python_reads(log_dir: Path) -> None:
    """Every codec, null keys and values, headers, LogAppendTime; the marker is skipped."""
    for segment in plan(ReadSpec((str(log_dir),), TopicFilter(("orders",)))):
        expected = expected_rows(Path(segment.path), segment.topic, segment.partition)
        assert expected
        assert list(read_segment(segment, include_headers=True)) == expected
        assert list(read_segment(segment, include_headers=False)) == [r[:-1] for r in expected]
    kinds = {row[6] for row in _read(log_dir)}
    assert kinds == {0, 1}


def test_arrow_batches_hold_the_same_rows(log_dir: Path) -> None:
    schema = pa.schema([
        ("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
        ("partition", pa.int32()), ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32()),
        ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))])
    for segment in plan(ReadSpec((str(log_dir),), TopicFilter(("orders",)))):
        batches = list(read_arrow(segment, ReadOptions(include_headers=True), schema,
                                  rows_per_batch=4))
        assert len(batches) > 1 and all(b.schema == schema for b in batches)
        got = [tuple(None if v is None else [(h["key"], h["value"]) for h in v]
                     if name == "headers" else v for name, v in row.items())
               for b in batches for row in b.to_pylist()]
        assert got == list(read_segment(segment, include_headers=True))


def test_torn_tail_of_the_active_segment_is_tolerated(log_dir: Path, damaged: Path) -> None:
    last = _segments(damaged)[-1]
    data = last.read_bytes()
    last.write_bytes(data[:-3])
    final = list(iter_batches(data))[-1]
    assert _read(damaged) == [row for row in _read(log_dir) if row[4] < final.base_offset]
    last.write_bytes(data + bytes(40))  # zeros a crash left after the last write
    assert _read(damaged) == _read(log_dir)


def test_truncated_rolled_segment_is_lost_data(damaged: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    first = _segments(damaged)[0]
    data = first.read_bytes()
    batches = list(iter_batches(data))
    first.write_bytes(data[: batches[-1].position + 20])
    with pytest.raises(CorruptLogError, match=rf"{first.name} at byte position "
                       rf"{batches[-1].position}: truncated batch"):
        _read(damaged)
    first.write_bytes(data[: batches[-1].position])  # cut at a batch boundary
    with pytest.raises(CorruptLogError, match=f"{first.name} at byte position "
                       f"{batches[-1].position}: the segment ends at offset "
                       f"{batches[-1].base_offset} but the next segment starts at 12"):
        _read(damaged)
    with caplog.at_level(logging.WARNING):
        rows = _read(damaged, fail_on_data_loss=False)
    assert [r[4] for r in rows] == [o for o in range(21) if o not in (9, 10, 11, 19)]
    assert "the segment ends at offset 9" in caplog.text


def test_corrupted_batch_length_fails_wherever_it_is(damaged: Path) -> None:
    """In a rolled segment and in the active one (intact batches follow: not a torn tail)."""
    for segment in _segments(damaged):
        original = segment.read_bytes()
        data = bytearray(original)
        position = list(iter_batches(original))[1].position
        data[position + 8 : position + 12] = (10**6).to_bytes(4, "big")
        segment.write_bytes(bytes(data))
        with pytest.raises(CorruptLogError, match=f"{segment.name} at byte position "
                           f"{position}: truncated batch: 1000012 bytes declared"):
            _read(damaged)
        segment.write_bytes(original)


def test_crc_damage_in_the_middle_fails(damaged: Path) -> None:
    last = _segments(damaged)[-1]
    data = bytearray(last.read_bytes())
    position = list(iter_batches(bytes(data)))[1].position
    data[position + 70] ^= 0xFF
    last.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError, match=f"position {position}: CRC mismatch"):
        _read(damaged)


def test_foreign_files_named_log(log_dir: Path, damaged: Path) -> None:
    for text in _segments(damaged):  # rolled, then active: both are refused
        original = text.read_bytes()
        text.write_text("not a segment, a text file that happens to be named *.log\n" * 3)
        with pytest.raises(CorruptLogError, match=f"{text.name} at byte position 0"):
            _read(damaged)
        text.write_bytes(original)
    notes = damaged / "orders-0" / "notes.log"
    notes.write_text("hello")
    with pytest.raises(DataLossError, match=r"notes\.log: a \.log file that is not a segment"):
        _read(damaged)
    assert _read(damaged, fail_on_data_loss=False) == _read(log_dir)


def test_offset_gap_inside_a_segment_unless_compacted(damaged: Path) -> None:
    first = _segments(damaged)[0]
    data = first.read_bytes()
    second = list(iter_batches(data))[1]
    first.write_bytes(data[: second.position] + data[second.position + second.header.size:])
    with pytest.raises(CorruptLogError, match=f"position {second.position}: base offset 6 "
                       "does not continue the log at 3"):
        _read(damaged)
    segment = SegmentFile(str(first), "orders", 0, 0, next_base=12, cleaned_end=12)
    assert [r[4] for r in read_segment(segment, include_headers=False)] == \
        [0, 1, 2, *range(6, 12)]


def test_segment_deleted_after_planning(damaged: Path,
                                        caplog: pytest.LogCaptureFixture) -> None:
    tasks = plan(ReadSpec((str(damaged),), TopicFilter(("orders",))))
    _segments(damaged)[0].unlink()
    with pytest.raises(DataLossError, match=f"{tasks[0].path}: the segment was deleted"):
        list(read_segment(tasks[0], include_headers=False))
    with caplog.at_level(logging.WARNING):
        assert list(read_segment(tasks[0], include_headers=False,
                                 fail_on_data_loss=False)) == []
    assert "deleted after the read was planned" in caplog.text


def test_indexes_skip_what_the_read_does_not_need(log_dir: Path, damaged: Path) -> None:
    """A late start seeks by the offset index (the damaged first batch is never read); a
    timestamp bound drops rolled segments whose time index is below it."""
    first = _segments(damaged)[0]
    data = bytearray(first.read_bytes())
    data[16] = 7  # the first batch's magic
    first.write_bytes(bytes(data))
    late = SegmentFile(str(first), "orders", 0, 0, next_base=12, start=10)
    assert [r[4] for r in read_segment(late, include_headers=False)] == [10, 11]
    with pytest.raises(CorruptLogError, match="position 0: unsupported record batch magic 7"):
        list(read_segment(replace(late, start=2), include_headers=False))
    spec = ReadSpec((str(log_dir),), TopicFilter(("orders",)))
    assert [t.base_offset for t in plan(spec, OffsetBounds(min_timestamp=1_302))] == [0, 12]
    assert [t.base_offset for t in plan(spec, OffsetBounds(min_timestamp=1_303))] == [12]
    assert [t.base_offset for t in plan(spec, OffsetBounds(min_timestamp=10**12))] == [12]


def test_segment_file_defaults_read_the_whole_file(log_dir: Path) -> None:
    path = sorted((log_dir / "orders-0").glob("*.log"))[0]
    rows = list(read_segment(SegmentFile(str(path), "orders", 0, 0), include_headers=False))
    assert [r[4] for r in rows] == list(range(12))


def test_a_payload_that_does_not_decompress_is_lost_data(damaged: Path) -> None:
    """Intact framing and CRC (recomputed), garbage gzip: an error naming the batch."""
    first = _segments(damaged)[0]
    data = bytearray(first.read_bytes())
    gzip_batch = list(iter_batches(bytes(data)))[1]
    start = gzip_batch.position + HEADER_SIZE
    data[start : start + 8] = b"notgzip!"
    struct.pack_into(">I", data, gzip_batch.position + 17,
                     crc32c.crc32c(data[gzip_batch.position + CRC_START:
                                        gzip_batch.position + gzip_batch.header.size]))
    first.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError, match=f"position {gzip_batch.position}: gzip payload "
                       "does not decompress"):
        _read(damaged)
