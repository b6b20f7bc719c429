"""Idempotent producer state of one partition (Kafka's ProducerStateManager), sans-I/O.

Per producer id the partition keeps its epoch, the last timestamp, an open transaction's
first offset and the metadata of its last 5 appended batches (sequence range, offsets,
timestamp): enough to answer a retried batch with its original offsets, to refuse a stale
epoch and to catch gaps in sequences, as Kafka 4.x brokers do.

Interface, for the leader after :func:`pykraft.log.validator.validate_produce` and for
followers and log recovery with each batch read back (``header`` is the batch's
:class:`~pykraft.records.batch.BatchHeader` with its offsets assigned)::

    state = ProducerStateManager(partition="t-0", producer_id_expiration_ms=86_400_000)
    outcome = state.prepare(header, origin=AppendOrigin.CLIENT)
    if isinstance(outcome, BatchMetadata):  # a retry: answer its first_offset, append nothing
        ...
    elif outcome is not None:  # ProducerStateEntry: apply once the batch is in the log
        state.update(outcome)
    # refused: ProducerStateError(error_code, message) — INVALID_PRODUCER_EPOCH,
    # OUT_OF_ORDER_SEQUENCE_NUMBER or INVALID_TXN_STATE
    state.remove_expired(now_ms)            # producer.id.expiration.ms
    state.snapshot() / state.load(entries, now_ms)  # see producer_snapshot.py for the bytes

Transactions (Kafka's ongoing and unreplicated transactions): a transactional data batch opens
its producer's transaction at its base offset; a COMMIT or ABORT marker (a control batch)
closes it::

    marker = state.prepare_marker(header, aborted=True, coordinator_epoch=3,
                                  timestamp=ms, origin=AppendOrigin.COORDINATOR,
                                  transaction_version=2)
    # refused: INVALID_PRODUCER_EPOCH (stale epoch; at transaction.version 2 also the
    # same epoch while a transaction is open, as the coordinator bumps it for each marker;
    # with none open it is the coordinator's retry, written again) or
    # TRANSACTION_COORDINATOR_FENCED (an older coordinator epoch)
    ... append the marker batch ...
    state.update(marker.entry)
    if marker.completed is not None:
        lso = state.last_stable_offset(marker.completed)  # the .txnindex entry's, if aborted
        state.complete_txn(marker.completed)
    state.first_unstable_offset()           # the oldest open or not yet replicated one
    state.on_high_watermark_updated(hw)     # replicated markers stop holding the LSO back

UNKNOWN_PRODUCER_ID is never answered (KIP-360): a producer whose state is gone (expired, or
its batches removed by retention) may continue with any sequence. Batches without a producer
id (-1) have no state and ``prepare`` returns None for them.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Final

from pykraft.errors import PyKraftError
from pykraft.ids import MAX_PRODUCER_EPOCH
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    BatchHeader,
)

NUM_BATCHES_TO_RETAIN: Final = 5
PRODUCER_ID_EXPIRATION_MS_DEFAULT: Final = 86_400_000  # producer.id.expiration.ms
INT32_MAX: Final = (1 << 31) - 1


class AppendOrigin(Enum):
    """Who appends: a client's produce is checked fully, a coordinator's own write (markers,
    offsets) for epochs, and a follower's copy is never refused (the leader checked it)."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


