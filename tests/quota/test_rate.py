"""Kafka's sampled rate, token bucket and throttle times (pykraft.quota.rate)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.quota.rate import SampledRate, java_round


def test_a_first_recording_is_spread_over_all_but_one_window() -> None:
    rate = SampledRate(samples=11, window_ms=1000)
    rate.record(1000, now_ms=5_000)
    assert rate.window_size_ms(5_000) == 10_000
    assert rate.measure(5_000) == 100.0


def test_throttle_time_is_the_pause_that_brings_the_rate_back_to_the_quota() -> None:
    rate = SampledRate(samples=11, window_ms=1000)
    rate.record(2000, now_ms=0)  # 2000 bytes over the 10 s floor: 200/s
    assert rate.throttle_time_ms(100.0, 0) == 10_000  # (200 - 100) / 100 * 10 s
    assert rate.throttle_time_ms(200.0, 0) == 0


def test_samples_idle_for_the_whole_window_are_forgotten() -> None:
    rate = SampledRate(samples=2, window_ms=1000)
    rate.record(500, now_ms=0)
    assert rate.total(1_999) == 500
    assert rate.total(2_000) == 0


def test_a_negative_value_takes_a_recording_back() -> None:
    rate = SampledRate(samples=11, window_ms=1000)
    rate.record(700, now_ms=0)
    rate.record(300, now_ms=400)
    rate.record(-300, now_ms=400)
    assert rate.total(400) == 700


def test_java_round_rounds_halves_up() -> None:
    assert [java_round(v) for v in (0.5, 1.5, 2.5, -0.5)] == [1, 2, 3, 0]


@settings(max_examples=40, deadline=None)
@given(quota=st.integers(1_000, 1_000_000), samples=st.integers(2, 11),
       chunk_fraction=st.floats(0.05, 0.5))
def test_a_greedy_client_that_obeys_its_throttle_times_holds_its_quota(
        quota: int, samples: int, chunk_fraction: float) -> None:
    """The behaviour quotas exist for: sending as fast as throttle times allow, a client's
    bytes over a long run stay within the quota, give or take Kafka's initial burst of
    ``samples - 1`` windows (the client sends at least ten times its quota unthrottled)."""
    rate = SampledRate(samples, 1000)
    chunk = max(1, int(quota * chunk_fraction))
    horizon_ms = 20_000 * samples
    sent, now = 0, 0
    while now < horizon_ms:
        rate.record(chunk, now)
        sent += chunk
        now += max(rate.throttle_time_ms(quota, now), 1)
    seconds = now / 1000
    assert sent <= quota * (seconds + samples) + chunk
    assert sent >= quota * (seconds - samples) - chunk


