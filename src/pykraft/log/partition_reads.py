"""What a partition leader reads for clients (sans-I/O decisions over a partition's log):
Fetch's per-partition reads and byte budget, ListOffsets' answers and DeleteRecords' target
offset, by Kafka's rules (``ReplicaManager.readFromLog``, ``Partition.fetchOffsetForTimestamp``,
``Partition.deleteRecordsOnLeader``). No event loop, sockets or clocks; the log is read
through :class:`~pykraft.storage.partition_log.PartitionLog`.

Interface::

    isolation = fetch_isolation(replica_id, isolation_level)   # LOG_END for replicas
    reads = read_partitions(wanted, resolve, max_bytes=..., isolation=..., failed=None,
                            in_files=False)   # True: records left in the segment files
    #   wanted: PartitionFetch(key, fetch_offset, partition_max_bytes, last_fetched_epoch)
    #   in request order; resolve(key) -> ReadablePartition, the ErrorCode refusing it, or
    #   the PartitionRead answering it without a read (a preferred read replica named);
    #   every answer is a PartitionRead(error, records, high_watermark, last_stable_offset,
    #   log_start_offset, log_end_offset, diverging_epoch, aborted, preferred_read_replica);
    #   failed(part, error) is told of each I/O error (the caller takes the log directory
    #   offline)
    answer = list_offset(part, timestamp, isolation=..., failed=None)
    #   -> ListedOffset, or a TimestampWalk: walk.walk() (off the loop when walk.costly),
    #   then walked_offset(part, walk, its hit, None or error, ...) -> the same again
    target = delete_records_target(part, offset)                # -> offset or ErrorCode

A partition that cannot be read fails alone, as in Kafka's ``readFromLog``: a batch header
that no longer parses is CORRUPT_MESSAGE (Kafka's CorruptRecordException), an I/O error
KAFKA_STORAGE_ERROR; the other partitions of the request are answered as usual. Batches
are not CRC-checked on the way out (Kafka sends its file slices as they are): the
client's CRC check reports damaged records.

READ_COMMITTED reads stop at the last stable offset (the partition's: the first offset of a
transaction not yet ended, or ended by a marker not yet replicated) and list the aborted
transactions the read may meet, from the ``.txnindex`` files, as Kafka's ``LocalLog.read``.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, Protocol, TypeVar

from pykraft.errors import CorruptRecordError, OffsetOutOfRangeError, StorageError
from pykraft.log.batch_records import batch_record_times
from pykraft.messages.splice import Splice
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import ATTR_COMPRESSION_MASK, BatchHeader
from pykraft.records.compression import CodecError
from pykraft.replica.epochs import fetch_divergence
from pykraft.storage.partition_log import PartitionLog
from pykraft.storage.segment import TimestampAndOffset, first_record_at
from pykraft.storage.txn_index import AbortedTxn

# ListOffsets' special timestamps (ListOffsetsRequest.*_TIMESTAMP)
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6  # ListOffsets v11+ (KIP-1023)
DELETE_UP_TO_HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK
CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2
READ_COMMITTED = 1
UNKNOWN_TIMESTAMP = -1  # ListOffsetsResponse.UNKNOWN_TIMESTAMP
NO_OFFSET = -1
NO_EPOCH = -1
#: A batch by timestamp at most this large and uncompressed is walked at once: reading its
#: records costs less than a hop to another thread.
WALK_HERE_BYTES = 64 * 1024

log = logging.getLogger(__name__)


class FetchIsolation(enum.Enum):
    """How far a read may go: replicas to the log end, consumers to the high watermark,
    READ_COMMITTED consumers to the last stable offset (Kafka's ``FetchIsolation``)."""

    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"
    TXN_COMMITTED = "txn_committed"


class ReadablePartition(Protocol):
    """The leader replica's state a read needs (ReplicaManager's HostedPartition)."""

    @property
    def log(self) -> PartitionLog: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def last_stable_offset(self) -> int: ...


K = TypeVar("K")
#: Told of an I/O error reading a partition (the log directory's failure).
ReadFailed = Callable[[ReadablePartition, Exception], None]


@dataclass(frozen=True, slots=True)
class PartitionFetch(Generic[K]):
    """One partition of a Fetch request, ``key`` naming it for the resolver."""

    key: K
    fetch_offset: int
    partition_max_bytes: int
    last_fetched_epoch: int = NO_EPOCH  # v12+: the epoch of the fetcher's last batch


@dataclass(frozen=True, slots=True)
class PartitionRead:
    """One partition's answer; on error Kafka sends -1 offsets and no records. The log end
    offset is the leader's as of the read (a follower's progress is measured against it);
    ``diverging_epoch`` (epoch, end offset) tells a fetcher its log left the leader's.
    ``records`` are bytes, or a region of a segment file (a :class:`Splice`) for a read
    ``in_files``. ``aborted`` lists the aborted transactions a READ_COMMITTED read may
    meet (None for other reads). ``preferred_read_replica`` (KIP-392): the replica a
    consumer should fetch from instead, its records left unread (-1: none)."""

    error: ErrorCode
    records: bytes | Splice = b""
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    diverging_epoch: tuple[int, int] | None = None
    aborted: tuple[AbortedTxn, ...] | None = None
    preferred_read_replica: int = -1


@dataclass(frozen=True, slots=True)
class ListedOffset:
    """A ListOffsets partition answer (timestamp, offset and epoch -1 when none)."""

    error: ErrorCode
    timestamp: int = UNKNOWN_TIMESTAMP
    offset: int = NO_OFFSET
    leader_epoch: int = NO_EPOCH


def fetch_isolation(replica_id: int, isolation_level: int) -> FetchIsolation:
    """Kafka's ``FetchIsolation.of``: a replica (id >= 0) reads to the log end."""
    if replica_id >= 0:
        return FetchIsolation.LOG_END
    if isolation_level == READ_COMMITTED:
        return FetchIsolation.TXN_COMMITTED
    return FetchIsolation.HIGH_WATERMARK


def upper_bound(part: ReadablePartition, isolation: FetchIsolation) -> int:
    """The first offset a read under ``isolation`` must not return."""
    if isolation is FetchIsolation.LOG_END:
        return part.log_end_offset
    if isolation is FetchIsolation.TXN_COMMITTED:
        return part.last_stable_offset
    return part.high_watermark


def read_partition(part: ReadablePartition, fetch_offset: int, max_bytes: int, *,
                   isolation: FetchIsolation, min_one_batch: bool,
                   last_fetched_epoch: int = NO_EPOCH,
                   failed: ReadFailed | None = None, in_files: bool = False) -> PartitionRead:
    """Whole batches from the one holding ``fetch_offset`` up to the isolation bound.

    An offset below the log start or past the log end is OFFSET_OUT_OF_RANGE; one in
    (high watermark, log end] is not (trap 8): it reads nothing and shows the HW. With a
    ``last_fetched_epoch`` (Fetch v12+), a fetcher whose last epoch ends earlier here than
    its fetch offset, or is unknown here, gets the diverging epoch and no records
    (``Partition.readRecords``). A corrupt batch header is CORRUPT_MESSAGE and an I/O
    error KAFKA_STORAGE_ERROR (told to ``failed``), logged as Kafka's fetch errors are.
    ``in_files``: the records are left in the segment file (Kafka's ``FileRecords``).
    """
    hw, lso, start = part.high_watermark, part.last_stable_offset, part.log_start_offset
    end = part.log_end_offset
    verdict = fetch_divergence(part.log.leader_epochs, fetch_offset=fetch_offset,
                               last_fetched_epoch=last_fetched_epoch, log_start_offset=start,
                               log_end_offset=end)
    if isinstance(verdict, ErrorCode):
        return PartitionRead(verdict)
    if verdict is not None:
        return PartitionRead(ErrorCode.NONE, b"", hw, lso, start, end,
                             (verdict.epoch, verdict.end_offset))
    aborted: tuple[AbortedTxn, ...] | None = None
    try:
        if isolation is FetchIsolation.TXN_COMMITTED:
            records, found = part.log.read_committed(
                fetch_offset, max_bytes, max_offset=lso, min_one_batch=min_one_batch,
                in_files=in_files)
            aborted = tuple(found)
        else:
            read = part.log.read_region if in_files else part.log.read
            records = read(fetch_offset, max_bytes, max_offset=upper_bound(part, isolation),
                           min_one_batch=min_one_batch)
    except OffsetOutOfRangeError:
        return PartitionRead(ErrorCode.OFFSET_OUT_OF_RANGE)
    except (CorruptRecordError, StorageError, OSError) as exc:
        return PartitionRead(_unreadable(
            part, exc, failed, f"processing fetch with max size {max_bytes} from offset "
                               f"{fetch_offset}"))
    return PartitionRead(ErrorCode.NONE, records, hw, lso, start, end, aborted=aborted)


def records_size(records: bytes | Splice) -> int:
    """How many bytes of records a read returned, in memory or in a file."""
    return records.length if isinstance(records, Splice) else len(records)


def _unreadable(part: ReadablePartition, exc: Exception, failed: ReadFailed | None,
                doing: str) -> ErrorCode:
    """Kafka's error for a partition its read failed on (``Errors.forException``), logged:
    CORRUPT_MESSAGE for a corrupt batch, UNKNOWN_SERVER_ERROR for records that do not
    decompress (Kafka's KafkaException), else KAFKA_STORAGE_ERROR (an I/O error told to
    ``failed``)."""
    log.error("Error %s on partition %s: %s", doing, part.log.directory.name, exc)
    if isinstance(exc, CorruptRecordError):
        return ErrorCode.CORRUPT_MESSAGE
    if isinstance(exc, CodecError):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    if isinstance(exc, OSError) and failed is not None:
        failed(part, exc)
    return ErrorCode.KAFKA_STORAGE_ERROR


def read_partitions(wanted: Sequence[PartitionFetch[K]],
                    resolve: Callable[[K], ReadablePartition | ErrorCode | PartitionRead], *,
                    max_bytes: int, isolation: FetchIsolation,
                    failed: ReadFailed | None = None,
                    in_files: bool = False,
                    held_back: Callable[[K], bool] = lambda _key: False
                    ) -> list[PartitionRead]:
    """Read every partition in request order within ``max_bytes`` overall and each one's
    ``partition_max_bytes``; until some partition returned data its first batch is
    returned whole even when larger (KIP-74), so consumers never stall on a big batch.
    A partition ``resolve`` answers itself (a :class:`PartitionRead`) reads nothing.
    A partition ``held_back`` says so of, once resolved, is read but answered without
    records, which then count toward no limit (a replication throttle, as Kafka's
    ``readFromLog`` empties a throttled read).
    """
    reads: list[PartitionRead] = []
    remaining = max(0, max_bytes)
    min_one_batch = True
    for fetch in wanted:
        part = resolve(fetch.key)
        if isinstance(part, ErrorCode):
            reads.append(PartitionRead(part))
            continue
        if isinstance(part, PartitionRead):
            reads.append(part)
            continue
        read = read_partition(part, fetch.fetch_offset,
                              min(max(0, fetch.partition_max_bytes), remaining),
                              isolation=isolation, min_one_batch=min_one_batch,
                              last_fetched_epoch=fetch.last_fetched_epoch, failed=failed,
                              in_files=in_files)
        if held_back(fetch.key):
            read = replace(read, records=b"")
        if size := records_size(read.records):
            min_one_batch = False
            remaining = max(0, remaining - size)
        reads.append(read)
    return reads


@dataclass(frozen=True, slots=True)
class TimestampWalk:
    """A batch ListOffsets must read the records of: the first record at or after
    ``timestamp`` from ``after`` on may be in it. A compressed batch of a few kilobytes may
    expand to gigabytes, so the caller runs :meth:`walk` where it chooses (off the event
    loop when :attr:`costly`), then hands its outcome to :func:`walked_offset`. The bytes are
    a copy: appends, truncation or deletion of the log meanwhile do not change them."""

    header: BatchHeader
    data: bytes
    timestamp: int
    after: int

    @property
    def costly(self) -> bool:
        """Whether walking may take long: a compressed batch, or a large one."""
        return bool(self.header.attributes & ATTR_COMPRESSION_MASK) or (
            len(self.data) > WALK_HERE_BYTES)

    def walk(self) -> TimestampAndOffset | Exception | None:
        """The first record at or after the timestamp in this batch, None, or the error
        its records raised (a corrupt or undecodable batch). Pure."""
        try:
            return first_record_at(self.header, self.data, self.timestamp, self.after,
                                   batch_record_times)
        except (CorruptRecordError, CodecError) as exc:
            return exc


def list_offset(part: ReadablePartition, timestamp: int, *,
                isolation: FetchIsolation | None,
                failed: ReadFailed | None = None) -> ListedOffset | TimestampWalk:
    """ListOffsets for one partition (Kafka's ``Partition.fetchOffsetForTimestamp``);
    ``isolation`` None = a replica or debug request, which sees up to the log end. A log
    that cannot be read fails this partition alone, as for Fetch. A search by timestamp
    reaching a batch whose records must be read returns it as a :class:`TimestampWalk`.

    A consumer asking while the high watermark is still below the start of the leader's
    epoch (a new leader not caught up) gets OFFSET_NOT_AVAILABLE rather than a stale
    latest offset (trap 20); results at or past the last fetchable offset are not shown.
    """
    if timestamp == LATEST_TIMESTAMP:
        if _lagging(part, isolation):
            return ListedOffset(ErrorCode.OFFSET_NOT_AVAILABLE)
        return ListedOffset(ErrorCode.NONE, UNKNOWN_TIMESTAMP, _last_fetchable(part, isolation),
                            part.leader_epoch)
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        start = part.log_start_offset
        return ListedOffset(ErrorCode.NONE, UNKNOWN_TIMESTAMP, start, _epoch_at(part, start))
    if timestamp in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):
        return ListedOffset(ErrorCode.NONE)  # nothing is tiered: offset and epoch -1
    if timestamp == MAX_TIMESTAMP:
        try:
            stats = part.log.segment_stats()
        except StorageError as exc:
            return ListedOffset(_unreadable(part, exc, failed, "listing the max timestamp"))
        newest = max((s.largest_timestamp for s in stats if s.size), default=UNKNOWN_TIMESTAMP)
        if newest < 0:
            return ListedOffset(ErrorCode.NONE)
        timestamp = newest  # the first record carrying the largest timestamp
    return _search(part, timestamp, part.log_start_offset, isolation, failed)


