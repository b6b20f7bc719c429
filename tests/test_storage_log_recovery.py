"""Recovery at open: torn or corrupt tails are cut off, damage elsewhere stops the node.

The batch CRC (CRC-32C over bytes 21..end) does not cover baseOffset (0..7), length (8..11),
partitionLeaderEpoch (12..15) or magic (16). Length and magic damage still breaks the framing
or the CRC range, so it is detected; baseOffset damage is caught by requiring each batch to
start where the previous one ended; epoch damage is only partly detectable (see
:func:`test_epoch_flips_are_caught_only_when_they_break_monotonicity`).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.errors import CorruptLogError
from pykraft.records.batch import encode_batch
from pykraft.storage.metadata_log import MetadataLog
from pykraft.storage.segment import segment_name

EPOCHS = (1, 1, 2, 4, 4, 5)
MASKS = (0x01, 0x80, 0xFF)
LENGTH_MAGIC_CRC = [*range(8, 12), 16, *range(17, 21)]
BASE_OFFSET = list(range(8))
EPOCH_FIELD = list(range(12, 16))


def make_batches(first_offset: int = 0, epochs: tuple[int, ...] = EPOCHS) -> list[bytes]:
    batches = []
    offset = first_offset
    for index, epoch in enumerate(epochs):
        count = 1 + index % 3
        records = [(None, f"record {offset + i}, epoch {epoch}".encode()) for i in range(count)]
        batches.append(encode_batch(offset, records, partition_leader_epoch=epoch,
                                    timestamp=1_700_000_000_000 + offset))
        offset += count
    return batches


def next_offset(batch: bytes) -> int:
    return int.from_bytes(batch[:8], "big") + int.from_bytes(batch[23:27], "big") + 1


def flipped(data: bytes, position: int, mask: int) -> bytes:
    return data[:position] + bytes([data[position] ^ mask]) + data[position + 1 :]


def all_files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "__cluster_metadata-0"
    MetadataLog.open(directory).close()  # partition.metadata and an empty first segment
    return directory


def write_log(directory: Path, segments: list[list[bytes]]) -> list[Path]:
    """Replace the segment files; each is named after its first batch's base offset."""
    for old in directory.glob("*.log"):
        old.unlink()
    paths = []
    for batches in segments:
        path = directory / segment_name(int.from_bytes(batches[0][:8], "big"))
        path.write_bytes(b"".join(batches))
        paths.append(path)
    return paths


def assert_recovered_to(directory: Path, segment: Path, good: list[bytes]) -> None:
    """Opening cuts ``segment`` back to exactly ``good`` and serves those bytes."""
    with MetadataLog.open(directory) as log:
        assert log.log_end_offset == next_offset(good[-1])
        assert log.read(next_offset(good[0]) - 1, 10**6).endswith(b"".join(good))
    assert segment.read_bytes() == b"".join(good)


def test_every_cut_point_of_the_last_batch_recovers(
    log_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    batches = make_batches()
    good, last = batches[:-1], batches[-1]
    start = len(b"".join(good))
    for cut in range(1, len(last)):
        (segment,) = write_log(log_dir, [[*good, last[:cut]]])
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="pykraft.storage"):
            assert_recovered_to(log_dir, segment, good)
        (message,) = [r.getMessage() for r in caplog.records]
        assert str(segment) in message and f"byte position {start}" in message
        assert "truncated batch" in message
    (segment,) = write_log(log_dir, [batches])  # uncut: nothing to repair
    with caplog.at_level(logging.WARNING, logger="pykraft.storage"):
        caplog.clear()
        assert_recovered_to(log_dir, segment, batches)
    assert not caplog.records


def test_every_flip_in_the_last_batch_is_detected_and_cut(log_dir: Path) -> None:
    """Length, magic, CRC and every CRC-covered byte, plus the base offset (contiguity)."""
    batches = make_batches()
    good, last = batches[:-1], batches[-1]
    positions = LENGTH_MAGIC_CRC + list(range(21, len(last))) + BASE_OFFSET
    for position in positions:
        for mask in MASKS:
            (segment,) = write_log(log_dir, [[*good, flipped(last, position, mask)]])
            assert_recovered_to(log_dir, segment, good)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), mask=st.integers(1, 255))
def test_any_flip_value_in_the_last_batch_is_cut(
    log_dir: Path, data: st.DataObject, mask: int
) -> None:
    """Every XOR value, not only the three above. CRC-32C detects every error burst of up to
    32 bits, so any single damaged byte in the covered range is caught by construction."""
    batches = make_batches()
    good, last = batches[:-1], batches[-1]
    position = data.draw(st.sampled_from(LENGTH_MAGIC_CRC + BASE_OFFSET)
                         | st.integers(21, len(last) - 1))
    (segment,) = write_log(log_dir, [[*good, flipped(last, position, mask)]])
    assert_recovered_to(log_dir, segment, good)


