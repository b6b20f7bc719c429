"""Committed offsets of one ``__consumer_offsets`` partition's groups (Kafka's
``OffsetMetadataManager`` store), kept in step with the records that make them durable.

Every change returns the records to append, and :meth:`OffsetStore.replay` applies those
same records when a shard loads, so a store rebuilt from its log equals the one that wrote
it. The store does not judge requests: the shard checks generations, members and group
state, then calls it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from pykraft.group.outcome import OffsetsRecord
from pykraft.group.records import OffsetCommitKey, OffsetCommitValue, offset_commit_record
from pykraft.ids import TopicPartition

ExpiryBase = Callable[[str, str, OffsetCommitValue], int | None]
"""For (group, topic, offset): the timestamp the offset's retention counts from, or None to
keep it. Kafka's rule (``ClassicGroup.offsetExpirationCondition``): an Empty group with a
protocol type counts from when it became empty (its ``currentStateTimestamp``, or the commit
time when unknown); a group without a protocol type (standalone commits) from each commit;
any other group keeps its offsets."""


class OffsetStore:
    """Offsets by group, then (topic, partition)."""

    def __init__(self) -> None:
        self._offsets: dict[str, dict[TopicPartition, OffsetCommitValue]] = {}

    def commit(
        self, group: str, topic: str, partition: int, value: OffsetCommitValue
    ) -> OffsetsRecord:
        """Store ``value`` and return its record."""
        key = OffsetCommitKey(group, topic, partition)
        self.replay(key, value)
        return offset_commit_record(key, value)

    def get(self, group: str, topic: str, partition: int) -> OffsetCommitValue | None:
        """The committed offset, or None when there is none."""
        return self._offsets.get(group, {}).get(TopicPartition(topic, partition))

    def offsets(self, group: str) -> Mapping[TopicPartition, OffsetCommitValue]:
        """Every committed offset of ``group`` (empty when it has none)."""
        return self._offsets.get(group, {})

    def groups(self) -> list[str]:
        """The groups that have at least one committed offset."""
        return list(self._offsets)

    def delete(self, group: str, partitions: Iterable[TopicPartition]) -> list[OffsetsRecord]:
        """Drop the offsets of ``partitions`` the group has; tombstones for those dropped."""
        keys = [OffsetCommitKey(group, topic, partition) for topic, partition in partitions]
        return [offset_commit_record(key, None) for key in keys if self._drop(key)]

    def delete_group(self, group: str) -> list[OffsetsRecord]:
        """Drop every offset of ``group``; their tombstones."""
        return self.delete(group, list(self.offsets(group)))

    def expire(self, now_ms: int, retention_ms: int, base: ExpiryBase) -> list[OffsetsRecord]:
        """Drop the offsets whose retention has passed; their tombstones.

        An offset with an explicit expire timestamp (OffsetCommit v2-4) expires at it; any
        other once ``retention_ms`` has passed since ``base`` (Kafka's
        ``OffsetExpirationConditionImpl.isOffsetExpired``). Offsets ``base`` keeps never expire.
        """
        records = []
        for group, held in list(self._offsets.items()):
            expired = []
            for (topic, partition), value in held.items():
                since = base(group, topic, value)
                if since is None:
                    continue
                if value.expire_timestamp != -1:
                    due = now_ms >= value.expire_timestamp
                else:
                    due = now_ms - since >= retention_ms
                if due:
                    expired.append(TopicPartition(topic, partition))
            records.extend(self.delete(group, expired))
        return records

    def replay(self, key: OffsetCommitKey, value: OffsetCommitValue | None) -> None:
        """Apply a loaded record: a value stores the offset, a tombstone drops it."""
        if value is None:
            self._drop(key)
        else:
            held = self._offsets.setdefault(key.group, {})
            held[TopicPartition(key.topic, key.partition)] = value

    def _drop(self, key: OffsetCommitKey) -> bool:
        """Forget one offset (and the group once it has none); whether it was there."""
        held = self._offsets.get(key.group)
        if held is None or held.pop(TopicPartition(key.topic, key.partition), None) is None:
            return False
        if not held:
            del self._offsets[key.group]
        return True
