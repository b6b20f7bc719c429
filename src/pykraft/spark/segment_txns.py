"""What a ``read_committed`` read of a partition's segment files needs, taken from the files
alone as a broker takes it from its log: the last stable offset at the high watermark, and
the aborted transactions.

- **Last stable offset.** Records of a transaction still open at the high watermark may yet
  be aborted; a ``read_committed`` consumer stops before the first of them (the LSO). The
  producer state is rebuilt as a broker's recovery rebuilds it: the newest
  ``<offset>.snapshot`` at or below the high watermark, then the batch headers (markers
  decoded) from there, each batch given to the producer state as a follower's.
- **Aborted transactions.** Each segment's ``.txnindex`` lists the transactions whose ABORT
  marker it holds (producer id, first and last offset); a ``read_committed`` consumer skips
  a transactional batch of that producer between those offsets, whichever segment holds it.

Files are only read, never opened for writing: the directory may be a live broker's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from pykraft.errors import PyKraftError
from pykraft.log.producer_snapshot import CorruptSnapshotError, decode_snapshot, snapshot_offset
from pykraft.log.producer_state import AppendOrigin, ProducerStateEntry, ProducerStateManager
from pykraft.log.transactions import Marker, apply_batches, read_marker
from pykraft.records.batch import HEADER_SIZE, BatchHeader, read_header
from pykraft.storage.segment import LOG_SUFFIX, TXN_INDEX_SUFFIX
from pykraft.storage.txn_index import AbortedTxn, read_txn_index

Aborted = tuple[int, int, int]
"""An aborted transaction as a task carries it: producer id, first and last offset."""


def last_stable_offset(directory: Path, bases: Sequence[int], high_watermark: int) -> int:
    """The partition's last stable offset when its high watermark is ``high_watermark``
    (``bases``: its segments' base offsets, ascending)."""
    state = ProducerStateManager(partition=directory.name)
    start = bases[0] if bases else 0
    snapshot = _newest_snapshot(directory, high_watermark)
    if snapshot is not None:
        offset, entries = snapshot
        state.load(entries, 0, offset)  # now 0: nothing expires in a read
        start = max(start, offset)
    for header, marker in _headers(directory, bases, start):
        if header.base_offset >= high_watermark:
            break
        for completed in apply_batches(state, ((header, marker),), AppendOrigin.REPLICATION):
            state.complete_txn(completed)
    state.on_high_watermark_updated(high_watermark)
    unstable = state.first_unstable_offset()
    return high_watermark if unstable is None else min(unstable, high_watermark)


def aborted_transactions(directory: Path, bases: Sequence[int]) -> list[AbortedTxn]:
    """Every segment's aborted transactions, in marker order."""
    return [txn for base in bases
            for txn in read_txn_index(directory / f"{base:020d}{TXN_INDEX_SUFFIX}")]


def overlapping(aborted: Sequence[AbortedTxn], start: int, end: int | None) -> tuple[Aborted, ...]:
    """Those of ``aborted`` with a record in ``[start, end)``, as a task carries them."""
    return tuple((txn.producer_id, txn.first_offset, txn.last_offset) for txn in aborted
                 if txn.last_offset >= start and (end is None or txn.first_offset < end))


def _newest_snapshot(directory: Path, at_most: int
                     ) -> tuple[int, list[ProducerStateEntry]] | None:
    """The newest readable producer snapshot at or below ``at_most``: (offset, entries)."""
    found = []
    for path in directory.glob("*.snapshot"):
        try:
            found.append((snapshot_offset(path.name), path))
        except ValueError:
            continue
    for offset, path in sorted(found, reverse=True):
        if offset > at_most:
            continue
        try:
            return offset, decode_snapshot(path.read_bytes())
        except (CorruptSnapshotError, FileNotFoundError):
            continue  # the broker deletes it too; an older one, or the whole log
    return None


def _headers(directory: Path, bases: Sequence[int], start: int
             ) -> Iterator[tuple[BatchHeader, Marker | None]]:
    """Each batch header at or after ``start`` (a control batch's marker decoded), segment
    after segment; a torn or damaged tail ends the walk, as it ends the log."""
    for index, base in enumerate(bases):
        following = bases[index + 1] if index + 1 < len(bases) else None
        if following is not None and following <= start:
            continue
        path = directory / f"{base:020d}{LOG_SUFFIX}"
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed below, a generator
        except FileNotFoundError:
            return  # deleted since (retention): what remains is newer
        with handle:
            size = os.fstat(handle.fileno()).st_size
            position = 0
            while position + HEADER_SIZE <= size:
                head = os.pread(handle.fileno(), HEADER_SIZE, position)
                try:
                    header = read_header(head)
                except PyKraftError:
                    return
                if position + header.size > size:
                    return
                marker = None
                if header.next_offset > start and header.is_control:
                    try:
                        marker = read_marker(header, os.pread(handle.fileno(), header.size,
                                                              position))
                    except PyKraftError:
                        return
                if header.next_offset > start:
                    yield header, marker
                position += header.size
