"""recovery-point-offset-checkpoint and friends: Kafka's text format, read and write."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykraft.ids import TopicPartition
from pykraft.storage.file_error import StateFileError
from pykraft.storage.offset_checkpoints import (
    RECOVERY_POINT_CHECKPOINT,
    decode_offset_checkpoint,
    read_offset_checkpoint,
    write_offset_checkpoint,
)


def test_round_trip_in_kafkas_format(tmp_path: Path) -> None:
    path = tmp_path / RECOVERY_POINT_CHECKPOINT
    offsets = {TopicPartition("orders", 0): 1234, TopicPartition("my-topic", 11): 0}
    write_offset_checkpoint(path, offsets)
    assert path.read_bytes() == b"0\n2\norders 0 1234\nmy-topic 11 0\n"
    assert read_offset_checkpoint(path) == offsets
    assert not (tmp_path / (RECOVERY_POINT_CHECKPOINT + ".tmp")).exists()
    write_offset_checkpoint(path, {})
    assert path.read_bytes() == b"0\n0\n"
    assert read_offset_checkpoint(path) == {}


def test_missing_or_empty_files_have_no_entries(tmp_path: Path) -> None:
    assert read_offset_checkpoint(tmp_path / "absent") == {}
    assert decode_offset_checkpoint(b"", "x") == {}


def test_a_file_written_by_kafka_with_extra_spaces_reads(tmp_path: Path) -> None:
    assert decode_offset_checkpoint(b"0\n1\n__consumer_offsets  7   42\n", "x") == {
        TopicPartition("__consumer_offsets", 7): 42}


@pytest.mark.parametrize(("data", "problem"), [
    (b"1\n0\n", "Unrecognized version of the checkpoint file: 1"),
    (b"0\n2\nt 0 1\n", "Expected 2 entries in checkpoint file, but found only 1"),
    (b"0\n1\nt 0\n", "Malformed line in checkpoint file: 't 0'"),
    (b"0\n1\nt x 1\n", "Malformed line in checkpoint file: 't x 1'"),
    (b"0\nmany\n", "Malformed line in checkpoint file: 'many'"),
])
def test_damaged_files_are_refused_naming_the_file(data: bytes, problem: str) -> None:
    with pytest.raises(StateFileError, match=problem) as error:
        decode_offset_checkpoint(data, "/logs/recovery-point-offset-checkpoint")
    assert error.value.path == "/logs/recovery-point-offset-checkpoint"
