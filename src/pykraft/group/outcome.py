"""What a coordinator shard hands back to the runtime for each input.

A shard (one per led ``__consumer_offsets`` partition) applies every change to its own state
at once and returns the records that make the change durable plus the replies it owes. The
runtime appends ``records`` as one batch to the shard's partition and sends ``replies`` only
once that batch (and every batch before it) is committed, so no client ever sees a state the
log might lose. When the append fails the runtime answers the replies with an error and
reverts the shard's changes (or reloads it from the log, which drops them).

Replies may answer requests from earlier inputs: a JoinGroup is parked until its rebalance
completes, then answered in the outcome of whatever input completed it (another join, a
timer). A request is named by the token the runtime gave it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from pykraft.group.messages import ShardResponse

ReplyToken = int
"""The runtime's name for one request in flight to a shard."""


@dataclass(frozen=True, slots=True)
class OffsetsRecord:
    """One record of ``__consumer_offsets``: a version-prefixed key, and a version-prefixed
    value or ``None`` for a tombstone (deletion; compaction then drops the key)."""

    key: bytes
    value: bytes | None


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """What the metadata image says of a topic, for assignors and offset checks."""

    topic_id: uuid.UUID
    partitions: int


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Everything a request brings besides its body: the caller and the runtime's view of
    time and topics (the shard owns no clock and no image)."""

    now_ms: int
    client_id: str
    client_host: str
    topics: Mapping[str, TopicInfo] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TransactionalRecords:
    """A producer's records in its transaction (TxnOffsetCommit): appended as one batch of
    their own with the producer's id and epoch, which the transaction's marker on this
    partition commits or aborts."""

    producer_id: int
    producer_epoch: int
    records: list[OffsetsRecord]


@dataclass(slots=True)
class Outcome:
    """Records to append, then replies to send once they are committed; a transaction's
    records are appended after ``records``, as their own batch."""

    records: list[OffsetsRecord] = field(default_factory=list)
    replies: list[tuple[ReplyToken, ShardResponse]] = field(default_factory=list)
    transactional: TransactionalRecords | None = None

    def extend(self, other: Outcome) -> None:
        """Append ``other``'s records and replies after this outcome's own (at most one of
        the two writes a transaction's)."""
        self.records.extend(other.records)
        self.replies.extend(other.replies)
        if other.transactional is not None:
            assert self.transactional is None, "one transactional batch per outcome"
            self.transactional = other.transactional
