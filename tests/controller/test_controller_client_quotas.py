"""AlterClientQuotas on the controller: Kafka's ClientQuotaControlManager checks, the records
it writes (only what changes), validate_only, and its answers' order and messages."""

from __future__ import annotations

import random

import pytest
from controller_harness import Cluster  # type: ignore[import-not-found]

from pykraft.controller.client_quota_control import alter_client_quotas
from pykraft.controller.context import ControllerConfig, ControllerContext
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.alter_client_quotas_request import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    OpData,
)
from pykraft.messages.kafka.alter_client_quotas_response import AlterClientQuotasResponse
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import ClientQuotaRecord

INVALID = ErrorCode.INVALID_REQUEST
Entity = tuple[tuple[str, str | None], ...]
Answer = list[tuple[Entity, int, str | None]]


def entry(entity: Entity, *ops: tuple[str, float | None]) -> EntryData:
    return EntryData(
        entity=tuple(EntityData(entity_type=kind, entity_name=name) for kind, name in entity),
        ops=tuple(OpData(key=key, value=0.0 if value is None else value, remove=value is None)
                  for key, value in ops))


def answer(response: object) -> Answer:
    assert isinstance(response, AlterClientQuotasResponse)
    return [(tuple((e.entity_type, e.entity_name) for e in r.entity), r.error_code,
             r.error_message) for r in response.entries]


def alter(cluster: Cluster, *entries: EntryData, validate_only: bool = False) -> Answer:
    return answer(cluster.call(AlterClientQuotasRequest(entries=entries,
                                                        validate_only=validate_only)))


def quota_records(cluster: Cluster) -> list[ClientQuotaRecord]:
    return [r.message for r in cluster.raft.metadata_records()
            if isinstance(r.message, ClientQuotaRecord)]


@pytest.fixture
def cluster() -> Cluster:
    started = Cluster()
    started.elect()
    return started


ALICE: Entity = (("user", "alice"),)


def test_set_writes_a_record_per_key_and_the_image_holds_them(cluster: Cluster) -> None:
    assert alter(cluster, entry(ALICE, ("producer_byte_rate", 1024.0),
                                ("request_percentage", 12.5))) == [(ALICE, 0, None)]
    assert cluster.controller.image.client_quotas.entities[ALICE] == {
        "producer_byte_rate": 1024.0, "request_percentage": 12.5}
    assert cluster.replayed_image().client_quotas == cluster.controller.image.client_quotas


def test_an_unchanged_value_writes_nothing_and_removing_an_absent_key_neither(
        cluster: Cluster) -> None:
    alter(cluster, entry(ALICE, ("producer_byte_rate", 1024.0)))
    before = len(quota_records(cluster))
    assert alter(cluster, entry(ALICE, ("producer_byte_rate", 1024.0),
                                ("consumer_byte_rate", None))) == [(ALICE, 0, None)]
    assert len(quota_records(cluster)) == before


def test_remove_drops_the_key_and_the_entity_with_its_last_key(cluster: Cluster) -> None:
    alter(cluster, entry(ALICE, ("producer_byte_rate", 1024.0)))
    assert alter(cluster, entry(ALICE, ("producer_byte_rate", None))) == [(ALICE, 0, None)]
    assert quota_records(cluster)[-1].remove
    assert ALICE not in cluster.controller.image.client_quotas.entities


def test_default_entities_and_a_user_client_pair(cluster: Cluster) -> None:
    pair: Entity = (("client-id", None), ("user", "bob"))
    assert alter(cluster, entry((("user", None),), ("consumer_byte_rate", 10.0)),
                 entry((("user", "bob"), ("client-id", None)), ("producer_byte_rate", 5.0))
                 ) == [(pair, 0, None), ((("user", None),), 0, None)]  # Kafka's hash order
    record = quota_records(cluster)[-1]
    assert [(e.entity_type, e.entity_name) for e in record.entity] == list(pair)
    assert cluster.controller.image.client_quotas.entities[pair] == {"producer_byte_rate": 5.0}


def test_validate_only_checks_and_writes_nothing(cluster: Cluster) -> None:
    assert alter(cluster, entry(ALICE, ("producer_byte_rate", 1024.0)),
                 validate_only=True) == [(ALICE, 0, None)]
    assert quota_records(cluster) == []


