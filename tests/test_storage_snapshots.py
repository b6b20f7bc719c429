"""Snapshot files: names, the .part -> .checkpoint life cycle, reading, housekeeping."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.errors import CorruptLogError, CorruptRecordError, StorageError
from pykraft.records.batch import encode_batch, iter_batches
from pykraft.records.control import (
    ControlType,
    KRaftVersionRecord,
    decode_control,
)
from pykraft.storage.snapshot_files import (
    SnapshotId,
    SnapshotReader,
    SnapshotWriter,
    list_snapshots,
    mark_for_deletion,
    parse_snapshot_name,
    recover_snapshots,
    write_snapshot,
)


def content(batches: int = 3, epoch: int = 4) -> list[bytes]:
    return [encode_batch(i * 2, [(None, b"v%d" % i), (None, b"w%d" % i)],
                         partition_leader_epoch=epoch, timestamp=10 + i) for i in range(batches)]


def test_names() -> None:
    snapshot = SnapshotId(1234, 5)
    assert snapshot.file_name == "00000000000000001234-0000000005.checkpoint"
    assert parse_snapshot_name(snapshot.file_name) == (snapshot, ".checkpoint")
    assert parse_snapshot_name(snapshot.file_name + ".part") == (snapshot, ".checkpoint.part")
    assert parse_snapshot_name(snapshot.file_name + ".deleted") == (snapshot,
                                                                    ".checkpoint.deleted")
    kafka_partial = "00000000000000001234-0000000005-8371937462.checkpoint.part"
    assert parse_snapshot_name(kafka_partial) == (snapshot, ".checkpoint.part")
    for other in ["bootstrap.checkpoint", "00000000000000001234-0000000005-1.checkpoint",
                  "00000000000000001234.log", "1234-5.checkpoint",
                  "00000000000000001234-9999999999.checkpoint", "quorum-state",
                  snapshot.file_name + ".tmp"]:
        assert parse_snapshot_name(other) is None
    assert sorted([SnapshotId(10, 3), SnapshotId(5, 9), SnapshotId(10, 2)]) == [
        SnapshotId(5, 9), SnapshotId(10, 2), SnapshotId(10, 3)]
    with pytest.raises(ValueError, match="invalid snapshot id"):
        SnapshotId(-1, 0)


def test_write_freeze_read(tmp_path: Path) -> None:
    batches = content()
    snapshot = SnapshotId(6, 4)
    writer = SnapshotWriter(tmp_path, snapshot)
    writer.append(batches[0])
    writer.append(batches[1] + batches[2])
    assert [p.name for p in tmp_path.iterdir()] == [snapshot.file_name + ".part"]
    assert list_snapshots(tmp_path) == []
    path = writer.freeze()
    assert path == tmp_path / snapshot.file_name
    assert [p.name for p in tmp_path.iterdir()] == [snapshot.file_name]
    assert list_snapshots(tmp_path) == [snapshot]
    with SnapshotReader(path) as reader:
        assert reader.snapshot_id == snapshot
        assert reader.size == len(b"".join(batches))
        assert [batch.data for batch in reader.batches()] == batches
        assert reader.read_bytes(5, 10) == b"".join(batches)[5:15]
        assert reader.read_bytes(reader.size - 3, 100) == b"".join(batches)[-3:]
        assert reader.read_bytes(reader.size, 100) == b""
        with pytest.raises(StorageError, match="invalid slice"):
            reader.read_bytes(reader.size + 1, 1)
    with pytest.raises(StorageError, match="already finished"):
        writer.append(batches[0])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (content()[1], "base offset 2, expected 0"),
        (content()[0][:-1], "truncated batch"),
        (content()[0][:-1] + bytes([content()[0][-1] ^ 1]), "CRC mismatch"),
    ],
    ids=["offset", "short", "crc"],
)
def test_writer_rejects_bad_batches(tmp_path: Path, data: bytes, message: str) -> None:
    with SnapshotWriter(tmp_path, SnapshotId(6, 4)) as writer:
        with pytest.raises(CorruptRecordError, match=message):
            writer.append(data)
        assert writer.size == 0
    assert list(tmp_path.iterdir()) == []  # leaving the block without freezing aborts


def test_abort_and_conflicts(tmp_path: Path) -> None:
    snapshot = SnapshotId(6, 4)
    writer = SnapshotWriter(tmp_path, snapshot)
    with pytest.raises(StorageError, match="already being written"):
        SnapshotWriter(tmp_path, snapshot)
    writer.abort()
    writer.abort()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError), SnapshotWriter(tmp_path, snapshot) as failing:
        failing.append(content()[0])
        raise RuntimeError("the state machine failed mid-snapshot")
    assert list(tmp_path.iterdir()) == []
    with SnapshotWriter(tmp_path, snapshot) as done:
        done.append(content()[0])
        done.freeze()
    with pytest.raises(StorageError, match="already exists"):
        SnapshotWriter(tmp_path, snapshot)


@settings(max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture],
          deadline=None)
@given(cuts=st.lists(st.integers(0, 10**6), max_size=6))
def test_unaligned_download_is_verified_at_freeze(tmp_path: Path, cuts: list[int]) -> None:
    data = b"".join(content())
    points = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    snapshot = SnapshotId(6, 4)
    shutil.rmtree(tmp_path / "snap", ignore_errors=True)
    (tmp_path / "snap").mkdir()
    with SnapshotWriter(tmp_path / "snap", snapshot) as writer:
        for start, end in itertools.pairwise(points):
            writer.append_unaligned(data[start:end])
        path = writer.freeze()
    assert path.read_bytes() == data


def test_unaligned_download_with_damage_fails_to_freeze(tmp_path: Path) -> None:
    data = bytearray(b"".join(content()))
    data[100] ^= 0x10
    writer = SnapshotWriter(tmp_path, SnapshotId(6, 4))
    writer.append_unaligned(bytes(data[:50]))
    writer.append_unaligned(bytes(data[50:]))
    with pytest.raises(CorruptLogError, match=r"\.checkpoint\.part at byte position"):
        writer.freeze()
    assert list_snapshots(tmp_path) == []
    writer.abort()
    assert list(tmp_path.iterdir()) == []


def test_reader_reports_damage_with_position(tmp_path: Path) -> None:
    batches = content()
    second = len(batches[0])
    path = tmp_path / SnapshotId(6, 4).file_name
    damaged = bytearray(b"".join(batches))
    damaged[second + 40] ^= 1
    path.write_bytes(bytes(damaged))
    with SnapshotReader(path) as reader:
        iterator = reader.batches()
        assert next(iterator).data == batches[0]
        with pytest.raises(CorruptLogError) as info:
            next(iterator)
    assert (info.value.path, info.value.position) == (str(path), second)
    path.write_bytes(b"".join(batches)[:-4])
    with SnapshotReader(path) as reader, pytest.raises(CorruptLogError, match="truncated"):
        list(reader.batches())
    with pytest.raises(StorageError, match="cannot open snapshot"):
        SnapshotReader(tmp_path / "missing.checkpoint")


def test_housekeeping(tmp_path: Path) -> None:
    names = {
        SnapshotId(10, 1).file_name: b"a",
        SnapshotId(20, 2).file_name: b"b",
        SnapshotId(30, 3).file_name + ".part": b"c",
        "00000000000000000040-0000000003-123456.checkpoint.part": b"c",
        SnapshotId(5, 1).file_name + ".deleted": b"d",
        "bootstrap.checkpoint": b"e",
        "00000000000000000000.log": b"",
        "quorum-state": b"{}",
    }
    for name, data in names.items():
        (tmp_path / name).write_bytes(data)
    assert list_snapshots(tmp_path) == [SnapshotId(10, 1), SnapshotId(20, 2)]
    assert len(list(tmp_path.iterdir())) == len(names)  # listing deletes nothing
    assert recover_snapshots(tmp_path) == [SnapshotId(10, 1), SnapshotId(20, 2)]
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(n for n in names if not n.endswith((".part", ".deleted")))
    retired = mark_for_deletion(tmp_path, SnapshotId(10, 1))
    assert retired.name == SnapshotId(10, 1).file_name + ".deleted"
    assert retired.read_bytes() == b"a"
    assert list_snapshots(tmp_path) == [SnapshotId(20, 2)]
    with pytest.raises(StorageError, match="does not exist"):
        mark_for_deletion(tmp_path, SnapshotId(10, 1))
    recover_snapshots(tmp_path)
    assert not retired.exists()


def test_kafka_bootstrap_checkpoint_reads(kafka37_dir: Path) -> None:
    with SnapshotReader(kafka37_dir / "bootstrap.checkpoint") as reader:
        assert reader.snapshot_id is None
        batches = list(reader.batches())
    assert [b.base_offset for b in batches] == [0, 1, 2]
    assert [b.is_control for b in batches] == [True, False, True]


def test_write_snapshot_reproduces_kafka_bootstrap_checkpoint(
    kafka37_dir: Path, tmp_path: Path
) -> None:
    """Same layout as Kafka's writer: header batch, data batches, footer batch, byte for byte."""
    fixture = (kafka37_dir / "bootstrap.checkpoint").read_bytes()
    kafka_batches = list(iter_batches(fixture))
    times = iter([b.header.base_timestamp for b in kafka_batches])
    values = [r.value for r in kafka_batches[1].records() if r.value is not None]
    path = write_snapshot(tmp_path, SnapshotId(0, 0), last_contained_timestamp=0,
                          batches=[values], clock=lambda: next(times))
    assert path.read_bytes() == fixture


def test_write_snapshot_with_kraft_version_records(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, SnapshotId(42, 7), last_contained_timestamp=99,
                          batches=[[b"a", b"b"], [], [b"c"]], clock=lambda: 5,
                          header_records=[KRaftVersionRecord(0, 1)])
    with SnapshotReader(path) as reader:
        batches = list(reader.batches())
    assert [b.base_offset for b in batches] == [0, 2, 4, 5]
    assert {b.epoch for b in batches} == {7}
    header = [decode_control(r.key, r.value) for r in batches[0].records()]
    assert [c.type for c in header] == [ControlType.SNAPSHOT_HEADER, ControlType.KRAFT_VERSION]
    footer = [decode_control(r.key, r.value) for r in batches[-1].records()]
    assert [c.type for c in footer] == [ControlType.SNAPSHOT_FOOTER]
    assert [r.value for b in batches[1:3] for r in b.records()] == [b"a", b"b", b"c"]
