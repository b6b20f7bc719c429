"""The controller mutation quota's token bucket and its strict and permissive quotas
(pykraft.quota.token_bucket, pykraft.quota.mutation), as Kafka 4.4's TokenBucket,
StrictControllerMutationQuota and PermissiveControllerMutationQuota compute them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.image.client_quotas import CLIENT_ID, USER, ClientQuotasImage, QuotaEntity
from pykraft.quota.mutation import KEY, UNBOUNDED, ControllerMutationQuotaManager
from pykraft.quota.token_bucket import TokenBucket

ALICE: QuotaEntity = ((USER, "alice"),)
T0 = 1_764_000_000_000  # a wall clock's now, as Kafka's controller reads it


def manager(rate: float, entity: QuotaEntity = ALICE, *, samples: int = 11,
            window_s: int = 1) -> ControllerMutationQuotaManager:
    quotas = ControllerMutationQuotaManager(samples, window_s)
    quotas.update(ClientQuotasImage({entity: {KEY: rate}}))
    return quotas


def test_a_new_bucket_is_full_and_refills_at_the_quota_up_to_the_burst() -> None:
    bucket = TokenBucket()
    assert bucket.tokens(2.0, 22.0, T0) == 22.0
    bucket.record(30, 2.0, 22.0, T0)
    assert bucket.tokens(2.0, 22.0, T0) == -8.0
    assert bucket.tokens(2.0, 22.0, T0 + 1500) == -5.0
    assert bucket.tokens(2.0, 22.0, T0 + 3_600_000) == 22.0


def test_the_burst_is_the_windows_at_the_quota() -> None:
    quota = manager(1.0, samples=5, window_s=2).quota_for("alice", "c", strict=True,
                                                         now_ms=T0)
    assert quota.record(10)  # 10 tokens in the bucket: goes through, leaves 0
    assert quota.record(1)  # 0 is not below zero: goes through too
    assert not quota.record(1)


def test_strict_lets_any_size_through_until_the_tokens_are_below_zero() -> None:
    quotas = manager(1.0)
    first = quotas.quota_for("alice", "c", strict=True, now_ms=T0)
    assert first.record(20)  # 11 tokens: 20 partitions go through, 9 below zero
    assert first.throttle_time_ms(T0) == 0  # a strict quota that refused nothing
    assert not first.record(1)
    assert first.throttle_time_ms(T0) == 9000
    assert first.throttle_time_ms(T0 + 2500) == 6500  # read when the response is sent
    later = quotas.quota_for("alice", "c", strict=True, now_ms=T0 + 4000)
    assert not later.record(1)
    assert later.throttle_time_ms(T0 + 4000) == 5000
    assert quotas.quota_for("alice", "c", strict=True, now_ms=T0 + 9000).record(1)


def test_permissive_lets_everything_through_and_throttles_after() -> None:
    quotas = manager(2.0)
    quota = quotas.quota_for("alice", "c", strict=False, now_ms=T0)
    assert quota.record(10)  # 22 tokens: 12 left, no throttle
    assert quota.throttle_time_ms(T0) == 0
    assert quota.record(15)  # 3 below zero: 1.5 s at 2 a second
    assert quota.record(1)  # 4 below zero
    assert quota.throttle_time_ms(T0) == 2000


def test_throttle_times_round_as_java() -> None:
    quota = manager(3.0).quota_for("alice", "c", strict=False, now_ms=T0)
    quota.record(34)  # 33 tokens: 1 below zero, 1/3 s
    assert quota.throttle_time_ms(T0) == 333


def test_without_any_quota_nothing_is_recorded() -> None:
    quotas = ControllerMutationQuotaManager(11, 1)
    quotas.update(ClientQuotasImage({ALICE: {"producer_byte_rate": 1.0}}))
    assert not quotas.enabled
    assert quotas.quota_for("alice", "c", strict=True, now_ms=T0) is UNBOUNDED
    assert UNBOUNDED.record(1_000_000) and UNBOUNDED.throttle_time_ms(T0) == 0


def test_a_client_no_entity_covers_is_unbounded_and_others_have_buckets_of_their_own() -> None:
    quotas = manager(1.0, ((CLIENT_ID, "slow"),))
    assert quotas.quota_for("alice", "fast", strict=True, now_ms=T0) is UNBOUNDED
    slow = quotas.quota_for("bob", "slow", strict=True, now_ms=T0)
    assert slow.record(12) and not slow.record(1)
    other = manager(1.0, ((USER, None),))  # the default user: one bucket per user
    assert other.quota_for("alice", "c", strict=True, now_ms=T0).record(12)
    assert other.quota_for("bob", "c", strict=True, now_ms=T0).record(12)
    assert not other.quota_for("alice", "d", strict=True, now_ms=T0).record(1)


def test_a_lower_quota_set_later_caps_the_tokens_already_there() -> None:
    quotas = manager(10.0)
    assert quotas.quota_for("alice", "c", strict=True, now_ms=T0).record(100)  # 110 -> 10
    quotas.update(ClientQuotasImage({ALICE: {KEY: 0.5}}))  # burst 5.5
    quota = quotas.quota_for("alice", "c", strict=True, now_ms=T0)
    assert quota.record(6) and not quota.record(1)  # 5.5 - 6: half a token below zero
    assert quota.throttle_time_ms(T0) == 1000


@settings(max_examples=30, deadline=None)
@given(rate=st.integers(1, 50), size=st.integers(1, 200))
def test_a_strict_client_that_waits_out_its_throttle_holds_its_quota(rate: int,
                                                                     size: int) -> None:
    """What the quota is for: a client creating ``size`` partitions whenever it is let
    through, and waiting out each refusal's throttle time, creates no more than the burst
    plus the quota's rate over a long run (and one request's size beyond it)."""
    quotas = manager(float(rate))
    created, now, horizon = 0, T0, T0 + 600_000
    while now < horizon:
        quota = quotas.quota_for("alice", "c", strict=True, now_ms=now)
        if quota.record(size):
            created += size
        now += max(quota.throttle_time_ms(now), 1)
    assert created <= 11 * rate + rate * 600 + size
    assert created >= rate * 600 - size
