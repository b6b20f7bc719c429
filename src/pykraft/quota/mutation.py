"""Kafka's controller mutation quota (KIP-599, ``controller_mutation_rate``): the partitions a
client may create or delete a second, on the controller, sans-I/O.

Kafka 4.4's ``ControllerMutationQuotaManager`` keeps a :class:`TokenBucket` per quota metric
tags (the same :class:`~pykraft.quota.resolution.QuotaResolver` as the byte rates, with the
controller's own ``controller.quota.window.*``), and hands each CreateTopics,
CreatePartitions or DeleteTopics request a quota (:class:`MutationQuota`) that the
controller charges per topic with its partition count (``applyPartitionChangeQuota``):

- *strict* (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+): a topic is refused
  (THROTTLING_QUOTA_EXCEEDED) while the client's tokens are below zero, else it goes through
  whatever its size, taking the tokens below zero;
- *permissive* (older versions, whose clients do not know the error): every topic goes
  through, and the tokens below zero after a topic make the throttle time;
- *unbounded* while no entity ever set the key (nothing recorded), or when no entity covers
  the client's tags (Kafka's bucket without a quota records nothing).

The throttle time is the time the bucket takes back to zero, ``-tokens / quota`` seconds
(Java's ``Math.round``), as of the last charge that found the tokens below zero; the response
carries it less the time since (Kafka's ``throttleTime``, read when the response is sent).
"""

from __future__ import annotations

from pykraft.quota.manager import _QuotaKey
from pykraft.quota.rate import java_round
from pykraft.quota.token_bucket import TokenBucket

KEY = "controller_mutation_rate"


class MutationQuota:
    """One request's quota; :data:`UNBOUNDED` for a client without one."""

    __slots__ = ("_bucket", "_burst", "_last_throttle_ms", "_now_ms", "_quota",
                 "_recorded_ms", "strict")

    def __init__(self, bucket: TokenBucket | None, quota: float, burst: float, *,
                 strict: bool, now_ms: int) -> None:
        self._bucket = bucket
        self._quota = quota
        self._burst = burst
        self.strict = strict
        self._now_ms = now_ms
        self._last_throttle_ms = 0
        self._recorded_ms = 0

    def record(self, partitions: int) -> bool:
        """Charge a topic's ``partitions``; False when a strict quota refuses the topic."""
        bucket = self._bucket
        if bucket is None:
            return True
        now = self._now_ms
        if self.strict and bucket.tokens(self._quota, self._burst, now) < 0:
            self._throttled(bucket)
            return False
        bucket.record(partitions, self._quota, self._burst, now)
        if not self.strict and bucket.tokens(self._quota, self._burst, now) < 0:
            self._throttled(bucket)
        return True

    def throttle_time_ms(self, now_ms: int) -> int:
        """The response's ``throttle_time_ms`` when it is sent at ``now_ms``."""
        if self._last_throttle_ms == 0:
            return 0
        return max(0, self._last_throttle_ms - (now_ms - self._recorded_ms))

    def _throttled(self, bucket: TokenBucket) -> None:
        tokens = bucket.tokens(self._quota, self._burst, self._now_ms)
        self._last_throttle_ms = java_round(-tokens / self._quota * 1000)
        self._recorded_ms = self._now_ms


UNBOUNDED = MutationQuota(None, 0.0, 0.0, strict=False, now_ms=0)


class ControllerMutationQuotaManager(_QuotaKey[TokenBucket]):
    """The buckets of ``controller_mutation_rate`` (burst: ``samples * window_s`` seconds at
    the quota)."""

    def __init__(self, samples: int, window_s: int) -> None:
        super().__init__(KEY, lambda _now: TokenBucket())
        self.burst_s = samples * window_s

    def quota_for(self, user: str, client_id: str, *, strict: bool,
                  now_ms: int) -> MutationQuota:
        """The quota of one request of (``user``, ``client_id``) at ``now_ms``."""
        if not self.enabled:
            return UNBOUNDED
        tags = self.resolver.tags(user, client_id)
        bucket = self.meter(tags, now_ms)
        quota = self.resolver.limit(tags)
        if quota is None:
            return UNBOUNDED
        return MutationQuota(bucket, quota, self.burst_s * quota, strict=strict, now_ms=now_ms)
