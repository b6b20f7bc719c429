"""The transaction coordinator's records in ``__transaction_state``, in Kafka's format.

Key: int16 version 0 (the coordinator record type) then ``TransactionLogKey`` v0, the
transactional id. Value: int16 version then ``TransactionLogValue``: v0 classic, v1 flexible
with the previous and next producer ids, the client's transaction version and the next
producer epoch tagged (Kafka writes v1 once ``transaction.version`` is 2, v0 before). The
partitions are null in an Empty record. A null value is a tombstone (an expired id). Kafka's
``kafka-dump-log.sh --transaction-log-decoder`` reads these bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from itertools import groupby

from pykraft.errors import MessageDecodeError
from pykraft.ids import TopicPartition
from pykraft.messages import array, decode, encode, kafka_field, message
from pykraft.txn.metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TxnMetadata, TxnTransit
from pykraft.txn.state import TxnState

KEY_VERSION = 0
_VERSION = struct.Struct(">h")


@message(versions="0")
@dataclass(frozen=True, slots=True)
class TransactionLogKey:
    transactional_id: str = kafka_field("string")


@message()
@dataclass(frozen=True, slots=True)
class PartitionsSchema:
    topic: str = kafka_field("string")
    partition_ids: tuple[int, ...] = kafka_field("[]int32")


@message(versions="0-1", flexible="1+")
@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    producer_id: int = kafka_field("int64")
    previous_producer_id: int = kafka_field(
        "int64", versions="1+", tag=0, tagged_versions="1+", default=NO_PRODUCER_ID)
    next_producer_id: int = kafka_field(
        "int64", versions="1+", tag=1, tagged_versions="1+", default=NO_PRODUCER_ID)
    producer_epoch: int = kafka_field("int16")
    next_producer_epoch: int = kafka_field(
        "int16", versions="1+", tag=3, tagged_versions="1+", default=NO_PRODUCER_EPOCH)
    transaction_timeout_ms: int = kafka_field("int32")
    transaction_status: int = kafka_field("int8")
    transaction_partitions: tuple[PartitionsSchema, ...] | None = kafka_field(
        array(PartitionsSchema), nullable_versions="0+")
    transaction_last_update_timestamp_ms: int = kafka_field("int64")
    transaction_start_timestamp_ms: int = kafka_field("int64")
    client_transaction_version: int = kafka_field(
        "int16", versions="1+", tag=2, tagged_versions="1+", default=0)


@dataclass(frozen=True, slots=True)
class TxnRecord:
    """One record of ``__transaction_state`` (value None: a tombstone)."""

    key: bytes
    value: bytes | None


def value_version(transaction_version: int) -> int:
    """The value version Kafka writes at a ``transaction.version`` level."""
    return 1 if transaction_version >= 2 else 0


def txn_record(transactional_id: str, transit: TxnTransit | None,
               transaction_version: int) -> TxnRecord:
    """The record of a transition (None: the id's tombstone), at the value version the
    cluster's ``transaction.version`` calls for."""
    key = _VERSION.pack(KEY_VERSION) + encode(TransactionLogKey(transactional_id), 0)
    if transit is None:
        return TxnRecord(key, None)
    if transit.state is TxnState.EMPTY and transit.partitions:
        raise ValueError(f"Transaction is not expected to have any partitions since its state "
                         f"is Empty: {transit}")
    partitions = None
    if transit.state is not TxnState.EMPTY:
        ordered = sorted(transit.partitions)
        partitions = tuple(
            PartitionsSchema(topic, tuple(tp.partition for tp in group))
            for topic, group in groupby(ordered, key=lambda tp: tp.topic))
    version = value_version(transaction_version)
    value = TransactionLogValue(
        producer_id=transit.producer_id, producer_epoch=transit.producer_epoch,
        transaction_timeout_ms=transit.timeout_ms, transaction_status=transit.state.id,
        transaction_partitions=partitions, transaction_last_update_timestamp_ms=(
            transit.last_update_ms),
        transaction_start_timestamp_ms=transit.start_ms)
    if version >= 1:  # the tagged fields exist from v1 (Kafka sets them only there)
        value = replace(value, previous_producer_id=transit.prev_producer_id,
                        next_producer_id=transit.next_producer_id,
                        client_transaction_version=transit.client_version)
    return TxnRecord(key, _VERSION.pack(version) + encode(value, version))


def read_txn_record(record: TxnRecord) -> tuple[str, TxnMetadata | None] | None:
    """(transactional id, its metadata or None for a tombstone); None for a key version
    this coordinator does not know (skipped, as Kafka's loader does). The loaded
    metadata's last epoch is unknown (the log does not keep it)."""
    key_version, key = split_version(record.key, "key")
    if key_version != KEY_VERSION:
        return None
    transactional_id = decode(TransactionLogKey, 0, key).transactional_id
    if record.value is None:
        return transactional_id, None
    version, body = split_version(record.value, "value")
    if version not in (0, 1):
        raise MessageDecodeError(f"Unknown version {version} from the transaction log "
                                 "message value", position=0)
    value = decode(TransactionLogValue, version, body)
    state = TxnState.from_id(value.transaction_status)
    partitions: frozenset[TopicPartition] = frozenset()
    if state is not TxnState.EMPTY:
        partitions = frozenset(TopicPartition(schema.topic, index)
                               for schema in value.transaction_partitions or ()
                               for index in schema.partition_ids)
    return transactional_id, TxnMetadata(
        transactional_id, value.producer_id, prev_producer_id=value.previous_producer_id,
        next_producer_id=value.next_producer_id, producer_epoch=value.producer_epoch,
        last_producer_epoch=NO_PRODUCER_EPOCH, timeout_ms=value.transaction_timeout_ms,
        state=state, partitions=partitions, start_ms=value.transaction_start_timestamp_ms,
        last_update_ms=value.transaction_last_update_timestamp_ms,
        client_version=value.client_transaction_version)


def split_version(data: bytes, what: str) -> tuple[int, bytes]:
    """A key's or value's int16 version and the bytes after it."""
    if len(data) < _VERSION.size:
        raise MessageDecodeError(f"a __transaction_state {what} must start with an int16 "
                                 f"version, got {len(data)} byte(s)", position=0)
    return _VERSION.unpack_from(data)[0], bytes(data[_VERSION.size:])
