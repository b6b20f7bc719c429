"""Replication throttles: Kafka's ``ReplicationQuotaManager`` as sans-I/O state, the time
passed in.

Interface::

    quota = ReplicationQuota(samples=11, window_ms=1000)   # replication.quota.window.*
    quota.bound = 500_000                                  # bytes/s (unlimited by default)
    quota.mark_throttled("t", frozenset({0, 2}))           # or ALL_REPLICAS
    quota.remove_throttle("t")
    quota.is_throttled("t", 0)                             # listed for this broker
    quota.record(size, now_ms)                             # bytes sent or fetched
    quota.is_exceeded(now_ms)                              # measured rate > bound
    throttled_partitions("0:1,1:2", broker_id=1)           # a topic config's list, parsed

A broker has two: the leader's counts what it sends to followers for throttled partitions,
the follower's what it fetches for them; each holds back a throttled partition of a replica
out of sync while its rate is above the bound (the callers decide who is in sync).

The rate is Kafka's ``SimpleRate`` over a ``WindowedSum``: up to ``samples`` + 1 samples of
``window_ms`` each; a sample idle for ``samples`` windows is reset; the rate is the sum of
the samples over the time since the oldest one started, but never over less than one
window. So a burst (one fetch of up to ``replica.fetch.max.bytes``) is paid back by
silence until the average over the last ~11 s is under the bound again.
"""

from __future__ import annotations

from pykraft.windowed_sum import WindowedSum

#: Every partition of a topic (the config's ``*``).
ALL_REPLICAS = frozenset({-1})
UNLIMITED = 2**63 - 1


class SimpleRate(WindowedSum):
    """Bytes per second over sampled windows (Kafka's ``SimpleRate``): the sum over the
    time since the oldest sample started, never less than one window."""

    __slots__ = ()

    def measure(self, now_ms: int) -> float:
        total = self.total(now_ms)
        return total / (max(now_ms - self.oldest_start_ms(now_ms), self.window_ms) / 1000)


class ReplicationQuota:
    """One side's throttle: its bound, the throttled partitions and the measured rate."""

    def __init__(self, *, samples: int, window_ms: int) -> None:
        self.bound = UNLIMITED
        """Bytes per second; Kafka's ``Quota.upperBound`` (a rate equal to it is fine)."""
        self._rate = SimpleRate(samples, window_ms)
        self._throttled: dict[str, frozenset[int]] = {}

    def mark_throttled(self, topic: str, partitions: frozenset[int]) -> None:
        """Throttle ``partitions`` of ``topic`` (:data:`ALL_REPLICAS`: all of them),
        replacing what was throttled of it."""
        self._throttled[topic] = partitions

    def remove_throttle(self, topic: str) -> None:
        self._throttled.pop(topic, None)

    def throttled_topics(self) -> frozenset[str]:
        return frozenset(self._throttled)

    def is_throttled(self, topic: str, partition: int) -> bool:
        partitions = self._throttled.get(topic)
        return partitions is not None and (partitions is ALL_REPLICAS or partition in partitions)

    def record(self, value: int, now_ms: int) -> None:
        """Count ``value`` bytes, even past the bound (in-sync replicas are never held
        back, but their traffic counts)."""
        self._rate.record(value, now_ms)

    def is_exceeded(self, now_ms: int) -> bool:
        return self._rate.measure(now_ms) > self.bound


def throttled_partitions(value: str, broker_id: int) -> frozenset[int] | None:
    """The partitions ``broker_id`` throttles by a ``*.replication.throttled.replicas``
    value (Kafka's ``TopicConfigHandler.parseThrottledPartitions``): None when empty (no
    throttle), :data:`ALL_REPLICAS` for ``*``, else the partitions of ``partition:broker``
    entries naming this broker (entries that do not parse are skipped; the controller
    should have refused them)."""
    value = value.strip()
    if not value:
        return None
    if value == "*":
        return ALL_REPLICAS
    partitions = set()
    for entry in value.split(","):
        partition, _, broker = entry.strip().partition(":")
        if partition.isdigit() and broker.isdigit() and int(broker) == broker_id:
            partitions.add(int(partition))
    return frozenset(partitions)
