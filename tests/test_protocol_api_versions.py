"""ApiVersions responses, the KIP-511 fallback reply, and version negotiation."""

from __future__ import annotations

import dataclasses

import pytest
from kafka.protocol.metadata import ApiVersionsResponse as KafkaPythonApiVersionsResponse

from pykraft.errors import UnsupportedVersionError
from pykraft.protocol.api_versions import (
    ApiVersionsRequest,
    FeatureRange,
    api_versions_error,
    api_versions_response,
    encode_unsupported_version_reply,
    listener_ranges,
    negotiate,
    ranges_from_response,
    refused_api_versions,
    unsupported_version_response,
)
from pykraft.protocol.apis import ApiKey, Listener, specs_for_listener
from pykraft.protocol.codec import decode_request, decode_response, encode_response
from pykraft.protocol.errors import ErrorCode


def test_response_lists_the_listener_apis() -> None:
    for listener in Listener:
        for version in range(6):
            body = api_versions_response(listener, version)
            assert body.error_code == ErrorCode.NONE
            assert ranges_from_response(body) == listener_ranges(listener)
            assert len(body.api_keys) == len(specs_for_listener(listener))


def test_features_and_throttle_on_the_wire() -> None:
    features = [FeatureRange("metadata.version", 7, 25), FeatureRange("kraft.version", 0, 1)]
    finalized = [FeatureRange("metadata.version", 1, 21)]
    body = api_versions_response(
        Listener.CONTROLLER,
        4,
        throttle_time_ms=12,
        supported_features=features,
        finalized_features_epoch=33,
        finalized_features=finalized,
    )
    wire = encode_response(5, 18, 4, body)
    decoded = KafkaPythonApiVersionsResponse.decode(wire, version=4, header=True)
    assert decoded.throttle_time_ms == 12
    assert [(f.name, f.min_version, f.max_version) for f in decoded.supported_features] == [
        ("metadata.version", 7, 25),
        ("kraft.version", 0, 1),
    ]
    assert decoded.finalized_features_epoch == 33
    assert [
        (f.name, f.min_version_level, f.max_version_level) for f in decoded.finalized_features
    ] == [("metadata.version", 1, 21)]


def test_v3_drops_features_with_minimum_zero() -> None:
    features = [FeatureRange("metadata.version", 7, 25), FeatureRange("kraft.version", 0, 1)]
    body = api_versions_response(Listener.BROKER, 3, supported_features=features)
    assert [feature.name for feature in body.supported_features] == ["metadata.version"]


def test_versions_below_3_have_no_feature_fields() -> None:
    """Kafka's feature fields are ignorable: written at v2 they are left out."""
    body = api_versions_response(
        Listener.BROKER, 2, throttle_time_ms=5,
        supported_features=[FeatureRange("metadata.version", 7, 25)]
    )
    frame = decode_response(18, 2, encode_response(1, 18, 2, body))
    assert frame.body.supported_features == ()
    assert frame.body == dataclasses.replace(body, supported_features=())


def test_unsupported_version_reply_bytes() -> None:
    """Only ApiVersions' own range, as Kafka's ``ApiVersionsRequest.getErrorResponse``."""
    wire = encode_unsupported_version_reply(0x63, Listener.CONTROLLER)
    assert wire == bytes.fromhex("00000063" "0023" "00000001" "001200000005")
    assert unsupported_version_response(Listener.CONTROLLER).error_code == 35


def test_unsupported_api_versions_request_flow() -> None:
    """A v127 ApiVersions request: the server learns the correlation id and answers v0."""
    with pytest.raises(UnsupportedVersionError) as caught:
        decode_request(bytes.fromhex("0012007f00000042000474657374"))
    assert caught.value.correlation_id == 0x42
    reply = encode_unsupported_version_reply(caught.value.correlation_id, Listener.BROKER)
    for asked in (0, 3, 4, 5):  # whatever the client asked for, the reply reads as v0
        frame = decode_response(18, asked, reply)
        assert (frame.correlation_id, frame.api_version) == (0x42, 0)
        assert frame.body.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert ranges_from_response(frame.body)[ApiKey.API_VERSIONS] == (0, 5)


def test_negotiate_picks_highest_common_version() -> None:
    ours = {52: (0, 2), 53: (0, 1), 1: (4, 18), 60: (0, 2)}
    theirs = {52: (0, 1), 53: (2, 3), 1: (0, 17)}
    assert negotiate(ours, theirs) == {52: 1, 53: None, 1: 17, 60: None}


