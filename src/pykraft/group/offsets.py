"""Committed offsets of one ``__consumer_offsets`` partition's groups (Kafka's
``OffsetMetadataManager`` store), kept in step with the records that make them durable.

Every change returns the records to append, and :meth:`OffsetStore.replay` applies those
same records when a shard loads, so a store rebuilt from its log equals the one that wrote
it. The store does not judge requests: the shard checks generations, members and group
state, then calls it.

Transactional offsets (TxnOffsetCommit) wait apart, per producer id, until the transaction's
marker on this partition commits them (each moves to the committed offsets unless a later
record committed that partition's offset since) or aborts them. Which record is later is
known by the order the store saw them in: it applies records in log order, while loading
and after (the runtime appends each outcome's records in the order they were made).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pykraft.group.outcome import OffsetsRecord
from pykraft.group.records import OffsetCommitKey, OffsetCommitValue, offset_commit_record
from pykraft.ids import TopicPartition

ExpiryBase = Callable[[str, str, OffsetCommitValue], int | None]
"""For (group, topic, offset): the timestamp the offset's retention counts from, or None to
keep it. Kafka's rule (``ClassicGroup.offsetExpirationCondition``): an Empty group with a
protocol type counts from when it became empty (its ``currentStateTimestamp``, or the commit
time when unknown); a group without a protocol type (standalone commits) from each commit;
any other group keeps its offsets."""

NO_PRODUCER_ID = -1
"""The producer id of a batch outside any transaction."""


@dataclass(frozen=True, slots=True)
class _Held:
    """An offset and when the store applied its record (later records: larger)."""

    value: OffsetCommitValue
    order: int


class OffsetStore:
    """Offsets by group, then (topic, partition); pending transactional ones by producer."""

    def __init__(self) -> None:
        self._offsets: dict[str, dict[TopicPartition, _Held]] = {}
        self._pending: dict[int, dict[str, dict[TopicPartition, _Held]]] = {}
        self._open: dict[str, set[int]] = {}  # group -> producers with pending offsets
        self._order = 0

    def commit(
        self, group: str, topic: str, partition: int, value: OffsetCommitValue,
        producer_id: int = NO_PRODUCER_ID,
    ) -> OffsetsRecord:
        """Store ``value`` (pending until its transaction ends, for a producer's) and
        return its record."""
        key = OffsetCommitKey(group, topic, partition)
        self.replay(key, value, producer_id)
        return offset_commit_record(key, value)

    def get(self, group: str, topic: str, partition: int) -> OffsetCommitValue | None:
        """The committed offset, or None when there is none."""
        held = self._offsets.get(group, {}).get(TopicPartition(topic, partition))
        return None if held is None else held.value

    def offsets(self, group: str) -> Mapping[TopicPartition, OffsetCommitValue]:
        """Every committed offset of ``group`` (empty when it has none)."""
        return {tp: held.value for tp, held in self._offsets.get(group, {}).items()}

    def count(self) -> int:
        """The committed offsets held (Kafka's offset-count, NumOffsets)."""
        return sum(len(held) for held in self._offsets.values())

    def groups(self) -> list[str]:
        """The groups that have at least one committed offset."""
        return list(self._offsets)

    def holds(self, group: str) -> bool:
        """Whether ``group`` has a committed offset."""
        return group in self._offsets

    def has_pending(self, group: str, topic: str, partition: int) -> bool:
        """Whether an open transaction holds an offset of this partition for ``group``
        (OffsetFetch with ``require_stable`` answers UNSTABLE_OFFSET_COMMIT)."""
        tp = TopicPartition(topic, partition)
        return any(tp in self._pending[producer].get(group, {})
                   for producer in self._open.get(group, ()))

    def has_open_transactions(self, group: str | None = None) -> bool:
        """Whether ``group`` (any group, when None) has pending transactional offsets."""
        return bool(self._open) if group is None else group in self._open

    def delete(self, group: str, partitions: Iterable[TopicPartition]) -> list[OffsetsRecord]:
        """Drop the offsets of ``partitions`` the group has, committed or pending;
        tombstones for those dropped."""
        records = []
        for topic, partition in partitions:
            key = OffsetCommitKey(group, topic, partition)
            if self.get(group, topic, partition) is None and not self.has_pending(
                    group, topic, partition):
                continue
            self.replay(key, None)
            records.append(offset_commit_record(key, None))
        return records

    def delete_group(self, group: str) -> list[OffsetsRecord]:
        """Drop every offset of ``group``, committed or pending; their tombstones."""
        partitions = dict.fromkeys(self._offsets.get(group, {}))
        for producer in self._open.get(group, ()):
            partitions.update(dict.fromkeys(self._pending[producer].get(group, {})))
        return self.delete(group, list(partitions))

    def expire(self, now_ms: int, retention_ms: int, base: ExpiryBase) -> list[OffsetsRecord]:
        """Drop the offsets whose retention has passed; their tombstones.

        An offset with an explicit expire timestamp (OffsetCommit v2-4) expires at it; any
        other once ``retention_ms`` has passed since ``base`` (Kafka's
        ``OffsetExpirationConditionImpl.isOffsetExpired``). Offsets ``base`` keeps never
        expire, nor do those an open transaction is about to replace
        (``cleanupExpiredOffsets``).
        """
        records = []
        for group, held in list(self._offsets.items()):
            expired = []
            for (topic, partition), entry in held.items():
                value = entry.value
                since = base(group, topic, value)
                if since is None or self.has_pending(group, topic, partition):
                    continue
                if value.expire_timestamp != -1:
                    due = now_ms >= value.expire_timestamp
                else:
                    due = now_ms - since >= retention_ms
                if due:
                    expired.append(TopicPartition(topic, partition))
            records.extend(self.delete(group, expired))
        return records

    def replay(self, key: OffsetCommitKey, value: OffsetCommitValue | None,
               producer_id: int = NO_PRODUCER_ID) -> None:
        """Apply a record (``producer_id``: its batch's, for a transactional one): a value
        stores the offset, pending when transactional; a tombstone drops it, and the
        pending ones of that partition too (Kafka's ``OffsetMetadataManager.replay``)."""
        self._order += 1
        tp = TopicPartition(key.topic, key.partition)
        if value is not None:
            held = _Held(value, self._order)
            if producer_id == NO_PRODUCER_ID:
                self._offsets.setdefault(key.group, {})[tp] = held
            else:
                by_group = self._pending.setdefault(producer_id, {})
                by_group.setdefault(key.group, {})[tp] = held
                self._open.setdefault(key.group, set()).add(producer_id)
            return
        self._drop(key.group, tp)
        for producer in self._open.get(key.group, ()):
            self._pending[producer].get(key.group, {}).pop(tp, None)

    def restore(self, key: OffsetCommitKey, value: OffsetCommitValue | None) -> None:
        """Put a committed offset back as the log has it (a failed write's revert), the
        pending ones untouched."""
        self._order += 1
        tp = TopicPartition(key.topic, key.partition)
        if value is None:
            self._drop(key.group, tp)
        else:
            self._offsets.setdefault(key.group, {})[tp] = _Held(value, self._order)

    def end_transaction(self, producer_id: int, committed: bool) -> None:
        """The producer's transaction marker: commit moves its pending offsets to the
        committed ones (a partition committed by a later record keeps that one: Kafka's
        ``replayEndTransactionMarker``), abort drops them."""
        pending = self._pending.pop(producer_id, None)
        if pending is None:
            return
        for group in pending:
            producers = self._open.get(group)
            if producers is not None:
                producers.discard(producer_id)
                if not producers:
                    del self._open[group]
        if not committed:
            return
        for group, held in pending.items():
            offsets = self._offsets.setdefault(group, {})
            for tp, entry in held.items():
                current = offsets.get(tp)
                if current is None or entry.order > current.order:
                    offsets[tp] = entry
            if not offsets:
                del self._offsets[group]

    def _drop(self, group: str, tp: TopicPartition) -> None:
        """Forget one committed offset (and the group once it has none)."""
        held = self._offsets.get(group)
        if held is not None and held.pop(tp, None) is not None and not held:
            del self._offsets[group]
