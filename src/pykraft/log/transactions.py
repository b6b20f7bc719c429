"""A partition's side of transactions: markers read from control batches, and batches
applied to the producer state in Kafka's two phases.

``UnifiedLog.append`` first gives every batch of an append to its producer (data batches
open transactions, COMMIT and ABORT markers close them), then ends the closed transactions:
each one's last stable offset is taken, an aborted one is indexed in the ``.txnindex`` of the
segment holding its marker, and only then is it completed. Doing the phases in that order
matters for the index: a transaction another producer opened later in the same append
already counts as open. The leader's appends, a follower's and the replay that rebuilds the
state after a restart all go through :func:`apply_batches` and :func:`end_transactions`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykraft.errors import ControlRecordError
from pykraft.log.producer_state import (
    AppendOrigin,
    CompletedTxn,
    ProducerStateEntry,
    ProducerStateManager,
)
from pykraft.messages import encode
from pykraft.records.batch import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    NO_PRODUCER_ID,
    BatchHeader,
    Record,
    assemble_batch,
    decode_records,
    encode_records,
)
from pykraft.records.control import ControlType, EndTxnMarker, control_key, decode_control
from pykraft.storage.partition_log import PartitionLog
from pykraft.storage.txn_index import AbortedTxn


@dataclass(frozen=True, slots=True)
class Marker:
    """A transaction marker: how the transaction ended, the coordinator epoch that wrote
    it, and the record's timestamp (the producer's last timestamp)."""

    aborted: bool
    coordinator_epoch: int
    timestamp: int


def read_marker(header: BatchHeader, batch: bytes) -> Marker | None:
    """The COMMIT or ABORT marker of the control batch ``batch`` (header and records);
    None for other control records and for an empty control batch (the cleaner emptied
    it: its whole transaction is gone). A malformed marker raises
    :class:`~pykraft.errors.ControlRecordError`."""
    records = decode_records(header, batch)
    if not records:
        return None
    record = records[0]
    control = decode_control(record.key, record.value)
    if control.type not in (ControlType.ABORT, ControlType.COMMIT):
        return None
    if not isinstance(control.message, EndTxnMarker):
        raise ControlRecordError(f"{control.type.name} marker without its value")
    return Marker(control.type is ControlType.ABORT, control.message.coordinator_epoch,
                  record.timestamp)


def marker_batch(*, base_offset: int, leader_epoch: int, producer_id: int,
                 producer_epoch: int, aborted: bool, coordinator_epoch: int,
                 timestamp: int) -> bytes:
    """The control batch of a transaction marker, as Kafka's
    ``MemoryRecords.withEndTransactionMarker`` writes it: transactional and control, no
    sequence, one record keyed by the marker type whose value is ``EndTxnMarker`` v0."""
    kind = ControlType.ABORT if aborted else ControlType.COMMIT
    value = encode(EndTxnMarker(version=0, coordinator_epoch=coordinator_epoch), 0)
    body = encode_records([Record(base_offset, timestamp, control_key(kind), value)],
                          base_offset, timestamp)
    return assemble_batch(
        body, base_offset=base_offset, partition_leader_epoch=leader_epoch,
        attributes=ATTR_CONTROL | ATTR_TRANSACTIONAL, last_offset_delta=0,
        base_timestamp=timestamp, max_timestamp=timestamp, records_count=1,
        producer_id=producer_id, producer_epoch=producer_epoch)


def apply_batches(state: ProducerStateManager,
                  batches: Iterable[tuple[BatchHeader, Marker | None]],
                  origin: AppendOrigin, *, transaction_version: int = 0) -> list[CompletedTxn]:
    """Phase one: each batch to its producer, in log order (a control batch with its
    marker, None for one that is not a marker); returns the transactions markers closed,
    for :func:`end_transactions`. A refusal (:class:`ProducerStateError`) comes from the
    first batch its producer cannot take; the batches before it are applied."""
    completed: list[CompletedTxn] = []
    for header, marker in batches:
        if header.producer_id == NO_PRODUCER_ID:
            continue
        if header.is_control:
            if marker is None:
                continue
            append = state.prepare_marker(
                header, aborted=marker.aborted, coordinator_epoch=marker.coordinator_epoch,
                timestamp=marker.timestamp, origin=origin,
                transaction_version=transaction_version)
            state.update(append.entry)
            if append.completed is not None:
                completed.append(append.completed)
            continue
        entry = state.prepare(header, origin)
        if isinstance(entry, ProducerStateEntry):
            state.update(entry)
    return completed


def end_transactions(state: ProducerStateManager, partition_log: PartitionLog,
                     completed: Iterable[CompletedTxn], *, index_from: int = 0) -> None:
    """Phase two: index each aborted transaction whose marker is at or past
    ``index_from`` with its last stable offset, then mark every one complete."""
    for txn in completed:
        if txn.is_aborted and txn.last_offset >= index_from:
            partition_log.append_aborted(AbortedTxn(
                txn.producer_id, txn.first_offset, txn.last_offset,
                state.last_stable_offset(txn)))
        state.complete_txn(txn)
