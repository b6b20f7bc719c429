"""DescribeClientQuotas from a broker's image: Kafka's filter checks and matching rules."""

from __future__ import annotations

import pytest

from pykraft.broker.quota_describe import DEFAULT, EXACT, SPECIFIED, describe_client_quotas
from pykraft.image.client_quotas import ClientQuotasImage, QuotaEntity
from pykraft.messages.kafka.describe_client_quotas_request import (
    ComponentData,
    DescribeClientQuotasRequest,
)
from pykraft.protocol.errors import ErrorCode

ALICE: QuotaEntity = (("user", "alice"),)
DEFAULT_USER: QuotaEntity = (("user", None),)
ALICE_C1: QuotaEntity = (("client-id", "c1"), ("user", "alice"))
ALICE_ANY_CLIENT: QuotaEntity = (("client-id", None), ("user", "alice"))
C1: QuotaEntity = (("client-id", "c1"),)
IP: QuotaEntity = (("ip", "1.2.3.4"),)
IMAGE = ClientQuotasImage({
    ALICE: {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0},
    DEFAULT_USER: {"request_percentage": 50.0}, ALICE_C1: {"producer_byte_rate": 1.0},
    ALICE_ANY_CLIENT: {"producer_byte_rate": 2.0}, C1: {"consumer_byte_rate": 3.0},
    IP: {"connection_creation_rate": 10.0}})


def component(kind: str, match_type: int, match: str | None = None) -> ComponentData:
    return ComponentData(entity_type=kind, match_type=match_type, match=match)


def matched(*components: ComponentData, strict: bool = False) -> list[QuotaEntity]:
    response = describe_client_quotas(IMAGE, DescribeClientQuotasRequest(
        components=components, strict=strict))
    assert response.error_code == ErrorCode.NONE and response.entries is not None
    return sorted((tuple((e.entity_type, e.entity_name) for e in entry.entity)
                   for entry in response.entries), key=str)


def test_exact_matches_every_entity_naming_it_unless_strict() -> None:
    alice = component("user", EXACT, "alice")
    assert matched(alice) == sorted([ALICE, ALICE_C1, ALICE_ANY_CLIENT], key=str)
    assert matched(alice, strict=True) == [ALICE]


def test_default_matches_the_default_name_only() -> None:
    assert matched(component("user", DEFAULT), strict=True) == [DEFAULT_USER]
    assert matched(component("user", EXACT, "alice"), component("client-id", DEFAULT)) == [
        ALICE_ANY_CLIENT]


def test_specified_matches_any_name_of_the_type_default_included() -> None:
    assert matched(component("user", SPECIFIED), strict=True) == sorted(
        [ALICE, DEFAULT_USER], key=str)
    assert matched(component("client-id", SPECIFIED), strict=True) == [C1]


def test_no_component_matches_everything_and_strict_nothing() -> None:
    assert len(matched()) == len(IMAGE.entities)
    assert matched(strict=True) == []


def test_values_come_with_the_entity() -> None:
    response = describe_client_quotas(IMAGE, DescribeClientQuotasRequest(
        components=(component("ip", EXACT, "1.2.3.4"),), strict=True))
    assert response.entries is not None
    (entry,) = response.entries
    assert [(v.key, v.value) for v in entry.values] == [("connection_creation_rate", 10.0)]


@pytest.mark.parametrize(("components", "code", "message"), [
    ((component("", EXACT, "x"),), ErrorCode.INVALID_REQUEST, "Invalid empty entity type."),
    ((component("user", EXACT, "a"), component("user", SPECIFIED)), ErrorCode.INVALID_REQUEST,
     "Entity type user cannot appear more than once in the filter."),
    ((component("group", EXACT, "g"),), ErrorCode.UNSUPPORTED_VERSION,
     "Unsupported entity type group"),
    ((component("user", EXACT),), ErrorCode.INVALID_REQUEST,
     "Request specified MATCH_TYPE_EXACT, but set match string to null."),
    ((component("user", DEFAULT, "a"),), ErrorCode.INVALID_REQUEST,
     "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
    ((component("user", SPECIFIED, "a"),), ErrorCode.INVALID_REQUEST,
     "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."),
    ((component("user", 7),), ErrorCode.INVALID_REQUEST, "Unknown match type 7"),
    ((component("ip", SPECIFIED), component("user", SPECIFIED)), ErrorCode.INVALID_REQUEST,
     "Invalid entity filter component combination. IP filter component should not be used "
     "with user or clientId filter component."),
], ids=lambda v: str(v)[:30])
def test_a_bad_filter_fails_the_request_without_entries(
        components: tuple[ComponentData, ...], code: ErrorCode, message: str) -> None:
    response = describe_client_quotas(IMAGE, DescribeClientQuotasRequest(
        components=components, strict=False))
    assert (response.error_code, response.error_message, response.entries) == (
        code, message, None)
