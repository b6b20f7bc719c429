"""A segment's ``.timeindex``: sparse (max timestamp so far, relative offset), as Kafka's.

Entry layout (12 bytes, big-endian): int64 the largest batch timestamp seen so far in the
segment, int32 the relative offset of the batch that carried it. Entries are appended only
when the timestamp grows, so both columns increase. One slot is kept free while active
(:meth:`TimeIndex.is_full`) for the entry forced in when the segment rolls or closes.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from pykraft.errors import StorageError
from pykraft.records.batch import NO_TIMESTAMP
from pykraft.storage.index_file import CorruptIndexError, IndexFile

TIME_INDEX_SUFFIX = ".timeindex"
_ENTRY = struct.Struct(">qi")


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(IndexFile):
    """The time index of one segment; not thread-safe."""

    entry_size = _ENTRY.size

    def _timestamp(self, slot: int) -> int:
        return int(_ENTRY.unpack_from(self._buffer(), slot * self.entry_size)[0])

    def _relative(self, slot: int) -> int:
        return int(_ENTRY.unpack_from(self._buffer(), slot * self.entry_size)[1])

    def entry(self, slot: int) -> TimestampOffset:
        timestamp, relative = _ENTRY.unpack_from(self._buffer(), slot * self.entry_size)
        return TimestampOffset(timestamp, self.base_offset + relative)

    def is_full(self) -> bool:
        return self.entries >= self.max_entries - 1

    @property
    def last_entry(self) -> TimestampOffset:
        """The last entry; (-1, base offset) when empty."""
        if self.entries:
            return self.entry(self.entries - 1)
        return TimestampOffset(NO_TIMESTAMP, self.base_offset)

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) if the timestamp is above the last entry's."""
        if not skip_full_check and self.is_full():
            raise StorageError(f"{self.path}: attempt to append to a full time index "
                               f"({self.entries} entries)")
        last = self.last_entry
        if self.entries and offset < last.offset:
            raise StorageError(f"{self.path}: attempt to append an offset ({offset}) smaller "
                               f"than the last offset appended ({last.offset})")
        if self.entries and timestamp < last.timestamp:
            raise StorageError(f"{self.path}: attempt to append a timestamp ({timestamp}) "
                               f"smaller than the last timestamp appended ({last.timestamp})")
        if timestamp > last.timestamp:
            relative = offset - self.base_offset
            self._write_slot(lambda buf, at: _ENTRY.pack_into(buf, at, timestamp, relative))

    def keep_entries_up_to(self, offset: int) -> int:
        """After a crash, keep the leading entries whose timestamps increase and offsets do
        not decrease, up to ``offset`` inclusive, dropping the rest (a preallocated index
        holds zeros past its real entries); returns how many are kept."""
        size = self.entries * self.entry_size
        data = self._buffer()[:size] if size else b""
        kept, last_timestamp, last_relative = 0, NO_TIMESTAMP, 0
        for timestamp, relative in _ENTRY.iter_unpack(data):
            if (timestamp <= last_timestamp or relative < last_relative
                    or self.base_offset + relative > offset):
                break
            kept, last_timestamp, last_relative = kept + 1, timestamp, relative
        self.truncate_entries(kept)
        return kept

    def lookup(self, target: int) -> TimestampOffset:
        """The largest entry with timestamp <= ``target``; (-1, base offset) if none is."""
        slot = self.largest_lower_bound(target, self._timestamp)
        return TimestampOffset(NO_TIMESTAMP, self.base_offset) if slot < 0 else self.entry(slot)

    def sanity_check(self) -> None:
        """Kafka's ``TimeIndex.sanityCheck``: timestamps and offsets not below the first."""
        if self.entries:
            last = self.last_entry
            first = self._timestamp(0)
            if last.timestamp < first:
                raise CorruptIndexError(f"Corrupt time index found, time index file "
                                        f"({self.path}) has non-zero size but the last "
                                        f"timestamp is {last.timestamp} which is less than the "
                                        f"first timestamp {first}")
            if last.offset < self.base_offset:
                raise CorruptIndexError(f"Corrupt time index found, time index file "
                                        f"({self.path}) has non-zero size but the last offset "
                                        f"is {last.offset} which is less than the first offset "
                                        f"{self.base_offset}")
        self.check_length()


def max_indexed_timestamp(path: Path) -> int | None:
    """The largest timestamp in a rolled segment's time index, read without opening it as
    an index (which would create or resize it): the entry forced in at the roll makes it the
    segment's max timestamp. None when the file is missing, empty or not whole entries."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if not data or len(data) % _ENTRY.size:
        return None
    return max(int(timestamp) for timestamp, _ in _ENTRY.iter_unpack(data))