def walked_offset(part: ReadablePartition, walked: TimestampWalk,
                  outcome: TimestampAndOffset | Exception | None, *,
                  isolation: FetchIsolation | None,
                  failed: ReadFailed | None = None) -> ListedOffset | TimestampWalk:
    """ListOffsets once ``walked``'s records were read (``outcome``: its hit, None, or the
    error its records raised): the answer, shown by the partition's state now, or the next
    batch to walk."""
    if isinstance(outcome, Exception):
        return ListedOffset(_unreadable(part, outcome, failed,
                                        f"listing the offset for timestamp {walked.timestamp}"))
    if outcome is None:
        return _search(part, walked.timestamp, walked.header.last_offset + 1, isolation, failed)
    found = ListedOffset(ErrorCode.NONE, outcome.timestamp, outcome.offset,
                         outcome.leader_epoch)
    if found.offset < _last_fetchable(part, isolation):
        return found
    return ListedOffset(ErrorCode.OFFSET_NOT_AVAILABLE if _lagging(part, isolation)
                        else ErrorCode.NONE)


def _search(part: ReadablePartition, timestamp: int, after: int,
            isolation: FetchIsolation | None,
            failed: ReadFailed | None) -> ListedOffset | TimestampWalk:
    """The batch to walk next for Kafka's ``UnifiedLog.fetchOffsetByTimestamp`` (no tiered
    storage), or the answer when none is left."""
    try:
        found = part.log.batch_for_timestamp(timestamp, after)
    except (CorruptRecordError, StorageError, OSError) as exc:
        return ListedOffset(_unreadable(part, exc, failed,
                                        f"listing the offset for timestamp {timestamp}"))
    if found is None:
        return ListedOffset(ErrorCode.NONE)
    header, data = found
    walk = TimestampWalk(header, data, timestamp, max(after, part.log_start_offset))
    if walk.costly:
        return walk
    return walked_offset(part, walk, walk.walk(), isolation=isolation, failed=failed)