@pytest.mark.parametrize(("entity", "ops", "message"), [
    ((), [("producer_byte_rate", 1.0)], "Invalid empty client quota entity"),
    ((("group", "g"),), [("producer_byte_rate", 1.0)],
     "Unhandled client quota entity type: group"),
    ((("user", ""),), [("producer_byte_rate", 1.0)], "Empty user not supported"),
    ((("user", "u"), ("ip", "1.2.3.4")), [("producer_byte_rate", 1.0)],
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    ((("ip", "300.1.1.1"),), [("connection_creation_rate", 1.0)],
     "300.1.1.1 is not a valid IP or resolvable host."),
    ((("ip", "1.2.3.4"),), [("producer_byte_rate", 1.0)],
     "Invalid configuration key producer_byte_rate"),
    (ALICE, [("connection_creation_rate", 1.0)],
     "Invalid configuration key connection_creation_rate"),
    (ALICE, [("producer_byte_rate", 1.5)], "producer_byte_rate cannot be a fractional value."),
    (ALICE, [("producer_byte_rate", 0.0)], "Quota producer_byte_rate must be greater than 0"),
    (ALICE, [("request_percentage", float("inf"))],
     "Quota request_percentage must be a finite number"),
    (ALICE, [("producer_byte_rate", 1e19)],
     "Proposed value for producer_byte_rate is too large for a LONG."),
    ((("ip", "::1"),), [("connection_creation_rate", 2.0**31)],
     "Proposed value for connection_creation_rate is too large for an INT."),
    (ALICE, [("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)],
     "Ignoring duplicate entity ClientQuotaEntity(entries={user=alice})"),
], ids=lambda v: str(v)[:40])
def test_refusals_carry_kafka_s_messages_and_write_nothing(
        cluster: Cluster, entity: Entity, ops: list[tuple[str, float | None]],
        message: str) -> None:
    assert alter(cluster, entry(entity, *ops)) == [(entity, INVALID, message)]
    assert quota_records(cluster) == []


def test_a_refused_op_refuses_its_entity_only(cluster: Cluster) -> None:
    bob: Entity = (("user", "bob"),)
    assert alter(cluster, entry(ALICE, ("producer_byte_rate", 1.0), ("bogus", 1.0)),
                 entry(bob, ("producer_byte_rate", 2.0))) == [
        (ALICE, INVALID, "Invalid configuration key bogus"), (bob, 0, None)]
    assert [r.entity[0].entity_name for r in quota_records(cluster)] == ["bob"]


def test_an_entity_altered_twice_keeps_the_first_records_but_answers_the_second(
        cluster: Cluster) -> None:
    """Kafka's answer map holds one result per entity: the second overwrites the first's,
    while the first's records are written all the same."""
    assert alter(cluster, entry(ALICE, ("producer_byte_rate", 1.0)),
                 entry(ALICE, ("consumer_byte_rate", 2.0))) == [
        (ALICE, INVALID, "Ignoring duplicate entity ClientQuotaEntity(entries={user=alice})")]
    assert cluster.controller.image.client_quotas.entities[ALICE] == {
        "producer_byte_rate": 1.0}


def test_a_type_named_twice_keeps_its_last_name(cluster: Cluster) -> None:
    assert alter(cluster, entry((("user", "a"), ("user", "b")), ("producer_byte_rate", 1.0))
                 ) == [((("user", "b"),), 0, None)]


def test_answers_come_in_java_hash_map_order(cluster: Cluster) -> None:
    names = [f"user-{i}" for i in range(6)]
    answered = alter(cluster, *(entry((("user", n),), ("producer_byte_rate", 1.0))
                                for n in names))
    assert sorted(e[0][1] or "" for e, _, _ in answered) == names
    assert [e[0][1] for e, _, _ in answered] != names  # Kafka's order is not the request's


def test_an_ip_that_is_no_literal_is_valid_when_the_driver_resolves_it() -> None:
    ctx = ControllerContext(ControllerConfig(node_id=0), MetadataImage(), 0, 0,
                            random.Random(0), ip_resolves=lambda host: host == "good.example")
    request = AlterClientQuotasRequest(entries=(
        entry((("ip", "good.example"),), ("connection_creation_rate", 3.0)),
        entry((("ip", "bad.example"),), ("connection_creation_rate", 3.0)),
        entry((("ip", None),), ("connection_creation_rate", 3.0))))
    assert sorted(answer(alter_client_quotas(ctx, request).response),
                  key=lambda a: str(a[0])) == [
        ((("ip", "bad.example"),), INVALID, "bad.example is not a valid IP or resolvable host."),
        ((("ip", "good.example"),), 0, None), ((("ip", None),), 0, None)]


def test_not_controller_answers_every_entry_as_listed() -> None:
    idle = Cluster()
    request = AlterClientQuotasRequest(entries=(entry((("user", "a"), ("user", "b"))),))
    assert answer(idle.call(request)) == [
        ((("user", "a"), ("user", "b")), ErrorCode.NOT_CONTROLLER, None)]
