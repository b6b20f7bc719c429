"""``request_percentage`` as Kafka computes it (pykraft.quota.manager.ClientRequestQuotaManager):
Kafka's ``ClientRequestQuotaManagerTest.testRequestPercentageQuotaViolation``, step for
step, with its figures."""

from __future__ import annotations

from pykraft.image.client_quotas import ClientQuotasImage
from pykraft.quota.manager import ClientRequestQuotaManager

USER, CLIENT = "ANONYMOUS", "test-client"
START_MS = 1_000_000


def _manager() -> ClientRequestQuotaManager:
    manager = ClientRequestQuotaManager(samples=11, window_s=1)
    manager.update(ClientQuotasImage(
        {(("client-id", CLIENT), ("user", USER)): {"request_percentage": 1.0}}))
    return manager


def test_kafka_request_percentage_violation_figures() -> None:
    manager = _manager()
    now = START_MS

    def record(millis: float) -> int:
        return manager.record_time(USER, CLIENT, millis / 1000, now)

    for _ in range(10):  # 4 ms a second: under 1 % (10 ms a second)
        assert record(4) == 0
        now += 1000
    now += 500
    # (4 * 10 + 67.1) ms over 10.5 s is 10.2 ms a second: (10.2 - 10) / 10 * 10.5 s
    assert record(67.1) == 210
    for _ in range(11):  # throttled or not, until the burst's sample is gone
        record(4)
        now += 1000
    assert record(0) == 0  # the burst's sample rolled over
    # a spike needing more than one window to be back within the quota: capped at one
    assert record(500) == 1000
    for _ in range(10):
        now += 1000
        assert record(0) == 1000
    now += 1000
    assert record(0) == 0


def test_time_recorded_without_throttling_counts_against_later_requests() -> None:
    manager = _manager()
    manager.record_time_no_throttle(USER, CLIENT, 0.2, START_MS)  # 200 ms: 2 % over 10 s
    assert manager.throttled == 0
    assert manager.record_time(USER, CLIENT, 0.0, START_MS) == 1000  # 10 s, capped


def test_nothing_is_recorded_without_a_request_percentage_quota() -> None:
    manager = ClientRequestQuotaManager(samples=11, window_s=1)
    manager.update(ClientQuotasImage(
        {(("client-id", CLIENT),): {"producer_byte_rate": 1.0}}))
    assert not manager.enabled
    assert manager.record_time(USER, CLIENT, 100.0, START_MS) == 0
