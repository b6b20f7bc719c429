"""The API table agrees with the generated classes every API is coded with (Kafka 4.4's
schemas) and with Kafka 4.x's version floors."""

from __future__ import annotations

import pytest

from pykraft.messages import schema_of
from pykraft.messages.kafka import API_MESSAGES
from pykraft.messages.rpc import request_class, response_class
from pykraft.protocol.apis import (
    API_SPECS,
    ApiKey,
    ApiSpec,
    Listener,
    api_spec,
    specs_for_listener,
)

SPECS = list(API_SPECS.values())


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.key.name)
def test_every_served_api_is_coded_by_the_generated_classes_of_its_key(spec: ApiSpec) -> None:
    """The table's key is the one Kafka's schema gives the API's generated classes, which
    the codec codes every served API with."""
    name, stem = API_MESSAGES[spec.key]
    assert stem.upper() == spec.key.name
    assert request_class(spec.key).__name__ == f"{name}Request"
    assert response_class(spec.key).__name__ == f"{name}Response"


#: Versions Kafka 4.x's schemas have but marks latestVersionUnstable and does not advertise.
UNSTABLE_IN_KAFKA = {ApiKey.INIT_PRODUCER_ID: {6}}  # KIP-939 two-phase commit


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.key.name)
def test_a_generated_api_is_served_at_every_version_kafka_has(spec: ApiSpec) -> None:
    newest = spec.max_version
    for cls in (request_class(spec.key), response_class(spec.key)):
        schema = schema_of(cls)
        assert schema.valid_versions is not None
        kafka = [v for v in range(newest + 2) if v in schema.valid_versions
                 and v not in UNSTABLE_IN_KAFKA.get(spec.key, set())]
        assert kafka[-1] == newest
        assert list(spec.versions) == [v for v in kafka if v <= spec.max_version]
        assert all(schema.is_flexible(v) == spec.is_flexible(v) for v in spec.versions)


def test_kip_896_floors_and_kraft_ranges() -> None:
    expected = {
        ApiKey.FETCH: (4, 18),
        ApiKey.CREATE_TOPICS: (2, 7),
        ApiKey.DELETE_TOPICS: (1, 6),
        ApiKey.DESCRIBE_CONFIGS: (1, 4),
        ApiKey.ALTER_PARTITION: (2, 3),
        ApiKey.METADATA: (0, 13),
        ApiKey.VOTE: (0, 2),
        ApiKey.BROKER_HEARTBEAT: (0, 2),
        ApiKey.ADD_RAFT_VOTER: (0, 1),
        ApiKey.API_VERSIONS: (0, 5),
        ApiKey.INIT_PRODUCER_ID: (0, 5),
        ApiKey.ALLOCATE_PRODUCER_IDS: (0, 0),
        ApiKey.LIST_OFFSETS: (1, 11),
        ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4),
        ApiKey.ALTER_REPLICA_LOG_DIRS: (1, 2),
        ApiKey.DESCRIBE_LOG_DIRS: (1, 5),
        ApiKey.DELETE_RECORDS: (0, 2),
        ApiKey.OFFSET_COMMIT: (2, 10),
        ApiKey.OFFSET_FETCH: (1, 10),
        ApiKey.FIND_COORDINATOR: (0, 6),
        ApiKey.JOIN_GROUP: (0, 9),  # Kafka 4.4 kept v0-1 (KIP-896 dropped it)
        ApiKey.DESCRIBE_GROUPS: (0, 6),
        ApiKey.WRITE_TXN_MARKERS: (1, 2),
        ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    }
    for key, versions in expected.items():
        spec = API_SPECS[key]
        assert (spec.min_version, spec.max_version) == versions


def test_flexibility_traps() -> None:
    assert not API_SPECS[ApiKey.BEGIN_QUORUM_EPOCH].is_flexible(0)
    assert API_SPECS[ApiKey.BEGIN_QUORUM_EPOCH].is_flexible(1)
    assert API_SPECS[ApiKey.VOTE].is_flexible(0)
    assert not API_SPECS[ApiKey.SASL_HANDSHAKE].is_flexible(1)


def test_listeners() -> None:
    controller = {spec.key for spec in specs_for_listener(Listener.CONTROLLER)}
    broker = {spec.key for spec in specs_for_listener(Listener.BROKER)}
    assert {52, 53, 54, 56, 59, 62, 63, 67, 70, 82}.isdisjoint(broker)
    assert {52, 53, 54, 59, 62, 63, 67, 70, 80, 81, 82} <= controller
    assert {ApiKey.METADATA, ApiKey.INIT_PRODUCER_ID}.isdisjoint(controller)
    assert {3, 18, 19, 20, 22, 55, 80, 81} <= broker
    assert controller | broker == set(API_SPECS)
    keys = [spec.key for spec in specs_for_listener(Listener.BROKER)]
    assert keys == sorted(keys)


def test_unknown_api_has_no_spec() -> None:
    assert api_spec(7) is None
    assert api_spec(52) is API_SPECS[ApiKey.VOTE]
