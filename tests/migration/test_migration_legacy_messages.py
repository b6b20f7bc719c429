"""The legacy controller RPCs (pykraft.messages.legacy, Kafka 3.9.1's schemas): in step with
their frozen facts, every version round-trips, the bodies the reference run's ZK brokers
logged decode at the versions a KRaft controller sends, and pykraft never serves them."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from migration_captures import LegacyRpc, legacy_rpcs

from message_generator import GEN
from pykraft.errors import MessageDecodeError, UnsupportedVersionError
from pykraft.messages import decode, encode
from pykraft.messages.codec import decode_from
from pykraft.messages.jsonview import from_json_dict, to_json_dict
from pykraft.messages.kafka import API_MESSAGES
from pykraft.messages.legacy import LEGACY_API_MESSAGES
from pykraft.messages.legacy_rpc import (
    decode_legacy_response,
    encode_legacy_request,
    legacy_classes,
)
from pykraft.messages.rpc import RequestHeader, ResponseHeader, decode_request
from pykraft.protocol.apis import API_SPECS, Listener, specs_for_listener
from test_messages_kafka import assert_drawn_round_trips, versions_of

FACTS: dict[str, Any] = json.loads(GEN.LEGACY.facts.read_text())
LEGACY_KEYS = (4, 5, 6, 7)


CLASSES = [cls for key in LEGACY_KEYS for cls in legacy_classes(key)]
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
    for cls, logged in zip(legacy_classes(rpc.api_key), (rpc.request, rpc.response), strict=True):
        msg: object = from_json_dict(cls, rpc.api_version, logged)
        again: object = decode(cls, rpc.api_version, encode(msg, rpc.api_version))
        assert again == msg
        assert json.dumps(to_json_dict(again, rpc.api_version)) == json.dumps(logged)


def test_from_json_refuses_a_field_of_another_version() -> None:
    request, _ = legacy_classes(4)
    with pytest.raises(ValueError, match="isKRaftController"):
        from_json_dict(request, 6, {"controllerId": 1, "isKRaftController": True})


@pytest.mark.parametrize("rpc", CAPTURED, ids=lambda rpc: f"{rpc.api_key}-{rpc.correlation_id}")
def test_frames_carry_the_header_version_of_the_body(rpc: LegacyRpc) -> None:
    """The controller's request frame has header v2 (flexible bodies) with its client id,
    and the broker's answer is read after a v1 header, as Kafka frames them."""
    request_type, response_type = legacy_classes(rpc.api_key)
    header = RequestHeader(rpc.api_key, rpc.api_version, rpc.correlation_id, "3000")
    body: object = from_json_dict(request_type, rpc.api_version, rpc.request)
    frame = encode_legacy_request(header, body)
    decoded, pos = decode_from(RequestHeader, 2, frame)
    assert decoded == header
    again: object = decode(request_type, rpc.api_version, frame[pos:])
    assert again == body
    answer: object = from_json_dict(response_type, rpc.api_version, rpc.response)
    raw = encode(ResponseHeader(rpc.correlation_id), 1) + encode(answer, rpc.api_version)
    response = decode_legacy_response(rpc.api_key, rpc.api_version, raw)
    assert (response.correlation_id, response.body) == (rpc.correlation_id, answer)
    with pytest.raises(MessageDecodeError, match="trailing"):
        decode_legacy_response(rpc.api_key, rpc.api_version, raw + b"\x00")


def test_legacy_frames_refuse_other_apis_versions_and_bodies() -> None:
    request_type, _ = legacy_classes(4)
    with pytest.raises(UnsupportedVersionError):
        legacy_classes(3)
    with pytest.raises(UnsupportedVersionError, match="v8 does not exist"):
        encode_legacy_request(RequestHeader(4, 8, 1, "3000"), request_type())
    with pytest.raises(TypeError, match="is not a LeaderAndIsrRequest"):
        encode_legacy_request(RequestHeader(4, 7, 1, "3000"), legacy_classes(5)[0]())
