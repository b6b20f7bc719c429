"""Produce validation in two steps, so a leader can run the costly one off its event loop:
:func:`admit_produce` (cheap whatever the batch holds), :func:`complete_produce` (records,
offsets) and :func:`placed` (the log moved meanwhile)."""

from __future__ import annotations

import pytest

from pykraft.log.validator import (
    INLINE_PAYLOAD_BYTES,
    AppendConfig,
    admit_produce,
    complete_produce,
    placed,
    validate_produce,
)
from pykraft.records.batch import encode_batch
from pykraft.records.compression import GZIP, NONE, ZSTD
from pykraft.testing.compression_bombs import NOW, MiB, batch, bomb, huge_record

BIG = 64 * MiB  # max.message.bytes for an uncompressed batch above INLINE_PAYLOAD_BYTES


def _record(codec: int, value_size: int) -> bytes:
    """A batch of one valid record of ``value_size`` NUL bytes (whole MiB, or 0)."""
    if codec == NONE:
        return encode_batch(0, [(None, bytes(value_size))], partition_leader_epoch=-1,
                            timestamp=NOW)
    head, tail = huge_record(value_size)
    return batch(codec, bomb(codec, head, value_size, tail))


@pytest.mark.parametrize("codec", [NONE, GZIP, ZSTD])
def test_only_a_batch_expanding_past_the_inline_size_is_costly(codec: int) -> None:
    config = AppendConfig(max_message_bytes=BIG)
    assert not admit_produce(_record(codec, 0), config=config).costly
    huge = _record(codec, 2 * INLINE_PAYLOAD_BYTES)
    admitted = admit_produce(huge, config=config)
    assert admitted.costly
    completed = complete_produce(admitted, log_end_offset=5, leader_epoch=2, now_ms=NOW,
                                 config=config)
    assert completed == validate_produce(huge, log_end_offset=5, leader_epoch=2, now_ms=NOW,
                                         config=config)


@pytest.mark.parametrize("compression_type", ["producer", "zstd"])  # in place, rebuilt
def test_placed_is_the_batch_validated_where_the_log_ends_now(compression_type: str) -> None:
    config = AppendConfig(compression_type=compression_type)
    records = encode_batch(0, [(b"k", b"a"), (None, b"b")], partition_leader_epoch=-1,
                           timestamp=NOW)
    early = validate_produce(records, log_end_offset=0, leader_epoch=0, now_ms=NOW,
                             config=config)
    assert placed(early, log_end_offset=0, leader_epoch=0) is early
    assert placed(early, log_end_offset=100, leader_epoch=5) == validate_produce(
        records, log_end_offset=100, leader_epoch=5, now_ms=NOW, config=config)
