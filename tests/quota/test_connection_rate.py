"""``connection_creation_rate`` per address (pykraft.quota.connection_rate), with Kafka's
ConnectionQuotas figures: a connection beyond the rate is throttled and not recorded."""

from __future__ import annotations

from pykraft.image.client_quotas import ClientQuotasImage
from pykraft.quota.connection_rate import IpConnectionRates, canonical_ip

START_MS = 1_000_000


def _rates(quotas: dict[str | None, float], samples: int = 11) -> IpConnectionRates:
    rates = IpConnectionRates(samples, window_s=1)
    rates.update(ClientQuotasImage({(("ip", name),): {"connection_creation_rate": value}
                                    for name, value in quotas.items()}))
    return rates


def test_connections_beyond_the_rate_are_throttled_and_not_recorded() -> None:
    rates = _rates({"10.0.0.1": 5})
    # 11 windows of 1 s: a rate spans 10 s at least, so 50 connections pass at once
    assert [rates.record("10.0.0.1", START_MS) for _ in range(50)] == [0] * 50
    # the 51st: 5.1 a second, (5.1 - 5) / 5 * 10 s = 200 ms; not recorded, so again
    assert rates.record("10.0.0.1", START_MS) == 200
    assert rates.record("10.0.0.1", START_MS) == 200
    assert rates.throttled == 2
    assert rates.record("10.0.0.1", START_MS + 200) == 0  # 51 over 10.2 s: 5 a second


def test_a_throttle_is_at_most_one_window() -> None:
    rates = _rates({"10.0.0.1": 1}, samples=2)
    assert rates.record("10.0.0.1", START_MS) == 0
    assert rates.record("10.0.0.1", START_MS) == 1000  # 2 a second: 1 s, the cap


def test_the_default_entity_holds_for_addresses_without_their_own() -> None:
    rates = _rates({None: 1, "10.0.0.2": 100}, samples=2)
    assert rates.quota("10.0.0.9") == 1
    assert rates.quota("10.0.0.2") == 100
    assert rates.record("10.0.0.9", START_MS) == 0
    assert rates.record("10.0.0.8", START_MS) == 0  # a rate per address
    assert rates.record("10.0.0.9", START_MS) > 0


def test_without_a_quota_nothing_is_limited_or_recorded() -> None:
    rates = _rates({"10.0.0.2": 1}, samples=2)
    assert rates.quota("10.0.0.1") is None
    assert [rates.record("10.0.0.1", START_MS) for _ in range(100)] == [0] * 100
    rates.update(ClientQuotasImage({(("ip", "10.0.0.1"),): {"connection_creation_rate": 1}}))
    assert rates.record("10.0.0.1", START_MS) == 0  # the connections before were not counted


def test_addresses_compare_as_addresses() -> None:
    assert canonical_ip("0:0:0:0:0:0:0:1") == canonical_ip("[::1]") == "::1"
    rates = _rates({"0:0:0:0:0:0:0:1": 3})
    assert rates.quota(canonical_ip("::1")) == 3
