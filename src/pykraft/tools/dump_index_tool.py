"""``dump-log`` for a user partition's side files: ``.index``, ``.timeindex``, ``.txnindex``,
``.snapshot``.

Output follows Kafka's ``DumpLogSegments`` line for line: ``offset: O position: P`` per
offset-index entry, ``timestamp: T offset: O`` per time-index entry (both stop at the first
zeroed slot of an untrimmed, preallocated index, as Kafka does), and one line per producer
of a producer-state snapshot or aborted transaction. Each index entry is checked against
the segment next to it; what disagrees is collected in an :class:`IndexReport` and printed
on stderr after every file (Kafka's "Mismatches in :<file>" and the time index reports).
``--index-sanity-check``
runs the broker's start-up check instead (:class:`CorruptIndexError` when it fails), and
``--verify-index-only`` checks without printing the entries.

Interface::

    report = IndexReport()
    lines = dump_offset_index(path, IndexOptions(...), report)   # or dump_time_index
    lines = dump_producer_snapshot(path)        # CorruptSnapshotError: Kafka's message
    lines = dump_txn_index(path)                # CorruptIndexError: an unknown version
    report.error_lines()                        # stderr lines, after every file
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pykraft.errors import CorruptRecordError, PyKraftError
from pykraft.log.batch_records import batch_records, record_timestamp
from pykraft.log.producer_snapshot import decode_snapshot
from pykraft.records.batch import NO_TIMESTAMP, RecordBatch, iter_batches
from pykraft.storage.index_file import IndexFile
from pykraft.storage.offset_index import INDEX_SUFFIX, OffsetIndex
from pykraft.storage.segment import LOG_SUFFIX
from pykraft.storage.time_index import TimeIndex
from pykraft.storage.txn_index import CURRENT_VERSION, TransactionIndex

_Index = TypeVar("_Index", bound=IndexFile)
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # Kafka's --max-message-size default


class IndexDumpError(PyKraftError):
    """An index entry pointing where no batch can be read (Kafka fails with an exception)."""


@dataclass(frozen=True, slots=True)
class IndexOptions:
    index_sanity_check: bool = False
    verify_index_only: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE


Pairs = dict[str, list[tuple[int, int]]]


@dataclass(slots=True)
class IndexReport:
    """What the index checks found, per absolute file path, in Kafka's report order."""

    offset_mismatches: Pairs = field(default_factory=dict)
    timestamp_mismatches: Pairs = field(default_factory=dict)
    out_of_order: Pairs = field(default_factory=dict)
    not_found: Pairs = field(default_factory=dict)
    non_consecutive: Pairs = field(default_factory=dict)

    def error_lines(self) -> Iterator[str]:
        """Kafka's stderr reports; its offset lists are built by prepending, so newest first."""
        for name, pairs in self.offset_mismatches.items():
            yield f"Mismatches in :{name}"
            yield from (f"  Index offset: {a}, log offset: {b}" for a, b in reversed(pairs))
        for name, pairs in self.timestamp_mismatches.items():
            yield f"Found timestamp mismatch in :{name}"
            yield from (f"  Index timestamp: {a}, log timestamp: {b}" for a, b in pairs)
        for name, pairs in self.out_of_order.items():
            yield f"Found out of order timestamp in :{name}"
            yield from (f"  Index timestamp: {a}, Previously indexed timestamp: {b}"
                        for a, b in pairs)
        for name, pairs in self.not_found.items():
            yield f"The following indexed offsets are not found in :{name}"
            yield from (f"Indexed offset: {a}, found log offset: {b}" for a, b in pairs)
        for name, pairs in self.non_consecutive.items():
            yield f"Non-consecutive offsets in {name}"
            yield from (f"  {a} is followed by {b}" for a, b in reversed(pairs))


def _add(pairs: Pairs, path: Path, pair: tuple[int, int]) -> None:
    pairs.setdefault(str(path.absolute()), []).append(pair)


def _base_offset(path: Path) -> int:
    """Kafka takes the digits before the first dot of the name."""
    return int(path.name.split(".")[0])


def _sibling(path: Path, suffix: str) -> Path:
    return path.absolute().parent / (path.name.split(".")[0] + suffix)


def _open(cls: type[_Index], path: Path) -> _Index:
    """An existing index read as it is (entries = length / entry size, never resized)."""
    return cls(path, _base_offset(path), max(path.stat().st_size, cls.entry_size))


def _batches(data: bytes, position: int) -> Iterator[RecordBatch]:
    """Whole batches from ``position``; a partial or unreadable one ends them (as Kafka's
    file iterator ends at a partial batch)."""
    try:
        yield from iter_batches(data, verify_crc=False, start=position)
    except CorruptRecordError:
        return


