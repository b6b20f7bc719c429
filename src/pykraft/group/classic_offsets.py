"""Committed offsets through the groups that own them: OffsetCommit, OffsetFetch,
OffsetDelete, DeleteGroups and offset expiry (Kafka's ``OffsetMetadataManager`` and the
group checks it calls), on top of the :class:`OffsetStore`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from pykraft.group.classic import CONSUMER_PROTOCOL_TYPE, ClassicGroup, GroupState
from pykraft.group.classic_membership import ClassicMembership
from pykraft.group.config import GroupConfig
from pykraft.group.metrics import GroupCounters
from pykraft.group.offsets import NO_PRODUCER_ID, OffsetStore
from pykraft.group.outcome import OffsetsRecord, TopicInfo, TransactionalRecords
from pykraft.group.records import OffsetCommitValue
from pykraft.group.registry import Groups
from pykraft.ids import ZERO_UUID, TopicPartition
from pykraft.messages.kafka import offset_commit_response as committed
from pykraft.messages.kafka import offset_delete_response as deleted
from pykraft.messages.kafka import offset_fetch_response as fetched
from pykraft.messages.kafka.delete_groups_request import DeleteGroupsRequest
from pykraft.messages.kafka.delete_groups_response import (
    DeletableGroupResult,
    DeleteGroupsResponse,
)
from pykraft.messages.kafka.offset_commit_request import OffsetCommitRequest
from pykraft.messages.kafka.offset_delete_request import OffsetDeleteRequest
from pykraft.messages.kafka.offset_fetch_request import OffsetFetchRequest, OffsetFetchRequestGroup
from pykraft.messages.kafka.txn_offset_commit_request import TxnOffsetCommitRequest
from pykraft.messages.kafka.txn_offset_commit_response import (
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from pykraft.protocol.errors import ErrorCode

E = ErrorCode
_LAST_RETENTION_VERSION = 4
#: TxnOffsetCommit answers an unknown group GROUP_ID_NOT_FOUND from v6 (Kafka 4.4).
_FIRST_TXN_GROUP_NOT_FOUND = 6
NO_RETENTION = -1
"""OffsetCommit v2-4's ``retention_time`` meaning "the broker's offsets.retention.minutes"."""


class CommittedPartition(Protocol):
    """A partition of OffsetCommit's or TxnOffsetCommit's request (one class each)."""

    @property
    def partition_index(self) -> int: ...
    @property
    def committed_offset(self) -> int: ...
    @property
    def committed_leader_epoch(self) -> int: ...
    @property
    def committed_metadata(self) -> str | None: ...


class CommittedTopic(Protocol):
    """A topic of OffsetCommit's or TxnOffsetCommit's request."""

    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[CommittedPartition]: ...


