"""Read-only checks of segment files, for tools that must not change a log they read.

:func:`verify_segments` applies the metadata log's strict recovery rules
(:meth:`pykraft.storage.partition_log.PartitionLog.open` with ``strict=True``) without
opening the log: a torn tail is reported as a :class:`TornTail` (a server would cut it), any
other damage raises :class:`~pykraft.errors.CorruptLogError` with the file and position.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pykraft.errors import CorruptLogError, CorruptRecordError
from pykraft.records.batch import HEADER_SIZE, read_header
from pykraft.storage.batch_check import (
    BatchProblemError,
    Continuity,
    EpochRegressionError,
    valid_batch_follows,
)
from pykraft.storage.file_error import StateFileError
from pykraft.storage.segment import LOG_SUFFIX, is_segment_name


@dataclass(frozen=True, slots=True)
class TornTail:
    """Bytes at the end of the last segment that are no valid batch and that no valid batch
    follows: a write cut short by a crash, or one a running node is making right now. The
    server truncates them at start-up; read-only tools read up to them and warn."""

    path: Path
    position: int
    size: int  # from ``position`` to the end of the file
    reason: str

    def cut(self, path: Path, data: bytes) -> bytes:
        """``data`` (the content of ``path``) without this tail."""
        return data[: self.position] if path == self.path else data


def is_last_segment(path: Path) -> bool:
    """No segment with a higher base offset sits next to ``path``: its end is the log's."""
    return not any(other.name > path.name for other in path.parent.glob("*" + LOG_SUFFIX)
                   if is_segment_name(other.name))


def is_torn_tail(data: mmap.mmap | bytes, position: int, expected_offset: int) -> bool:
    """Whether damage at ``position`` only ends the data (nothing valid from
    ``expected_offset`` on follows), which the server drops rather than refuses."""
    return not valid_batch_follows(data, position, len(data), expected_offset)


def verify_segments(paths: Sequence[Path]) -> TornTail | None:
    """Check segment files in order without changing them, as the metadata log's strict
    recovery checks them: returns the torn tail of the last segment that it would truncate,
    and raises :class:`CorruptLogError` naming the file and byte position for any other
    damage (a CRC mismatch with valid batches after it, an offset gap, an epoch going
    back)."""
    continuity: Continuity | None = None
    for path in paths:
        if is_segment_name(path.name):
            named = int(path.name[:20])
            if continuity is not None and named != continuity.expected_offset:
                raise CorruptLogError(str(path), 0, f"segment base offset {named} does not "
                                      f"continue the previous segment, which ends at offset "
                                      f"{continuity.expected_offset}")
            continuity = continuity or Continuity(named)
        try:
            data = _map(path)
        except OSError as exc:
            raise StateFileError(path, f"cannot read: {exc.strerror or exc}") from None
        try:
            if continuity is None:  # an unconventional name: its first batch anchors the log
                continuity = _anchor(data)
            torn = _check_file(path, data, continuity)
        finally:
            if isinstance(data, mmap.mmap):
                data.close()
        if torn is not None:
            return torn
    return None


def _map(path: Path) -> mmap.mmap | bytes:
    """The file's bytes, mapped rather than read (segments may be a gigabyte)."""
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        return mmap.mmap(file.fileno(), size, access=mmap.ACCESS_READ) if size else b""


def _anchor(data: mmap.mmap | bytes) -> Continuity | None:
    try:
        return Continuity(read_header(data[:HEADER_SIZE], 0).base_offset)
    except CorruptRecordError:
        return None  # too damaged to anchor: the check below names the damage


def _check_file(path: Path, data: mmap.mmap | bytes, continuity: Continuity | None
                ) -> TornTail | None:
    """Check one file's batches, advancing ``continuity``; its torn tail, if any."""
    with memoryview(data) as buf:
        pos = 0
        while pos < len(data):
            try:
                if continuity is None:
                    raise BatchProblemError("no intact batch header to start from")
                header = continuity.check(buf, pos, len(data))
            except BatchProblemError as problem:
                if (not isinstance(problem, EpochRegressionError) and continuity is not None
                        and is_last_segment(path)
                        and is_torn_tail(data, pos, continuity.expected_offset)):
                    return TornTail(path, pos, len(data) - pos, str(problem))
                raise CorruptLogError(str(path), pos, str(problem)) from None
            pos += header.size
    return None
