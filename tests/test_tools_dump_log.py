"""``pykraft dump-log`` against Kafka's own files and corrupt input."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.errors import CorruptLogError
from pykraft.records.batch import encode_batch, iter_batches
from pykraft.storage.metadata_log import MetadataLog

runner = CliRunner()


def test_kafka_bootstrap_checkpoint_text(kafka37_dir: Path) -> None:
    path = kafka37_dir / "bootstrap.checkpoint"
    result = runner.invoke(
        app, ["dump-log", "--files", str(path), "--cluster-metadata-decoder"]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"Dumping {path}"
    assert lines[1] == "KRaft bootstrap snapshot"
    assert lines[2].startswith(
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: true "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1769791430952 size: 83 "
        "magic: 2 compresscodec: none crc: 1607355885 isvalid: true"
    )
    assert lines[3].endswith(
        'headerKeys: [] SnapshotHeader {"version":0,"lastContainedLogTimestamp":0}'
    )
    assert lines[5].endswith(
        'payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version",'
        '"featureLevel":19}}'
    )
    assert lines[7].endswith('SnapshotFooter {"version":0}')
    assert len(lines) == 8


def test_json_output(kafka37_dir: Path) -> None:
    path = kafka37_dir / "bootstrap.checkpoint"
    result = runner.invoke(
        app, ["dump-log", "--files", str(path), "--cluster-metadata-decoder", "--json"]
    )
    assert result.exit_code == 0
    (doc,) = json.loads(result.output)["files"]
    assert [b["count"] for b in doc["batches"]] == [1, 1, 1]
    assert all(b["isvalid"] for b in doc["batches"])
    assert doc["batches"][1]["records"][0]["payload"]["data"]["featureLevel"] == 19


def test_a_crc_mismatch_inside_the_log_is_shown_and_fails(
        kafka37_dir: Path, tmp_path: Path) -> None:
    """Damage a valid batch follows is no torn write: shown per batch (isvalid: false, as
    Kafka does), and the exit code says the log is damaged."""
    path = tmp_path / "00000000000000000000.log"
    shutil.copy(kafka37_dir / "bootstrap.checkpoint", path)
    data = bytearray(path.read_bytes())
    data[83 + 70] ^= 0xFF  # inside the second of three batches' records
    path.write_bytes(bytes(data))
    result = runner.invoke(app, ["dump-log", "--files", str(path)])
    assert result.exit_code == 1
    assert "Log starting offset: 0" in result.output
    assert "isvalid: false" in result.output
    assert "position: 174" in result.output and "invalid bytes" not in result.output


@pytest.mark.parametrize("tear", ["short", "crc"])
def test_a_torn_end_of_the_last_segment_is_counted_as_kafka_does(
        tmp_path: Path, tear: str) -> None:
    """A crash mid-write, or a node writing right now, leaves a partial last batch; the
    server truncates it at start-up, DumpLogSegments prints what precedes it and "Found N
    invalid bytes at the end of <file name>", exit 0."""
    path = _segment(tmp_path)
    data = bytearray(path.read_bytes())
    last = list(iter_batches(bytes(data)))[-1].position
    if tear == "short":
        del data[-5:]
    else:
        data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    result = runner.invoke(app, ["dump-log", "--files", str(path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split(" lastOffset")[0] for line in lines if line.startswith("baseOffset")] \
        == ["baseOffset: 0", "baseOffset: 1", "baseOffset: 2"]
    assert lines[-1] == f"Found {len(data) - last} invalid bytes at the end of {path.name}"
    doc = json.loads(runner.invoke(app, ["dump-log", "--files", str(path), "--json"]).output)
    (dumped,) = doc["files"]
    assert dumped["error"] is None
    assert dumped["invalidBytesAtEnd"]["position"] == last
    assert dumped["invalidBytesAtEnd"]["size"] == len(data) - last


def test_a_torn_batch_before_the_end_of_the_log_fails(tmp_path: Path) -> None:
    """A later segment follows (the tear is inside the log), or the file is a snapshot
    (written whole, then renamed): damage, as the storage reader says, exit 1."""
    path = _segment(tmp_path)
    data = path.read_bytes()[:-5]
    path.write_bytes(data)
    later = path.with_name("00000000000000000004.log")
    later.write_bytes(encode_batch(4, [(None, b"v4")], partition_leader_epoch=2,
                                   timestamp=1000))
    snapshot = tmp_path / "00000000000000000004-0000000002.checkpoint"
    snapshot.write_bytes(data)
    for damaged in (path, snapshot):
        result = runner.invoke(app, ["dump-log", "--files", str(damaged)])
        assert result.exit_code == 1, result.output
        assert "Error: corrupt record batch in" in result.output
        assert "invalid bytes" not in result.output


def _segment(directory: Path) -> Path:
    """A segment of four batches: offsets 0-3, leader epochs 1, 1, 2, 2."""
    path = directory / "00000000000000000000.log"
    path.write_bytes(b"".join(
        encode_batch(offset, [(None, b"v%d" % offset)], partition_leader_epoch=1 + offset // 2,
                     timestamp=1000) for offset in range(4)))
    return path


def _reader_error(segment: Path, tmp_path: Path) -> str:
    """What the node's storage reader says when it opens the segment."""
    directory = tmp_path / "reader"
    directory.mkdir()
    shutil.copy(segment, directory / segment.name)
    with pytest.raises(CorruptLogError) as refused:
        MetadataLog.open(directory).close()
    return str(refused.value).replace(str(directory), str(segment.parent))


@pytest.mark.parametrize(("batch", "field", "value", "expected"), [
    (2, 0, struct.pack(">q", 99), "base offset 99 does not continue the log at 2"),
    (2, 12, struct.pack(">i", 0), "leader epoch 0 is below the previous epoch 1"),
    (1, 12, struct.pack(">i", 5), "leader epoch 2 is below the previous epoch 5"),
], ids=["base-offset", "epoch-lowered", "epoch-raised"])
def test_damage_outside_the_crc_is_reported_as_the_reader_does(
    tmp_path: Path, batch: int, field: int, value: bytes, expected: str,
) -> None:
    path = _segment(tmp_path)
    data = bytearray(path.read_bytes())
    position = next(b.position for b in iter_batches(bytes(data)) if b.base_offset == batch)
    data[position + field:position + field + len(value)] = value  # not covered by the CRC
    path.write_bytes(bytes(data))
    result = runner.invoke(app, ["dump-log", "--files", str(path)])
    assert result.exit_code == 1, result.output
    reader = _reader_error(path, tmp_path)
    assert expected in reader
    assert result.output.splitlines()[-1] == f"Error: {reader}"
    assert "isvalid: false" not in result.output  # the CRC does not see this damage


def test_unknown_and_missing_files(tmp_path: Path, kafka37_dir: Path) -> None:
    result = runner.invoke(app, ["dump-log", "--files", str(kafka37_dir / "meta.properties")])
    assert result.exit_code == 1 and "Ignoring unknown file" in result.output
    result = runner.invoke(app, ["dump-log", "--files", str(tmp_path / "x.log")])
    assert result.exit_code == 1 and "does not exist" in result.output