def test_flip_in_the_middle_of_the_last_segment_stops_recovery(log_dir: Path) -> None:
    batches = make_batches()
    victim = 2
    position_in_file = len(b"".join(batches[:victim]))
    for position in LENGTH_MAGIC_CRC + BASE_OFFSET + [21, 30, 57, 61, len(batches[victim]) - 1]:
        for mask in MASKS:
            damaged = [*batches[:victim], flipped(batches[victim], position, mask),
                       *batches[victim + 1 :]]
            (segment,) = write_log(log_dir, [damaged])
            before = all_files(log_dir)
            with pytest.raises(CorruptLogError) as info:
                MetadataLog.open(log_dir)
            assert (info.value.path, info.value.position) == (str(segment), position_in_file)
            assert str(segment) in str(info.value)
            assert f"byte position {position_in_file}" in str(info.value)
            assert all_files(log_dir) == before


def test_damage_in_a_non_last_segment_stops_recovery(log_dir: Path) -> None:
    first, second = make_batches(), make_batches(first_offset=12, epochs=(6, 7))
    assert next_offset(first[-1]) == 12
    tail_position = len(b"".join(first[:-1]))
    cases = {
        "flip in its last batch": [*first[:-1], flipped(first[-1], 40, 0x01)],
        "torn last batch": [*first[:-1], first[-1][:-5]],
        "flip in its first batch": [flipped(first[0], 9, 0x80), *first[1:]],
    }
    for name, damaged in cases.items():
        older, newer = write_log(log_dir, [damaged, second])
        before = all_files(log_dir)
        with pytest.raises(CorruptLogError) as info:
            MetadataLog.open(log_dir)
        assert info.value.path == str(older), name
        assert info.value.position == (0 if "first" in name else tail_position), name
        assert all_files(log_dir) == before, name
        assert newer.exists()


def test_gap_between_segments_stops_recovery(log_dir: Path) -> None:
    first, later = make_batches(), make_batches(first_offset=20, epochs=(6,))
    _, newer = write_log(log_dir, [first, later])
    with pytest.raises(CorruptLogError, match="does not continue the previous segment") as info:
        MetadataLog.open(log_dir)
    assert (info.value.path, info.value.position) == (str(newer), 0)


def test_epoch_flips_are_caught_only_when_they_break_monotonicity(log_dir: Path) -> None:
    """partitionLeaderEpoch (bytes 12..15) is invisible to Kafka's CRC.

    What we check instead: epochs never decrease along the log. So a flip is caught exactly
    when the damaged epoch drops below the previous batch's epoch or rises above the next
    batch's; in the last batch only a drop is visible. A flip that keeps the order (say
    epoch 4 -> 5 between 4 and 5) goes unnoticed, as it would in Kafka. A caught regression
    always stops recovery, even at the tail: the batch before may be the damaged one, so
    dropping the last batch could discard intact data and keep the bad epoch.
    """
    batches = make_batches()
    epochs = list(EPOCHS)
    for victim in range(1, len(batches)):
        for position in EPOCH_FIELD:
            for mask in MASKS:
                damaged_batch = flipped(batches[victim], position, mask)
                new_epoch = int.from_bytes(damaged_batch[12:16], "big", signed=True)
                damaged = [*batches[:victim], damaged_batch, *batches[victim + 1 :]]
                write_log(log_dir, [damaged])
                too_low = new_epoch < epochs[victim - 1]
                too_high = victim + 1 < len(batches) and new_epoch > epochs[victim + 1]
                if too_low or too_high:
                    before = all_files(log_dir)
                    with pytest.raises(CorruptLogError, match="below the previous epoch"):
                        MetadataLog.open(log_dir)
                    assert all_files(log_dir) == before
                else:
                    with MetadataLog.open(log_dir) as log:
                        assert log.log_end_offset == next_offset(batches[-1])


def test_recovered_log_accepts_appends_and_reopens_cleanly(log_dir: Path, tmp_path: Path) -> None:
    batches = make_batches()
    (segment,) = write_log(log_dir, [[*batches[:-1], batches[-1][:20]]])
    with MetadataLog.open(log_dir) as log:
        log.append(batches[-1])
        log.flush()
    assert segment.read_bytes() == b"".join(batches)
    copy = tmp_path / "copy"
    shutil.copytree(log_dir, copy)
    with MetadataLog.open(copy) as log:
        assert log.epoch_entries == [(1, 0), (2, 3), (4, 6), (5, 9)]
