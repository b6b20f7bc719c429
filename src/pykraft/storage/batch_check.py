"""Whether the bytes at a position of a segment are one intact v2 batch, and whether it
continues the log before it.

Used by every segment (:mod:`pykraft.storage.segment`) at append and in recovery, and by the
read-only checks of tools (:mod:`pykraft.storage.log_verify`): framing and CRC are checked
without decoding records. The continuity checks (exact next offset, leader epochs never going
back) are the metadata log's strict mode, since the CRC covers neither field.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass

import crc32c

from pykraft.errors import CorruptRecordError
from pykraft.records.batch import CRC_START, HEADER_SIZE, MAGIC, BatchHeader, read_header

_MAGIC_POSITION = 16
_MAGIC_BYTE = bytes([MAGIC])


class BatchProblemError(Exception):
    """Why the bytes at a position are not an intact batch (internal to recovery and append)."""


class EpochRegressionError(BatchProblemError):
    """An intact batch whose epoch is below its predecessor's.

    Unlike a torn write this is ambiguous: the previous batch's epoch (outside the CRC) may
    be the damaged one, so recovery must not "repair" it by dropping this batch.
    """


def check_framing(buf: memoryview, pos: int, end: int) -> BatchHeader:
    """The header of an intact batch at ``pos``: complete, sane header, matching CRC."""
    if end - pos < HEADER_SIZE:
        raise BatchProblemError(f"truncated batch header ({end - pos} of {HEADER_SIZE} bytes)")
    try:
        header = read_header(buf, pos)
    except CorruptRecordError as exc:
        raise BatchProblemError(str(exc)) from None
    if header.size > end - pos:
        raise BatchProblemError(
            f"truncated batch: {header.size} bytes declared, {end - pos} present"
        )
    computed = crc32c.crc32c(buf[pos + CRC_START : pos + header.size])
    if computed != header.crc:
        raise BatchProblemError(
            f"CRC mismatch: stored {header.crc:#010x}, computed {computed:#010x}"
        )
    return header


@dataclass(slots=True)
class Continuity:
    """Where the next batch of a strictly checked log must start: its base offset, and the
    leader epoch it must not go below. Advanced batch by batch across segments."""

    expected_offset: int
    min_epoch: int = 0

    def check(self, buf: memoryview, pos: int, end: int) -> BatchHeader:
        """An intact batch at ``pos`` that continues the log; then expect the next one.

        The expected offset is trustworthy (the previous batch's lastOffsetDelta is
        CRC-covered), so an offset mismatch blames this batch; an epoch going backwards may
        be either batch's fault (:class:`EpochRegressionError`).
        """
        header = check_framing(buf, pos, end)
        problem = continuity_problem(header, self.expected_offset, self.min_epoch)
        if problem is not None:
            if header.base_offset != self.expected_offset:
                raise BatchProblemError(problem)
            raise EpochRegressionError(problem)
        self.expected_offset = header.next_offset
        self.min_epoch = header.partition_leader_epoch
        return header


def continuity_problem(
    header: BatchHeader, expected_offset: int, min_epoch: int | None
) -> str | None:
    """Why a batch does not continue the log (its offset, or with ``min_epoch`` given, its
    leader epoch going back); None when it does. Tools report damage with these words too."""
    if header.base_offset != expected_offset:
        return f"base offset {header.base_offset} does not continue the log at {expected_offset}"
    if min_epoch is not None and header.partition_leader_epoch < min_epoch:
        return (f"leader epoch {header.partition_leader_epoch} is below the previous epoch "
                f"{min_epoch}")
    return None


def valid_batch_follows(mapped: mmap.mmap | bytes, pos: int, end: int, min_offset: int) -> bool:
    """Whether an intact batch at or past ``min_offset`` starts anywhere after ``pos``.

    This separates a damaged *tail* (a torn or corrupt last batch: nothing valid after it,
    safe to drop) from damage in the *middle* (good batches follow: dropping them would lose
    acknowledged data, so strict recovery must stop instead).
    """
    search = pos + 1 + _MAGIC_POSITION
    with memoryview(mapped) as buf:
        while (found := mapped.find(_MAGIC_BYTE, search, end)) >= 0:
            search = found + 1
            try:
                header = check_framing(buf, found - _MAGIC_POSITION, end)
            except BatchProblemError:
                continue
            if header.base_offset >= min_offset:
                return True
    return False
