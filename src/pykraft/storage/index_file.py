"""The memory-mapped, preallocated index file shared by ``.index`` and ``.timeindex``.

As Kafka's ``AbstractIndex``: a new index file is preallocated to ``max_index_size`` bytes
(rounded down to whole entries) and mapped; the entry count lives in memory. A reopened file
is assumed trimmed, so its entry count is its length over the entry size; an active index
left untrimmed by a crash is therefore garbage past its real entries, which is why recovery
rebuilds the indexes of every segment from the recovery point on. Rolling or closing a
segment trims its indexes to their entries (:meth:`IndexFile.trim_to_valid_size`).

Subclasses define the entry layout (:mod:`pykraft.storage.offset_index`,
:mod:`pykraft.storage.time_index`); lookups are a binary search on a key read from the map.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from pykraft.errors import StorageError


class CorruptIndexError(StorageError):
    """An index file failing Kafka's sanity check; the segment's indexes are rebuilt."""


class IndexFile:
    """An index of fixed-size big-endian entries over a segment starting at ``base_offset``."""

    entry_size: ClassVar[int]

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        if max_index_size < self.entry_size:
            raise ValueError(f"index size {max_index_size} is below one entry "
                             f"({self.entry_size} bytes)")
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        created = not path.exists()
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if created:
                os.ftruncate(self._fd, self._round(max_index_size))
            self._length = os.fstat(self._fd).st_size
            self._map = self._map_file()
        except BaseException:
            os.close(self._fd)
            self._fd = -1
            raise
        self.entries = 0 if created else self._length // self.entry_size

    def _round(self, size: int) -> int:
        return size - size % self.entry_size

    def _map_file(self) -> mmap.mmap | None:
        return mmap.mmap(self._fd, self._length) if self._length else None

    @property
    def max_entries(self) -> int:
        return self._length // self.entry_size

    @property
    def length(self) -> int:
        """The file's current length in bytes (preallocated while the segment is active)."""
        return self._length

    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def _buffer(self) -> mmap.mmap:
        if self._map is None:
            raise StorageError(f"{self.path}: index has no room (trimmed to 0 entries)")
        return self._map

    def _write_slot(self, pack: Callable[[mmap.mmap, int], None]) -> None:
        if self.entries >= self.max_entries:
            raise StorageError(f"{self.path}: attempt to append to a full index "
                               f"({self.entries} entries)")
        pack(self._buffer(), self.entries * self.entry_size)
        self.entries += 1

    def largest_lower_bound(self, target: int, key: Callable[[int], int]) -> int:
        """The last slot whose key is <= ``target`` (keys increase), or -1 if none is."""
        low, high = 0, self.entries - 1
        if high < 0 or key(0) > target:
            return -1
        while low < high:
            mid = (low + high + 1) // 2
            if key(mid) <= target:
                low = mid
            else:
                high = mid - 1
        return low

    def _relative(self, slot: int) -> int:
        """The relative offset stored in ``slot`` (each layout places it differently)."""
        raise NotImplementedError

    def truncate_to(self, offset: int) -> None:
        """Remove the entries whose offset is at or above ``offset``."""
        relative = offset - self.base_offset
        slot = self.largest_lower_bound(relative, self._relative)
        if slot < 0 or self._relative(slot) == relative:
            self.truncate_entries(max(slot, 0))
        else:
            self.truncate_entries(slot + 1)

    def truncate_entries(self, entries: int) -> None:
        """Keep only the first ``entries`` entries (the file keeps its length)."""
        self.entries = min(self.entries, entries)

    def reset(self) -> None:
        """Drop every entry and make room for ``max_index_size`` bytes again (recovery)."""
        self.entries = 0
        self.resize(self.max_index_size)

    def resize(self, new_size: int) -> None:
        """Set the file length to ``new_size`` rounded to whole entries, keeping the entries."""
        length = self._round(new_size)
        if length == self._length:
            return
        if self._map is not None:
            self._map.close()
        os.ftruncate(self._fd, length)
        self._length = length
        self._map = self._map_file()
        self.entries = min(self.entries, self.max_entries)

    def trim_to_valid_size(self) -> None:
        """Cut the preallocated space off: the file then holds exactly its entries."""
        self.resize(self.entries * self.entry_size)

    def flush(self) -> None:
        if self._map is not None:
            self._map.flush()
        os.fsync(self._fd)

    def close(self) -> None:
        """Trim and close, as Kafka closes an index."""
        self.trim_to_valid_size()
        self.close_handler()

    def close_handler(self) -> None:
        """Close without trimming (the file is about to be deleted or renamed)."""
        if self._map is not None:
            self._map.close()
            self._map = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        """An index dropped unclosed does not keep its file open (its map closes itself)."""
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)

    def check_length(self) -> None:
        """Kafka's last sanity rule, shared by both indexes: whole entries only."""
        if self._length % self.entry_size:
            raise CorruptIndexError(f"Index file {self.path} is corrupt, found {self._length} "
                                    f"bytes which is neither positive nor a multiple of "
                                    f"{self.entry_size}")
