"""The legacy controller RPCs (pykraft.messages.legacy, Kafka 3.9.1's schemas): in step with
their frozen facts, every version round-trips, the bodies the reference run's ZK brokers
logged decode at the versions a KRaft controller sends, and pykraft never serves them."""

from __future__ import annotations

import importlib
import json
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from migration_captures import LegacyRpc, legacy_rpcs

from message_generator import GEN
from pykraft.errors import UnsupportedVersionError
from pykraft.messages import decode, encode
from pykraft.messages.jsonview import from_json_dict, to_json_dict
from pykraft.messages.kafka import API_MESSAGES
from pykraft.messages.legacy import LEGACY_API_MESSAGES
from pykraft.messages.rpc import decode_request
from pykraft.protocol.apis import API_SPECS, Listener, specs_for_listener
from test_messages_kafka import assert_drawn_round_trips, versions_of

FACTS: dict[str, Any] = json.loads(GEN.LEGACY.facts.read_text())
LEGACY_KEYS = (4, 5, 6, 7)


def _classes(api_key: int) -> tuple[type, type]:
    name, stem = LEGACY_API_MESSAGES[api_key]
    package = "pykraft.messages.legacy"
    return (getattr(importlib.import_module(f"{package}.{stem}_request"), f"{name}Request"),
            getattr(importlib.import_module(f"{package}.{stem}_response"), f"{name}Response"))


CLASSES = [cls for key in LEGACY_KEYS for cls in _classes(key)]
#: The versions a KRaft controller sends at metadata.version 3.4-IV0 and later (migration-plan
#: §8); the request logs of the reference run saw only these.
KRAFT_CONTROLLER_VERSIONS = {4: 7, 5: 4, 6: 8}
CAPTURED = [rpc for broker in (1, 2, 3) for rpc in legacy_rpcs(broker)]


def test_checked_in_modules_are_what_the_frozen_facts_generate() -> None:
    assert GEN.stale_modules(GEN.LEGACY, FACTS) == []
    assert GEN.LEGACY.facts.read_text() == GEN.dump_facts(FACTS)


def test_facts_are_kafka_3_9_1s_four_legacy_apis() -> None:
    assert FACTS["source"] == {
        "repository": "apache/kafka", "release": "3.9.1", "commit": "f745dfdcee2b9851",
        "directory": "clients/src/main/resources/common/message",
    }
    assert sorted(LEGACY_API_MESSAGES) == list(LEGACY_KEYS)
    versions = {message["name"]: message["validVersions"] for message in FACTS["legacy"]}
    assert versions == {
        "LeaderAndIsrRequest": "0-7", "LeaderAndIsrResponse": "0-7",
        "StopReplicaRequest": "0-4", "StopReplicaResponse": "0-4",
        "UpdateMetadataRequest": "0-8", "UpdateMetadataResponse": "0-8",
        "ControlledShutdownRequest": "0-3", "ControlledShutdownResponse": "0-3",
    }


def test_pykraft_neither_serves_nor_advertises_them() -> None:
    """Kafka 4 removed APIs 4-7: no listener lists them in ApiVersions, and a request frame
    of one is refused as an unknown api, naming its correlation id."""
    assert not set(LEGACY_KEYS) & set(API_MESSAGES)
    assert not set(LEGACY_KEYS) & set(API_SPECS)
    for listener in Listener:
        assert not {spec.key for spec in specs_for_listener(listener)} & set(LEGACY_KEYS)
    for key, version in KRAFT_CONTROLLER_VERSIONS.items():
        with pytest.raises(UnsupportedVersionError) as caught:
            decode_request(struct.pack(">hhi", key, version, 17) + b"\x00\x00")
        assert caught.value.correlation_id == 17


def test_default_instance_round_trips_at_every_version() -> None:
    for cls in CLASSES:
        msg = cls()
        for version in versions_of(cls):
            assert decode(cls, version, encode(msg, version)) == msg, (cls, version)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_drawn_message_round_trips_at_every_version(cls: type, data: st.DataObject) -> None:
    assert_drawn_round_trips(cls, data)


def test_the_capture_holds_each_api_at_the_kraft_controllers_version() -> None:
    seen = {(rpc.api_key, rpc.api_version) for rpc in CAPTURED}
    assert seen == set(KRAFT_CONTROLLER_VERSIONS.items())


@pytest.mark.parametrize("rpc", CAPTURED, ids=lambda rpc: f"{rpc.api_key}-{rpc.correlation_id}")
def test_captured_bodies_encode_and_decode_to_what_the_broker_logged(rpc: LegacyRpc) -> None:
    """Built from the logged JSON, encoded and decoded, each request and its response prints
    as the broker's request log did, key for key and in Kafka's field order."""
    for cls, logged in zip(_classes(rpc.api_key), (rpc.request, rpc.response), strict=True):
        msg: object = from_json_dict(cls, rpc.api_version, logged)
        again: object = decode(cls, rpc.api_version, encode(msg, rpc.api_version))
        assert again == msg
        assert json.dumps(to_json_dict(again, rpc.api_version)) == json.dumps(logged)


def test_from_json_refuses_a_field_of_another_version() -> None:
    request, _ = _classes(4)
    with pytest.raises(ValueError, match="isKRaftController"):
        from_json_dict(request, 6, {"controllerId": 1, "isKRaftController": True})