class ProducerStateError(PyKraftError):
    """An idempotent batch refused for its producer state, with Kafka's error code."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's ``DefaultRecordBatch.incrementSequence``: sequences wrap from INT32_MAX to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """Kafka's ``DefaultRecordBatch.decrementSequence``."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def last_sequence(header: BatchHeader) -> int:
    """The sequence of a batch's last record (-1 without sequences)."""
    if header.base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    return increment_sequence(header.base_sequence, header.last_offset_delta)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One retained batch of a producer: its last sequence and offset, size, max timestamp."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerStateEntry:
    """What a partition knows of one producer id (Kafka's ``ProducerStateEntry``)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: int | None = None
    batches: deque[BatchMetadata] = field(default_factory=deque)

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        """The retained batch with exactly this batch's epoch and sequence range, if any."""
        if header.producer_epoch != self.producer_epoch:
            return None
        first, last = header.base_sequence, last_sequence(header)
        return next((b for b in self.batches if b.first_seq == first and b.last_seq == last),
                    None)

    def add_batch(self, epoch: int, metadata: BatchMetadata) -> None:
        """Retain ``metadata`` (a new epoch forgets the old epoch's batches)."""
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch
        if len(self.batches) == NUM_BATCHES_TO_RETAIN:
            self.batches.popleft()
        self.batches.append(metadata)
        self.last_timestamp = metadata.timestamp


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker ended (Kafka's ``CompletedTxn``): its producer, its first data
    offset, the marker's offset, and whether it was aborted."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class VerificationGuard:
    """One verification of a producer's transaction (compared by identity)."""

    __slots__ = ("producer_id",)

    def __init__(self, producer_id: int) -> None:
        self.producer_id = producer_id


@dataclass(frozen=True, slots=True)
class Verified:
    """A transactional write's verification: whether its transaction was checked with
    its coordinator, and the guard the write must still hold when it is appended (None:
    a transaction was ongoing there, which the write must still find)."""

    guard: VerificationGuard | None
    checked: bool

    def holds(self, state: ProducerStateManager, producer_id: int, epoch: int) -> bool:
        """Whether the write may go in (:meth:`ProducerStateManager.verified`)."""
        return not self.checked or state.verified(producer_id, epoch, self.guard)


@dataclass(frozen=True, slots=True)
class MarkerAppend:
    """What a transaction marker does to its producer: the entry to store once the marker
    is in the log, and the transaction it ends (None when none was open: a marker for an
    empty transaction moves no stable offset and has no index entry)."""

    entry: ProducerStateEntry
    completed: CompletedTxn | None


class ProducerStateManager:
    """The producer ids of one partition; time comes in as ``now_ms``, never read."""

    def __init__(self, *, partition: str = "",
                 producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS_DEFAULT) -> None:
        self.partition = partition
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producers: dict[int, ProducerStateEntry] = {}
        self.map_end_offset = 0  # the log offset the state reflects (the snapshot's name)
        self._ongoing: dict[int, int] = {}
        """Open transactions: first offset -> producer id, in offset order (appends come in
        offset order, and a loaded snapshot is sorted)."""
        self._unreplicated: dict[int, CompletedTxn] = {}
        """Ended transactions whose marker may be above the high watermark: first offset ->
        the transaction, in marker order."""
        self._verifying: dict[int, VerificationGuard] = {}
        """Producers whose coordinator is being asked whether this partition is in their
        transaction (KIP-890): the guard their first transactional write must bring."""

    @property
    def producers(self) -> Mapping[int, ProducerStateEntry]:
        """Every producer id with state here (DescribeProducers reads this)."""
        return self._producers

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def prepare(self, header: BatchHeader, origin: AppendOrigin = AppendOrigin.CLIENT
                ) -> BatchMetadata | ProducerStateEntry | None:
        """Check a data batch against its producer's state, changing nothing.

        Returns the original batch's metadata when this is a client's retry of one of the last
        5 batches (Kafka answers NONE with its offsets), else the producer's next state for
        :meth:`update` once the batch is appended; None for a batch without a producer id.
        """
        if header.producer_id == NO_PRODUCER_ID:
            return None
        current = self._producers.get(header.producer_id)
        if current is not None and origin is AppendOrigin.CLIENT:
            duplicate = current.find_duplicate(header)
            if duplicate is not None:
                return duplicate
        current = current or ProducerStateEntry(header.producer_id)
        self._check_epoch(current, header, origin)
        if origin is AppendOrigin.CLIENT:
            self._check_sequence(current, header)
        updated = copy.deepcopy(current)
        updated.add_batch(header.producer_epoch, BatchMetadata(
            last_sequence(header), header.last_offset, header.last_offset_delta,
            header.max_timestamp))
        if updated.current_txn_first_offset is not None and not header.is_transactional:
            raise ProducerStateError(
                ErrorCode.INVALID_TXN_STATE,
                f"Expected transactional write from producer {header.producer_id} at offset "
                f"{header.base_offset} in partition {self.partition}")
        if updated.current_txn_first_offset is None and header.is_transactional:
            updated.current_txn_first_offset = header.base_offset
        return updated

    def start_verification(self, producer_id: int, epoch: int) -> VerificationGuard | None:
        """A guard for a transactional write about to be verified with the producer's
        coordinator; None when the producer has a transaction ongoing here at ``epoch``
        (nothing to verify: Kafka's ``VerificationGuard.SENTINEL``). Concurrent writes of
        one producer share its guard."""
        entry = self._producers.get(producer_id)
        if (entry is not None and entry.current_txn_first_offset is not None
                and entry.producer_epoch == epoch):
            return None
        return self._verifying.setdefault(producer_id, VerificationGuard(producer_id))

    def verified(self, producer_id: int, epoch: int, guard: VerificationGuard | None) -> bool:
        """Whether a transactional write may start or continue a transaction here: one is
        ongoing at ``epoch``, or ``guard`` is still this producer's (no marker ended the
        transaction since the coordinator confirmed it; Kafka's
        ``batchMissingRequiredVerification``)."""
        entry = self._producers.get(producer_id)
        if (entry is not None and entry.current_txn_first_offset is not None
                and entry.producer_epoch == epoch):
            return True
        return guard is not None and self._verifying.get(producer_id) is guard

    def end_verification(self, guard: VerificationGuard) -> None:
        """A verification that failed: its guard is dropped (if still current)."""
        if self._verifying.get(guard.producer_id) is guard:
            del self._verifying[guard.producer_id]

    def update(self, entry: ProducerStateEntry) -> None:
        """Apply a state :meth:`prepare` (or :meth:`prepare_marker`) returned, after its
        batch is in the log; a transaction the batch began becomes ongoing. The producer's
        verification guard ends: its transaction is ongoing, or a marker ended it."""
        self._verifying.pop(entry.producer_id, None)
        previous = self._producers.get(entry.producer_id)
        first = entry.current_txn_first_offset
        if first is not None and (previous is None or previous.current_txn_first_offset != first):
            self._ongoing[first] = entry.producer_id
        self._producers[entry.producer_id] = entry

    def prepare_marker(self, header: BatchHeader, *, aborted: bool, coordinator_epoch: int,
                       timestamp: int, origin: AppendOrigin,
                       transaction_version: int = 0) -> MarkerAppend:
        """Check a COMMIT or ABORT marker batch against its producer, changing nothing
        (Kafka's ``appendEndTxnMarker``). A follower's copy is never refused (Kafka only
        logs there): the leader checked it with the transaction version the marker request
        carried, which the log does not keep."""
        current = self._producers.get(header.producer_id) or ProducerStateEntry(
            header.producer_id)
        epoch = header.producer_epoch
        strict = transaction_version >= 2
        if origin is not AppendOrigin.REPLICATION:
            if epoch < current.producer_epoch or (strict and epoch == current.producer_epoch
                                                  and not _marker_retry(current, epoch)):
                raise ProducerStateError(
                    ErrorCode.INVALID_PRODUCER_EPOCH,
                    f"Epoch of producer {header.producer_id} at offset {header.base_offset} "
                    f"in {self.partition} is {epoch}, which is "
                    f"{'<=' if strict else '<'} the last seen epoch "
                    f"{current.producer_epoch} (TV{transaction_version})")
            if current.coordinator_epoch > coordinator_epoch:
                raise ProducerStateError(
                    ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                    f"Invalid coordinator epoch for producerId {header.producer_id} at offset "
                    f"{header.base_offset} in partition {self.partition}: {coordinator_epoch} "
                    f"(zombie), {current.coordinator_epoch} (current)")
        first = current.current_txn_first_offset
        completed = None if first is None else CompletedTxn(
            header.producer_id, first, header.base_offset, aborted)
        batches = current.batches.copy() if epoch == current.producer_epoch else deque()
        entry = ProducerStateEntry(header.producer_id, epoch, coordinator_epoch, timestamp,
                                   None, batches)
        return MarkerAppend(entry, completed)

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The stable offset once ``completed`` ends: the first offset of the oldest other
        producer's open transaction, else just past its marker (the value its aborted-index
        entry records; Kafka computes it before :meth:`complete_txn`)."""
        for first, producer_id in self._ongoing.items():
            if producer_id != completed.producer_id:
                return first
        return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        """The transaction ended by a marker now in the log; it holds the first unstable
        offset until the high watermark passes its marker."""
        if self._ongoing.pop(completed.first_offset, None) is None:
            raise KeyError(f"{self.partition}: completing a transaction at offset "
                           f"{completed.first_offset} that was never started")
        self._unreplicated[completed.first_offset] = completed

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction still open, or ended by a marker the
        high watermark has not passed (None: every transaction is stable)."""
        undecided = next(iter(self._ongoing), None)
        unreplicated = min(self._unreplicated, default=None)
        if undecided is None:
            return unreplicated
        if unreplicated is None:
            return undecided
        return min(undecided, unreplicated)

    def first_undecided_offset(self) -> int | None:
        """The first offset of the oldest open transaction (replication aside)."""
        return next(iter(self._ongoing), None)

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Ended transactions whose marker is below ``high_watermark`` are stable (the log
        start never passes the high watermark, so nothing else drops them). Markers are
        appended in offset order, so the oldest come first."""
        unreplicated = self._unreplicated
        while unreplicated:
            first = next(iter(unreplicated))
            if unreplicated[first].last_offset >= high_watermark:
                return
            del unreplicated[first]

    def update_map_end_offset(self, offset: int) -> None:
        """Kafka's ``updateMapEndOffset``: every append moves it, idempotent or not."""
        self.map_end_offset = offset

    def is_expired(self, entry: ProducerStateEntry, now_ms: int) -> bool:
        """Idle for ``producer.id.expiration.ms`` (by its last batch's max timestamp, as
        Kafka) and no open transaction."""
        return (entry.current_txn_first_offset is None
                and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms)

    def remove_expired(self, now_ms: int) -> list[int]:
        """Forget expired producer ids; returns them."""
        gone = [pid for pid, e in self._producers.items() if self.is_expired(e, now_ms)]
        for pid in gone:
            del self._producers[pid]
        return gone

    def snapshot(self) -> list[ProducerStateEntry]:
        """The entries to persist, by producer id (only their last batch survives a restart)."""
        return [self._producers[pid] for pid in sorted(self._producers)]

    def load(self, entries: Iterable[ProducerStateEntry], now_ms: int, end_offset: int) -> None:
        """Replace the state with a snapshot's entries taken at ``end_offset``, dropping the
        expired ones (Kafka's ``loadFromSnapshot``)."""
        self._producers = {e.producer_id: e for e in entries if not self.is_expired(e, now_ms)}
        self._ongoing = dict(sorted(
            (e.current_txn_first_offset, e.producer_id) for e in self._producers.values()
            if e.current_txn_first_offset is not None))
        self._unreplicated = {}
        self.map_end_offset = end_offset

    def _check_epoch(self, current: ProducerStateEntry, header: BatchHeader,
                     origin: AppendOrigin) -> None:
        if (header.producer_epoch < current.producer_epoch
                and origin is not AppendOrigin.REPLICATION):
            raise ProducerStateError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"Epoch of producer {header.producer_id} at offset {header.base_offset} in "
                f"{self.partition} is {header.producer_epoch}, which is smaller than the last "
                f"seen epoch {current.producer_epoch}")

    def _check_sequence(self, current: ProducerStateEntry, header: BatchHeader) -> None:
        first_seq = header.base_sequence
        if header.producer_epoch != current.producer_epoch:
            if first_seq != 0 and current.producer_epoch != NO_PRODUCER_EPOCH:
                raise ProducerStateError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"Invalid sequence number for new epoch of producer {header.producer_id}"
                    f"at offset {header.base_offset} in partition {self.partition}: "
                    f"{header.producer_epoch} (request epoch), {first_seq} (seq. number), "
                    f"{current.producer_epoch} (current producer epoch)")
            return
        last_seq = current.last_seq
        in_sequence = first_seq == last_seq + 1 or (first_seq == 0 and last_seq == INT32_MAX)
        if not (current.producer_epoch == NO_PRODUCER_EPOCH or in_sequence):
            raise ProducerStateError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"Out of order sequence number for producer {header.producer_id} at offset "
                f"{header.base_offset} in partition {self.partition}: {first_seq} (incoming seq. "
                f"number), {last_seq} (current end sequence number)")


def _marker_retry(current: ProducerStateEntry, epoch: int) -> bool:
    """A TV2 marker at the producer's current epoch is the coordinator's retry of one already
    written when no transaction is open (or the epoch cannot be bumped any more): Kafka 4.4
    writes it again rather than refuse it (``ProducerAppendInfo.checkProducerEpoch``)."""
    return current.current_txn_first_offset is None or epoch == MAX_PRODUCER_EPOCH
