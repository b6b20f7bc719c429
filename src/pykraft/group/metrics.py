"""What Kafka's group coordinator metrics count (``GroupCoordinatorMetrics``, group
``group-coordinator-metrics``, and ``kafka.coordinator.group:type=GroupMetadataManager``):
the sensors every shard of a broker records into, and a shard's census of its groups and
offsets. The runtime maps them to Kafka's names (:mod:`pykraft.broker.coordinator_metrics`).

Interface::

    counters = GroupCounters()            # one a broker, given to each shard
    counters.offset_commits += n          # the shards count as Kafka's sensors record
    census = shard.census()               # groups by (type, state), offsets held
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(slots=True)
class GroupCounters:
    """Kafka's group coordinator sensors (``-count`` attributes), counted by every shard of
    a broker: they outlive a shard's unloading, as Kafka's do. Offset commits count the
    offsets of OffsetCommit and TxnOffsetCommit, deletions those of OffsetDelete,
    expirations those retention removed; a classic rebalance completes when the leader's
    assignment makes the group Stable, a consumer group rebalances when its epoch is
    bumped."""

    offset_commits: int = 0
    offset_expirations: int = 0
    offset_deletions: int = 0
    completed_rebalances: int = 0
    consumer_rebalances: int = 0


@dataclass(frozen=True, slots=True)
class GroupCensus:
    """One shard's groups by (type, state) ("classic", "Stable") and committed offsets."""

    groups: Counter[tuple[str, str]] = field(default_factory=Counter)
    offsets: int = 0
