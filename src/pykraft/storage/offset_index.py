"""A segment's ``.index``: sparse (relative offset, file position) pairs, as Kafka's.

Entry layout (8 bytes, big-endian): int32 offset relative to the segment's base offset,
int32 byte position of a batch in the ``.log`` file. An entry's offset is the last offset of
the batch (or batches) appended at that position, so :meth:`OffsetIndex.lookup` gives the
largest entry at or below a target and the caller scans batch headers forward from there.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from pykraft.errors import StorageError
from pykraft.storage.index_file import CorruptIndexError, IndexFile

INDEX_SUFFIX = ".index"
_ENTRY = struct.Struct(">ii")


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(IndexFile):
    """The offset index of one segment; not thread-safe."""

    entry_size = _ENTRY.size

    def _relative(self, slot: int) -> int:
        return int(_ENTRY.unpack_from(self._buffer(), slot * self.entry_size)[0])

    def entry(self, slot: int) -> OffsetPosition:
        relative, position = _ENTRY.unpack_from(self._buffer(), slot * self.entry_size)
        return OffsetPosition(self.base_offset + relative, position)

    @property
    def last_offset(self) -> int:
        """The last entry's offset, the base offset when empty."""
        return self.entry(self.entries - 1).offset if self.entries else self.base_offset

    def can_append_offset(self, offset: int) -> bool:
        """Whether ``offset`` fits the int32 relative offset (else the segment must roll)."""
        return 0 <= offset - self.base_offset <= 0x7FFFFFFF

    def append(self, offset: int, position: int) -> None:
        if self.entries and offset <= self.last_offset:
            raise StorageError(f"{self.path}: attempt to append an offset ({offset}) to slot "
                               f"{self.entries} no larger than the last offset appended "
                               f"({self.last_offset})")
        if not self.can_append_offset(offset):
            raise StorageError(f"{self.path}: offset {offset} does not fit relative to the "
                               f"base offset {self.base_offset}")
        relative = offset - self.base_offset
        self._write_slot(lambda buf, at: _ENTRY.pack_into(buf, at, relative, position))

    def lookup(self, target: int) -> OffsetPosition:
        """The largest entry with offset <= ``target``; (base offset, 0) if none is."""
        slot = self.largest_lower_bound(target - self.base_offset, self._relative)
        return OffsetPosition(self.base_offset, 0) if slot < 0 else self.entry(slot)

    def fetch_upper_bound(self, position: int) -> int | None:
        """The offset of the first entry at or past byte ``position`` (Kafka's
        ``fetchUpperBoundOffset``: every batch a read up to there returned lies below it);
        None when no entry is that far."""
        slot = self.largest_lower_bound(position - 1, self._position) + 1
        return self.entry(slot).offset if slot < self.entries else None

    def _position(self, slot: int) -> int:
        return int(_ENTRY.unpack_from(self._buffer(), slot * self.entry_size)[1])

    def keep_entries_below(self, offset: int) -> int:
        """After a crash, keep the leading entries whose offsets and positions increase and
        whose offset is below ``offset``, dropping the rest (a preallocated index holds
        zeros past its real entries); returns how many are kept. A real entry never points
        at position 0: the first batch of a segment is never indexed."""
        size = self.entries * self.entry_size
        data = self._buffer()[:size] if size else b""
        kept, last_relative, last_position = 0, -1, 0
        for relative, position in _ENTRY.iter_unpack(data):
            if (relative <= last_relative or position <= last_position
                    or self.base_offset + relative >= offset):
                break
            kept, last_relative, last_position = kept + 1, relative, position
        self.truncate_entries(kept)
        return kept

    def sanity_check(self) -> None:
        """Kafka's ``OffsetIndex.sanityCheck``: a non-empty index ends at or after its base."""
        if self.entries and self.last_offset < self.base_offset:
            raise CorruptIndexError(f"Corrupt index found, index file ({self.path}) has non-zero "
                                    f"size but the last offset is {self.last_offset} which is "
                                    f"less than the base offset {self.base_offset}.")
        self.check_length()


def indexed_position(path: Path, base_offset: int, target: int) -> int:
    """Where a reader looking for ``target`` may start scanning a segment: the position of
    the largest entry at or below it, read without opening the file as an index. Entries
    stop at the first that does not increase (an active index is preallocated with zeros);
    0 when the file is missing or has no such entry."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    best, last = 0, -1
    for relative, position in _ENTRY.iter_unpack(data[: len(data) - len(data) % _ENTRY.size]):
        if relative <= last or base_offset + relative > target:
            break
        best, last = position, relative
    return best