def test_negotiate_with_ourselves_is_our_maximum() -> None:
    ranges = listener_ranges(Listener.CONTROLLER)
    assert negotiate(ranges, ranges) == {key: high for key, (_, high) in ranges.items()}


def test_node_features_names_what_pykraft_implements_and_the_finalized_levels() -> None:
    from pykraft.protocol.api_versions import node_features

    fields = node_features({"metadata.version": 21}, 1, 57)
    body = api_versions_response(Listener.BROKER, 4, **fields)
    assert sorted((f.name, f.min_version, f.max_version) for f in body.supported_features) == [
        ("eligible.leader.replicas.version", 0, 1), ("kraft.version", 0, 1),
        ("metadata.version", 7, 29), ("transaction.version", 0, 2)]
    assert sorted((f.name, f.min_version_level, f.max_version_level)
                  for f in body.finalized_features) == [
        ("kraft.version", 1, 1), ("metadata.version", 21, 21)]
    assert body.finalized_features_epoch == 57
    # kraft.version 0 is not finalized (Kafka lists no level-0 feature), and v3 leaves out
    # supported features whose minimum is 0 (KAFKA-17492)
    static = api_versions_response(Listener.BROKER, 3, **node_features(
        {"metadata.version": 21}, 0, 5))
    assert [f.name for f in static.finalized_features] == ["metadata.version"]
    assert [f.name for f in static.supported_features] == ["metadata.version"]


_CLUSTER, _NODE = "6U_ZDAzXShm0XXRIPFw9VA", 1000
_OTHER_CLUSTER = "AAAAAAAAAAAAAAAAAAAAAA"
#: (cluster id, node id) named by a v5 request -> Kafka 4.4's error on a broker, on a
#: controller (seen by sending each to Kafka 4.4.0's two listeners; the connection stayed
#: open after every one).
_V5_TARGETS = [
    (None, -1, ErrorCode.NONE, ErrorCode.NONE),
    (_CLUSTER, _NODE, ErrorCode.NONE, ErrorCode.NONE),
    (_CLUSTER, -1, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST),
    (None, _NODE, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST),
    (_OTHER_CLUSTER, -1, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST),
    ("", -1, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST),
    (None, 999, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST),
    (_OTHER_CLUSTER, _NODE, ErrorCode.REBOOTSTRAP_REQUIRED, ErrorCode.NONE),
    (_CLUSTER, 999, ErrorCode.REBOOTSTRAP_REQUIRED, ErrorCode.NONE),
]


@pytest.mark.parametrize(("cluster_id", "node_id", "broker", "controller"), _V5_TARGETS)
def test_v5_target_checks_are_kafkas(cluster_id: str | None, node_id: int,
                                     broker: ErrorCode, controller: ErrorCode) -> None:
    request = ApiVersionsRequest("probe", "1", cluster_id, node_id)
    for target, expected in (((_CLUSTER, _NODE), broker), (None, controller)):
        refusal = refused_api_versions(request, 5, target)
        assert (ErrorCode.NONE if refusal is None else refusal) == expected
        # below v5 the fields are not on the wire: nothing to check
        assert refused_api_versions(request, 4, target) is None


@pytest.mark.parametrize(("name", "version", "valid"), [
    ("librdkafka", "2.16.0", True), ("kafka-python", "2.0.2", True), ("a", "1", True),
    ("", "1", False), ("pykraft", "", False), ("-pykraft", "1", False),
    ("pykraft.", "1", False), ("py kraft", "1", False), ("pykraft", "1_0", False),
])
def test_software_name_and_version_are_checked_from_v3(name: str, version: str,
                                                       valid: bool) -> None:
    """KIP-511: Kafka answers INVALID_REQUEST to a name or version outside its pattern."""
    request = ApiVersionsRequest(name, version)
    assert refused_api_versions(request, 3, None) == (
        None if valid else ErrorCode.INVALID_REQUEST)
    assert refused_api_versions(request, 2, None) is None


def test_a_refusal_lists_no_apis() -> None:
    """Kafka's ``getErrorResponse``: the error alone (v5 and v0 alike)."""
    body = api_versions_error(ErrorCode.REBOOTSTRAP_REQUIRED)
    for version in (0, 5):
        frame = decode_response(18, version, encode_response(9, 18, version, body))
        assert (frame.api_version, frame.body.error_code, frame.body.api_keys) == (
            version, ErrorCode.REBOOTSTRAP_REQUIRED, ())
