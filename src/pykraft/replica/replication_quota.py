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

from dataclasses import dataclass

#: Every partition of a topic (the config's ``*``).
ALL_REPLICAS = frozenset({-1})
UNLIMITED = 2**63 - 1


@dataclass(slots=True)
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0

    def reset(self, now_ms: int) -> None:
        self.start_ms = self.last_event_ms = now_ms
        self.value = 0.0


class SimpleRate:
    """Bytes per second over sampled windows (Kafka's ``SimpleRate``/``SampledStat``)."""

    def __init__(self, samples: int, window_ms: int) -> None:
        self._samples_wanted = samples
        self._window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self._window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.last_event_ms = now_ms

    def measure(self, now_ms: int) -> float:
        self._purge(now_ms)
        total = sum(sample.value for sample in self._samples)
        oldest = min((s.start_ms for s in self._samples), default=None)
        if oldest is None:  # Kafka's ``oldest`` starts a sample when there is none
            self._samples.append(_Sample(now_ms, now_ms))
            oldest = now_ms
        return total / (max(now_ms - oldest, self._window_ms) / 1000)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        """The next sample slot; one more than ``samples`` is kept, so a window overlapping
        the measured span still counts."""
        self._current = (self._current + 1) % (self._samples_wanted + 1)
        if self._current >= len(self._samples):
            self._samples.append(_Sample(now_ms, now_ms))
        else:
            self._samples[self._current].reset(now_ms)
        return self._samples[self._current]

    def _purge(self, now_ms: int) -> None:
        expire_ms = self._samples_wanted * self._window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_ms:
                sample.reset(now_ms)


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