class ClassicOffsets:
    """Offset APIs of one shard, judged against its groups."""

    def __init__(self, groups: Groups, store: OffsetStore, config: GroupConfig,
                 membership: ClassicMembership, counters: GroupCounters | None = None) -> None:
        self.groups = groups
        self.store = store
        self.config = config
        self.membership = membership
        self.counters = GroupCounters() if counters is None else counters

    def commit(self, version: int, request: OffsetCommitRequest, now: int,
               topics: Mapping[str, TopicInfo],
               ) -> tuple[list[OffsetsRecord], committed.OffsetCommitResponse]:
        """OffsetCommit, its topics by name (v2-4's ``retention_time_ms`` sets an expire
        timestamp). Each record carries its topic's id from ``topics`` (the image), as Kafka
        4.4's."""
        group = self.groups.get(request.group_id)
        error: int | None
        generation = request.generation_id_or_member_epoch
        member_id = request.member_id
        instance_id = request.group_instance_id
        if group is None:
            if generation < 0:
                group = ClassicGroup(request.group_id)
                self.groups[group.group_id] = group
                error = None
            else:
                error = E.GROUP_ID_NOT_FOUND if version >= 9 else E.ILLEGAL_GENERATION
        else:
            error = group.validate_offset_commit(member_id, instance_id, generation, version)
        if error is not None:
            return [], _commit_reply(request, lambda _: error)
        if isinstance(group, ClassicGroup):
            self.membership.touch(group, member_id, now)
        expire = -1
        if version <= _LAST_RETENTION_VERSION and request.retention_time_ms != NO_RETENTION:
            expire = now + request.retention_time_ms
        records, errors = self._store_all(request.group_id, request.topics, now, expire,
                                          topics)
        return records, _commit_reply(
            request, lambda key: errors.get(key, E.NONE))

    def commit_transactional(self, version: int, request: TxnOffsetCommitRequest, now: int,
                             topics: Mapping[str, TopicInfo],
                             ) -> tuple[TransactionalRecords | None, TxnOffsetCommitResponse]:
        """TxnOffsetCommit (Kafka's ``commitTransactionalOffset``): checked as a commit,
        but any member may commit at any group state, and a group unknown at generation
        -1 is created (otherwise ILLEGAL_GENERATION, from v6 GROUP_ID_NOT_FOUND, as Kafka
        4.4 answers); the offsets wait, pending, for the producer's transaction marker on
        this partition."""
        group = self.groups.get(request.group_id)
        error: int | None = None
        generation = request.generation_id_or_member_epoch
        if group is None:
            if generation < 0:
                group = ClassicGroup(request.group_id)
                self.groups[group.group_id] = group
            else:
                error = (E.GROUP_ID_NOT_FOUND if version >= _FIRST_TXN_GROUP_NOT_FOUND
                         else E.ILLEGAL_GENERATION)
        else:
            error = group.validate_offset_commit(
                request.member_id, request.group_instance_id, generation,
                version, transactional=True)
            if error == E.STALE_MEMBER_EPOCH:
                error = E.ILLEGAL_GENERATION
        if error is not None:
            refused = error
            return None, _txn_commit_reply(request, lambda _: refused)
        records, errors = self._store_all(request.group_id, request.topics, now, -1, topics,
                                          producer_id=request.producer_id)
        written = None if not records else TransactionalRecords(
            request.producer_id, request.producer_epoch, records)
        return written, _txn_commit_reply(request, lambda key: errors.get(key, E.NONE))

    def _store_all(self, group_id: str, requested: Iterable[CommittedTopic], now: int,
                   expire: int, topics: Mapping[str, TopicInfo],
                   producer_id: int = NO_PRODUCER_ID,
                   ) -> tuple[list[OffsetsRecord], dict[tuple[str, int], int]]:
        """Store each requested partition's offset (its records), and the partitions refused
        OFFSET_METADATA_TOO_LARGE. Each record carries its topic's id from ``topics`` (the
        image), as Kafka 4.4's."""
        records = []
        errors: dict[tuple[str, int], int] = {}
        for topic in requested:
            known = topics.get(topic.name)
            topic_id = ZERO_UUID if known is None else known.topic_id
            for partition in topic.partitions:
                metadata = partition.committed_metadata or ""
                if _utf16_length(metadata) > self.config.offset_metadata_max_bytes:
                    errors[(topic.name, partition.partition_index)] = E.OFFSET_METADATA_TOO_LARGE
                    continue
                value = OffsetCommitValue(
                    offset=partition.committed_offset,
                    leader_epoch=partition.committed_leader_epoch,
                    metadata=metadata, commit_timestamp=now, expire_timestamp=expire,
                    topic_id=topic_id)
                records.append(self.store.commit(group_id, topic.name,
                                                 partition.partition_index, value, producer_id))
        return records, errors

    def fetch(self, request: OffsetFetchRequest) -> fetched.OffsetFetchResponse:
        """OffsetFetch v8+ (every group of the request is on this shard)."""
        return fetched.OffsetFetchResponse(groups=tuple(
            self._fetch_group(group, bool(request.require_stable)) for group in request.groups))

    def _fetch_group(self, request: OffsetFetchRequestGroup,
                     require_stable: bool) -> fetched.OffsetFetchResponseGroup:
        """One group's offsets; with ``require_stable`` a partition an open transaction
        will commit is answered UNSTABLE_OFFSET_COMMIT (the consumer retries), without it
        the pending offset is invisible (Kafka's ``fetchOffsets``)."""
        group = self.groups.get(request.group_id)
        if group is not None:
            error = group.validate_offset_fetch(request.member_id, request.member_epoch)
            if error is not None:
                return fetched.OffsetFetchResponseGroup(group_id=request.group_id,
                                                        error_code=error)
        held = self.store.offsets(request.group_id) if group is not None else {}
        if request.topics is None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in held:
                by_topic.setdefault(topic, []).append(partition)
            wanted = [(topic, tuple(parts)) for topic, parts in by_topic.items()]
        else:
            wanted = [(t.name, tuple(t.partition_indexes)) for t in request.topics]
        group_id = request.group_id

        def answer(name: str, index: int) -> fetched.OffsetFetchResponsePartitions:
            if require_stable and self.store.has_pending(group_id, name, index):
                return fetched.OffsetFetchResponsePartitions(
                    partition_index=index, committed_offset=-1, metadata="",
                    error_code=E.UNSTABLE_OFFSET_COMMIT)
            return _fetched(index, held.get(TopicPartition(name, index)))
        return fetched.OffsetFetchResponseGroup(group_id=group_id, topics=tuple(
            fetched.OffsetFetchResponseTopics(name=name, partitions=tuple(
                answer(name, index) for index in indexes))
            for name, indexes in wanted))

    def delete_offsets(self, request: OffsetDeleteRequest) -> tuple[
            list[OffsetsRecord], deleted.OffsetDeleteResponse]:
        group = self.groups.get(request.group_id)
        error = _offset_delete_error(group)
        if error is not None:
            return [], deleted.OffsetDeleteResponse(error_code=error)
        assert group is not None  # refused above
        records: list[OffsetsRecord] = []
        topics = []
        for topic in request.topics:
            subscribed = group.is_subscribed_to(topic.name)
            code = E.GROUP_SUBSCRIBED_TO_TOPIC if subscribed else E.NONE
            if not subscribed:
                records.extend(self.store.delete(
                    request.group_id,
                    [TopicPartition(topic.name, p.partition_index) for p in topic.partitions]))
            topics.append(deleted.OffsetDeleteResponseTopic(name=topic.name, partitions=tuple(
                deleted.OffsetDeleteResponsePartition(partition_index=p.partition_index,
                                                     error_code=code)
                for p in topic.partitions)))
        return records, deleted.OffsetDeleteResponse(topics=tuple(topics))

    def delete_groups(self, request: DeleteGroupsRequest) -> tuple[
            list[OffsetsRecord], DeleteGroupsResponse]:
        records: list[OffsetsRecord] = []
        results = []
        for group_id in request.groups_names:
            group = self.groups.get(group_id)
            if group is None:
                code = E.GROUP_ID_NOT_FOUND
            elif not group.is_empty():
                code = E.NON_EMPTY_GROUP
            else:
                code = E.NONE
                records.extend(self.remove_group(group_id))
            results.append(DeletableGroupResult(group_id=group_id, error_code=code))
        return records, DeleteGroupsResponse(results=tuple(results))

    def remove_group(self, group_id: str) -> list[OffsetsRecord]:
        """Drop an empty group and its offsets; their tombstones (offsets first, as Kafka)."""
        records = self.store.delete_group(group_id)
        records.extend(self.membership.deleters[self.groups[group_id].group_type](group_id))
        self.groups.pop(group_id, None)
        self.membership.timers.cancel_where(
            lambda key: isinstance(key, tuple) and len(key) > 1 and key[1] == group_id)
        return records

    def expire(self, now: int) -> list[OffsetsRecord]:
        """Offsets past their retention, then empty groups left without offsets (Kafka's
        ``cleanupGroupMetadata``; a group with an open transaction stays)."""
        records = self.store.expire(now, self.config.offsets_retention_ms, self._expiry_base)
        self.counters.offset_expirations += len(records)
        for group_id, group in list(self.groups.items()):
            if (group.is_empty() and not self.store.holds(group_id)
                    and not self.store.has_open_transactions(group_id)):
                records.extend(self.remove_group(group_id))
        return records

    def _expiry_base(self, group_id: str, topic: str, value: OffsetCommitValue) -> int | None:
        """Kafka's ``offsetExpirationCondition`` of the group holding the offset."""
        group = self.groups.get(group_id)
        if group is None:
            return value.commit_timestamp
        if group.is_subscribed_to(topic):
            return None
        if not isinstance(group, ClassicGroup):
            return value.commit_timestamp  # consumer groups: from the commit
        if group.protocol_type is None:
            return value.commit_timestamp
        if group.is_empty():
            return (value.commit_timestamp if group.state_timestamp_ms is None
                    else group.state_timestamp_ms)
        if (group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.subscribed_topics is not None
                and group.in_state(GroupState.STABLE)):
            return value.commit_timestamp
        return None


