"""Whether the bytes at a position of a segment are one intact v2 batch.

Shared by the metadata log (:mod:`pykraft.storage.log`) and partition segments
(:mod:`pykraft.storage.segment`): both check a batch's framing and CRC without decoding its
records, at append and in recovery.
"""

from __future__ import annotations

import crc32c

from pykraft.errors import CorruptRecordError
from pykraft.records.batch import CRC_START, HEADER_SIZE, BatchHeader, read_header


class BatchProblemError(Exception):
    """Why the bytes at a position are not an intact batch (internal to recovery and append)."""


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