def dump_offset_index(path: Path, options: IndexOptions, report: IndexReport) -> list[str]:
    """Kafka's ``dumpIndex``: each entry's batch must end at the entry's offset."""
    log_data = _sibling(path, LOG_SUFFIX).read_bytes()
    index = _open(OffsetIndex, path)
    try:
        if index.entries == 0:
            return [f"{path} is empty."]
        if options.index_sanity_check:
            index.sanity_check()
            return [f"{path} passed sanity check."]
        lines = []
        for slot in range(index.entries):
            entry = index.entry(slot)
            if entry.offset == index.base_offset and slot > 0:
                break  # the zeroed rest of a preallocated index
            window = log_data[: entry.position + options.max_message_size]
            first = next(_batches(window, entry.position), None)
            if first is None:
                raise IndexDumpError(f"{path}: no complete batch at position {entry.position} "
                                     f"of {_sibling(path, LOG_SUFFIX)} for offset "
                                     f"{entry.offset}")
            if first.last_offset != entry.offset:
                _add(report.offset_mismatches, path, (entry.offset, first.last_offset))
            if not options.verify_index_only:
                lines.append(f"offset: {entry.offset} position: {entry.position}")
        return lines
    finally:
        index.close_handler()


def dump_time_index(path: Path, options: IndexOptions, report: IndexReport) -> list[str]:
    """Kafka's ``dumpTimeIndex``: each entry's offset must end a batch whose largest record
    timestamp is the entry's, and the entries' timestamps must increase."""
    log_data = _sibling(path, LOG_SUFFIX).read_bytes()
    index_path = _sibling(path, INDEX_SUFFIX)
    offsets = _open(OffsetIndex, index_path) if index_path.exists() else None
    time_index = _open(TimeIndex, path)
    try:
        if options.index_sanity_check:
            time_index.sanity_check()
            return [f"{path} passed sanity check."]
        lines = []
        previous = NO_TIMESTAMP
        for slot in range(time_index.entries):
            entry = time_index.entry(slot)
            if entry.offset == time_index.base_offset and slot > 0:
                break
            start = offsets.lookup(entry.offset).position if offsets is not None else 0
            found = next((b for b in _batches(log_data, start)
                          if b.last_offset >= entry.offset), None)
            if found is None:
                _add(report.not_found, path, (entry.offset, -1))
            elif found.last_offset != entry.offset:
                _add(report.not_found, path, (entry.offset, found.last_offset))
            else:
                logged = max((record_timestamp(found.header, r) for r in batch_records(found)),
                             default=NO_TIMESTAMP)
                if logged != entry.timestamp:
                    _add(report.timestamp_mismatches, path, (entry.timestamp, logged))
                if previous >= entry.timestamp:
                    _add(report.out_of_order, path, (entry.timestamp, previous))
            if not options.verify_index_only:
                lines.append(f"timestamp: {entry.timestamp} offset: {entry.offset}")
            previous = entry.timestamp
        return lines
    finally:
        time_index.close_handler()
        if offsets is not None:
            offsets.close_handler()


def dump_producer_snapshot(path: Path) -> list[str]:
    """Kafka's ``dumpProducerIdSnapshot``: one line per producer, its last batch if kept."""
    lines = []
    for entry in decode_snapshot(path.read_bytes()):
        txn = entry.current_txn_first_offset
        line = (f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
                f"coordinatorEpoch: {entry.coordinator_epoch} currentTxnFirstOffset: "
                f"{'OptionalLong.empty' if txn is None else f'OptionalLong[{txn}]'} "
                f"lastTimestamp: {entry.last_timestamp} ")
        if entry.batches:
            batch = entry.batches[0]
            line += (f"firstSequence: {batch.first_seq} lastSequence: {batch.last_seq} "
                     f"lastOffset: {batch.last_offset} offsetDelta: {batch.offset_delta} "
                     f"timestamp: {batch.timestamp}")
        lines.append(line)
    return lines


def dump_txn_index(path: Path) -> list[str]:
    """Kafka's ``dumpTxnIndex``: one line per aborted transaction."""
    index = TransactionIndex(path, 0)  # the start offset matters to its sanity check only
    try:
        return [f"version: {CURRENT_VERSION} producerId: {txn.producer_id} firstOffset: "
                f"{txn.first_offset} lastOffset: {txn.last_offset} lastStableOffset: "
                f"{txn.last_stable_offset}" for txn in index.all()]
    finally:
        index.close()