def _offset_delete_error(group: object) -> int | None:
    """Kafka's ``validateOffsetDelete``: unknown groups are not found, busy groups other
    than consumers' refused."""
    if group is None:
        return E.GROUP_ID_NOT_FOUND
    if not isinstance(group, ClassicGroup):
        return None
    if group.in_state(GroupState.DEAD):
        return E.GROUP_ID_NOT_FOUND
    if not group.is_empty() and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return E.NON_EMPTY_GROUP
    return None


def _fetched(index: int, value: OffsetCommitValue | None) -> fetched.OffsetFetchResponsePartitions:
    if value is None:
        return fetched.OffsetFetchResponsePartitions(partition_index=index,
                                                     committed_offset=-1, metadata="")
    return fetched.OffsetFetchResponsePartitions(
        partition_index=index, committed_offset=value.offset,
        committed_leader_epoch=value.leader_epoch, metadata=value.metadata)


def _txn_commit_reply(request: TxnOffsetCommitRequest,
                      error_of: Callable[[tuple[str, int]], int]) -> TxnOffsetCommitResponse:
    return TxnOffsetCommitResponse(topics=tuple(
        TxnOffsetCommitResponseTopic(name=topic.name, partitions=tuple(
            TxnOffsetCommitResponsePartition(
                partition_index=p.partition_index,
                error_code=error_of((topic.name, p.partition_index)))
            for p in topic.partitions))
        for topic in request.topics))


def _commit_reply(request: OffsetCommitRequest,
                  error_of: Callable[[tuple[str, int]], int]) -> committed.OffsetCommitResponse:
    return committed.OffsetCommitResponse(topics=tuple(
        committed.OffsetCommitResponseTopic(name=topic.name, partitions=tuple(
            committed.OffsetCommitResponsePartition(
                partition_index=p.partition_index,
                error_code=error_of((topic.name, p.partition_index)))
            for p in topic.partitions))
        for topic in request.topics))


def _utf16_length(text: str) -> int:
    """Java's ``String.length()``: UTF-16 code units, what offset.metadata.max.bytes counts."""
    return len(text.encode("utf-16-le")) // 2
