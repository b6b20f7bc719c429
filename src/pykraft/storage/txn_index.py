"""A segment's aborted-transaction index (``.txnindex``), in Kafka's bytes.

Each entry is Kafka's ``AbortedTxn`` (34 bytes, big-endian): int16 version (0), producer id,
first offset, last offset (the ABORT marker's) and the last stable offset when the marker was
written, all int64. Entries are appended in marker order, so their last offsets increase.
As Kafka's ``TransactionIndex`` the file exists only once a segment holds an abort, and it is
read from the file at each read_committed fetch (the page cache keeps it), never held whole in
memory: a segment of small aborted transactions can hold millions of entries.

A fetch of [fetch offset, upper bound) needs every entry with ``last >= fetch offset`` and
``first < upper bound``: :meth:`TransactionIndex.collect` returns this segment's, and whether
the search is complete (an entry whose last stable offset reaches the upper bound proves no
later segment holds an abort that began below it).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pykraft.errors import StorageError
from pykraft.storage.index_file import CorruptIndexError

ENTRY: Final = struct.Struct(">hqqqq")
CURRENT_VERSION: Final = 0
#: Entries read per ``pread`` while scanning (about 68 KiB).
_READ_ENTRIES: Final = 2048


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction of a segment (Kafka's ``AbortedTxn``)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def pack(self) -> bytes:
        return ENTRY.pack(CURRENT_VERSION, self.producer_id, self.first_offset,
                          self.last_offset, self.last_stable_offset)


@dataclass(frozen=True, slots=True)
class TxnIndexSearch:
    """A segment's entries overlapping a fetch, and whether no later segment can add any."""

    aborted: list[AbortedTxn]
    complete: bool


class TransactionIndex:
    """The ``.txnindex`` of the segment starting at ``start_offset``; opened lazily."""

    def __init__(self, path: Path, start_offset: int) -> None:
        self.path = path
        self.start_offset = start_offset
        self._fd: int | None = None
        self._size = 0
        self._last_offset: int | None = None
        if path.exists():
            self._open()
            try:
                last = self._last_entry()
            except BaseException:
                self.close()
                raise
            self._last_offset = None if last is None else last.last_offset

    @property
    def size(self) -> int:
        """Bytes of whole entries in the file (0 when it does not exist)."""
        return self._size

    def append(self, txn: AbortedTxn) -> None:
        """Add an entry; last offsets must increase (markers are appended in order)."""
        if self._last_offset is not None and txn.last_offset <= self._last_offset:
            raise ValueError(
                f"The last offset of appended transactions must increase sequentially, but "
                f"{txn.last_offset} is not greater than current last offset "
                f"{self._last_offset} of index {self.path}")
        fd = self._open()
        data = txn.pack()
        if os.pwrite(fd, data, self._size) != len(data):
            raise StorageError(f"{self.path}: short write of an aborted transaction")
        self._size += len(data)
        self._last_offset = txn.last_offset

    def collect(self, fetch_offset: int, upper_bound: int) -> TxnIndexSearch:
        """The entries overlapping [fetch_offset, upper_bound), Kafka's
        ``collectAbortedTxns``: the scan stops at the first entry whose last stable offset
        reaches ``upper_bound``."""
        found: list[AbortedTxn] = []
        for txn in self._entries():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return TxnIndexSearch(found, True)
        return TxnIndexSearch(found, False)

    def all(self) -> list[AbortedTxn]:
        """Every entry, in order (dump-log, tests)."""
        return list(self._entries())

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or above ``offset`` (log truncation)."""
        position = 0
        last: int | None = None
        for txn in self._entries():
            if txn.last_offset >= offset:
                break
            position += ENTRY.size
            last = txn.last_offset
        if self._fd is not None and position < self._size:
            os.ftruncate(self._fd, position)
            self._size = position
            self._last_offset = last

    def reset(self) -> None:
        """Remove every entry (recovery rebuilds the index from the segment)."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
        self._size = 0
        self._last_offset = None

    def sanity_check(self) -> None:
        """Kafka's check: no entry's marker lies before the segment's start."""
        for txn in self._entries():
            if txn.last_offset < self.start_offset:
                raise CorruptIndexError(
                    f"Last offset of aborted transaction {txn} in index {self.path} is less "
                    f"than start offset {self.start_offset}")

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        """An index dropped unclosed does not keep its file open."""
        fd: int | None = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)

    def delete(self) -> None:
        """Close and remove the file, if any."""
        self.close()
        self.path.unlink(missing_ok=True)

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            length = os.fstat(self._fd).st_size
            self._size = length - length % ENTRY.size  # a torn last entry is ignored
        return self._fd

    def _entries(self) -> Iterator[AbortedTxn]:
        """The file's entries in order, read a chunk at a time."""
        position = 0
        while self._fd is not None and position < self._size:
            length = min(_READ_ENTRIES * ENTRY.size, self._size - position)
            data = os.pread(self._fd, length, position)
            if len(data) != length:
                raise StorageError(f"{self.path}: short read at {position}")
            position += length
            yield from _unpack(data, self.path)

    def _last_entry(self) -> AbortedTxn | None:
        if self._fd is None or self._size == 0:
            return None
        return _unpack(os.pread(self._fd, ENTRY.size, self._size - ENTRY.size), self.path)[0]


def read_txn_index(path: Path) -> list[AbortedTxn]:
    """A ``.txnindex`` file's entries, read without opening it for writing (a reader of a
    broker's directory, which may be read-only); a missing file has none, a torn last entry
    is ignored as the broker ignores it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return _unpack(data[:len(data) - len(data) % ENTRY.size], path)


def _unpack(data: bytes, path: Path) -> list[AbortedTxn]:
    out = []
    for version, producer_id, first, last, stable in ENTRY.iter_unpack(data):
        if version > CURRENT_VERSION:
            raise CorruptIndexError(f"Unexpected aborted transaction version {version} in "
                                    f"transaction index {path}, current version is "
                                    f"{CURRENT_VERSION}")
        out.append(AbortedTxn(producer_id, first, last, stable))
    return out