def _last_fetchable(part: ReadablePartition, isolation: FetchIsolation | None) -> int:
    return part.log_end_offset if isolation is None else upper_bound(part, isolation)


def _lagging(part: ReadablePartition, isolation: FetchIsolation | None) -> bool:
    return isolation is not None and _epoch_start(part) > part.high_watermark


def _epoch_start(part: ReadablePartition) -> int:
    """Where the current leader epoch starts in the log, if any batch of it was written."""
    for epoch, start in reversed(part.log.leader_epochs.entries):
        if epoch == part.leader_epoch:
            return start
    return -1


def _epoch_at(part: ReadablePartition, offset: int) -> int:
    """The leader epoch of the batch holding ``offset`` (-1 if the cache has none)."""
    found = NO_EPOCH
    for epoch, start in part.log.leader_epochs.entries:
        if start > offset:
            break
        found = epoch
    return found


def delete_records_target(part: ReadablePartition, offset: int) -> int | ErrorCode:
    """The new log start offset of a DeleteRecords partition (-1 = the high watermark),
    or OFFSET_OUT_OF_RANGE for a negative one or one past the high watermark."""
    target = part.high_watermark if offset == DELETE_UP_TO_HIGH_WATERMARK else offset
    if target < 0 or target > part.high_watermark:
        return ErrorCode.OFFSET_OUT_OF_RANGE
    return target
