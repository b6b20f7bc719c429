"""The replication quota's rate (Kafka's SimpleRate over sampled windows) and throttled
replica lists, as Kafka's ReplicationQuotaManager computes them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pykraft.replica.replication_quota import (
    ALL_REPLICAS,
    UNLIMITED,
    ReplicationQuota,
    SimpleRate,
    throttled_partitions,
)


def test_rate_is_over_at_least_one_window() -> None:
    rate = SimpleRate(11, 1000)
    rate.record(500, 0)
    assert rate.measure(0) == 500  # 500 bytes over the minimum window of 1 s
    assert rate.measure(500) == 500
    assert rate.measure(2000) == 250  # over the 2 s since the oldest sample began


def test_rate_forgets_samples_idle_for_the_whole_span() -> None:
    rate = SimpleRate(11, 1000)
    rate.record(11_000, 0)
    assert rate.measure(10_999) == 11_000 / 10.999
    assert rate.measure(11_000) == 0  # idle for 11 windows: reset


def test_rate_spans_the_samples_kept() -> None:
    rate = SimpleRate(2, 1000)
    for second in range(5):
        rate.record(1000, second * 1000)
    # the sample of 2 s, idle for 2 windows, is reset: those of 3 and 4 s remain
    assert rate.measure(4000) == 2000


def test_a_measure_before_any_record_starts_the_span() -> None:
    rate = SimpleRate(11, 1000)
    assert rate.measure(1000) == 0
    rate.record(3000, 4000)
    assert rate.measure(4000) == 1000  # 3000 bytes since the sample begun at 1 s


@given(st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 100_000)), max_size=60),
       st.integers(1, 20), st.integers(1, 3))
def test_rate_never_exceeds_what_was_recorded_over_a_window(
        events: list[tuple[int, int]], samples: int, window_s: int) -> None:
    """The rate is at most everything recorded over one window, and 0 with nothing kept."""
    rate = SimpleRate(samples, window_s * 1000)
    now = 0
    total = 0
    for step, size in events:
        now += step
        rate.record(size, now)
        total += size
        measured = rate.measure(now)
        assert 0 <= measured <= total / window_s
    assert rate.measure(now + samples * window_s * 1000) == 0


@given(st.integers(1_000, 1_000_000), st.integers(2, 50))
def test_a_throttled_sender_keeps_the_average_at_the_bound(bound: int, chunks: int) -> None:
    """Sending a chunk of ``bound / chunks`` bytes whenever the quota is not exceeded
    (checked every 10 ms) moves within 2 % of bound * t bytes in t seconds, one chunk
    aside."""
    chunk = bound // chunks
    quota = ReplicationQuota(samples=11, window_ms=1000)
    quota.bound = bound
    quota.mark_throttled("t", ALL_REPLICAS)
    sent = 0
    for now in range(0, 30_000, 10):
        if not quota.is_exceeded(now):
            quota.record(chunk, now)
            sent += chunk
    assert 0.98 * bound * 30 <= sent - chunk <= bound * 30


def test_quota_bound_and_throttled_partitions() -> None:
    quota = ReplicationQuota(samples=11, window_ms=1000)
    assert quota.bound == UNLIMITED
    quota.record(10**12, 0)
    assert not quota.is_exceeded(0)
    quota.bound = 1000
    assert quota.is_exceeded(0)
    quota.mark_throttled("a", frozenset({0, 2}))
    quota.mark_throttled("b", ALL_REPLICAS)
    assert [quota.is_throttled("a", p) for p in range(3)] == [True, False, True]
    assert quota.is_throttled("b", 7) and not quota.is_throttled("c", 0)
    quota.remove_throttle("a")
    assert not quota.is_throttled("a", 0)
    assert quota.throttled_topics() == {"b"}


def test_a_rate_equal_to_the_bound_is_within_it() -> None:
    quota = ReplicationQuota(samples=11, window_ms=1000)
    quota.bound = 1000
    quota.record(1000, 0)
    assert not quota.is_exceeded(0)
    quota.record(1, 0)
    assert quota.is_exceeded(0)


def test_throttled_replica_lists() -> None:
    assert throttled_partitions("", 1) is None
    assert throttled_partitions("  ", 1) is None
    assert throttled_partitions(" * ", 1) is ALL_REPLICAS
    assert throttled_partitions("0:1,0:2,1:2, 3:1", 1) == frozenset({0, 3})
    assert throttled_partitions("0:1,0:2", 3) == frozenset()
    assert throttled_partitions("x:1,2:1", 1) == frozenset({2})
