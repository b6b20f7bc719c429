"""Kafka's quota precedence and rate tags (pykraft.quota.resolution, manager)."""

from __future__ import annotations

from pykraft.image.client_quotas import ClientQuotasImage, QuotaEntity
from pykraft.quota.manager import ClientQuotaManager
from pykraft.quota.resolution import Level, QuotaResolver, level_of

C, U = "client-id", "user"
#: Kafka's eight levels, most specific first, as the image keys them (None: <default>).
LEVELS: list[QuotaEntity] = [
    ((C, "c"), (U, "u")), ((C, None), (U, "u")), ((U, "u"),),
    ((C, "c"), (U, None)), ((C, None), (U, None)), ((U, None),),
    ((C, "c"),), ((C, None),)]


def _limit(entities: list[QuotaEntity]) -> float | None:
    quotas = {entity: float(LEVELS.index(entity) + 1) for entity in entities}
    levels = Level.NONE
    for entity in quotas:
        levels |= level_of(entity)
    resolver = QuotaResolver(quotas, levels)
    return resolver.limit(resolver.tags("u", "c"))


def test_the_most_specific_level_defined_wins() -> None:
    for index in range(len(LEVELS)):
        assert _limit(LEVELS[index:]) == index + 1, LEVELS[index]


def test_no_entity_no_quota() -> None:
    assert _limit([]) is None


def test_a_client_id_default_quota_gives_every_client_id_its_own_rate() -> None:
    manager = ClientQuotaManager("producer_byte_rate", samples=11, window_s=1)
    manager.update(ClientQuotasImage({((C, None),): {"producer_byte_rate": 100.0}}))
    assert manager.record("alice", "one", 1000, now_ms=0) == 0  # 100/s over 10 s
    assert manager.record("bob", "two", 1000, now_ms=0) == 0  # another rate
    assert manager.record("carol", "one", 1000, now_ms=0) == 10_000  # one's, doubled
    assert manager.throttled == 1


def test_a_throttled_recording_can_be_taken_back() -> None:
    manager = ClientQuotaManager("consumer_byte_rate", samples=11, window_s=1)
    manager.update(ClientQuotasImage({((C, "c"),): {"consumer_byte_rate": 100.0}}))
    assert manager.max_value_in_window("u", "c") == 1000.0
    assert manager.record("u", "c", 1500, now_ms=0) > 0
    manager.unrecord("u", "c", 1500, now_ms=0)
    assert manager.record("u", "c", 1000, now_ms=0) == 0


def test_nothing_is_throttled_before_a_quota_of_the_key_is_set() -> None:
    manager = ClientQuotaManager("producer_byte_rate", samples=11, window_s=1)
    manager.update(ClientQuotasImage({((C, "c"),): {"consumer_byte_rate": 1.0}}))
    assert not manager.enabled
    assert manager.record("u", "c", 10**9, now_ms=0) == 0
    assert manager.max_value_in_window("u", "c") is None
