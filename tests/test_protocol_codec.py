"""Codec: every (api, version) of the table round-trips; hand-computed KRaft RPC bytes.

The KRaft-internal RPCs have no second implementation installed (kafka-python lacks them), so
their byte layouts are checked against vectors written by hand from Kafka's schemas (field
order, flexible from which version, tagged ClusterId in FetchSnapshot, int32 port in
UpdateRaftVoterResponse).
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.errors import MalformedMessageError, UnsupportedVersionError
from pykraft.messages import rpc, schema_of
from pykraft.messages.kafka.find_coordinator_response import (
    Coordinator,
    FindCoordinatorResponse,
)
from pykraft.messages.kafka.metadata_request import MetadataRequest
from pykraft.messages.varint import encode_uvarint
from pykraft.protocol.apis import API_SPECS, ApiKey
from pykraft.protocol.codec import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_type,
    response_type,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader
from pykraft.raft import rpc as raft_rpc
from rpc_strategies import PAIR_IDS, PAIRS, request_bodies, response_bodies

SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
METADATA_TOPIC = b"__cluster_metadata"


def test_table_has_every_requested_api() -> None:
    assert len({key for key, _ in PAIRS}) == 73
    assert len(PAIRS) == 283  # 138 + the 13 group APIs at their 75 versions + 3 ACL APIs at
    # their 9 versions + the 2 SCRAM credential APIs at v0 + Envelope v0 +
    # AssignReplicasToDirs v0 + ApiVersions v5 + WriteTxnMarkers v1-2 + DescribeProducers v0
    # + the transaction coordinator's 5 APIs at their 21 versions + TxnOffsetCommit v0-6
    # + ElectLeaders v0-2 + DescribeTopicPartitions v0 + the client quota APIs v0-1
    # + AlterPartitionReassignments v0-1 + ListPartitionReassignments v0 + the 4 delegation
    # token APIs at their 10 versions + AlterReplicaLogDirs v1-2 + ListConfigResources v0-1


@pytest.mark.parametrize(("api_key", "version"), PAIRS, ids=PAIR_IDS)
@SETTINGS
@given(data=st.data())
def test_request_round_trip(api_key: int, version: int, data: st.DataObject) -> None:
    body = data.draw(request_bodies(api_key, version))
    header = RequestHeader(
        api_key,
        version,
        data.draw(st.integers(-(2**31), 2**31 - 1)),
        data.draw(st.none() | st.text(max_size=20)),
    )
    wire = encode_request(header, body)
    assert wire.endswith(_body_bytes(body, version))
    frame = decode_request(wire)
    assert frame.header == header
    assert frame.body == body
    assert (frame.api_key, frame.api_version, frame.unknown_tags) == (api_key, version, ())
    assert encode_request(frame.header, frame.body) == wire


@pytest.mark.parametrize(("api_key", "version"), PAIRS, ids=PAIR_IDS)
@SETTINGS
@given(data=st.data())
def test_response_round_trip(api_key: int, version: int, data: st.DataObject) -> None:
    body = data.draw(response_bodies(api_key, version))
    if api_key == 18 and version > 0:
        # An ApiVersions error body is legitimately re-read as v0 (KIP-511); tested elsewhere.
        body = dataclasses.replace(body, error_code=ErrorCode.NONE)
    correlation_id = data.draw(st.integers(-(2**31), 2**31 - 1))
    wire = encode_response(correlation_id, api_key, version, body)
    assert wire.endswith(_body_bytes(body, version))
    frame = decode_response(api_key, version, wire)
    assert (frame.correlation_id, frame.body, frame.api_version) == (correlation_id, body, version)
    assert encode_response(correlation_id, api_key, version, frame.body) == wire


def _body_bytes(body: object, version: int) -> bytes:
    """The body by the generated class's own writer, which the codec frames."""
    return rpc.encode_body(body, version)


def test_a_repeated_entry_is_written_as_often_as_named() -> None:
    """The writer copies a repeated entry's bytes: the same as writing equal entries."""
    coordinator = Coordinator(key="g", node_id=1, host="h", port=9092, error_message=None)
    other = dataclasses.replace(coordinator, key="k")
    body = FindCoordinatorResponse(coordinators=(coordinator, coordinator, other, coordinator))
    copies = dataclasses.replace(body, coordinators=tuple(
        dataclasses.replace(c) for c in body.coordinators))
    wire = encode_response(1, 10, 6, body)
    assert wire.endswith(rpc.encode_body(copies, 6))
    assert decode_response(10, 6, wire).body == body


def _compact(text: bytes) -> bytes:
    return bytes([len(text) + 1]) + text


def _legacy(text: bytes) -> bytes:
    return len(text).to_bytes(2, "big") + text


def _i32(value: int) -> bytes:
    return value.to_bytes(4, "big", signed=True)


def _i64(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


HEADER_V1 = _legacy(b"raft-1")  # client_id: int16-length string in every header version
HEADER_V2 = HEADER_V1 + b"\x00"  # plus an empty tag buffer
DIR_A = uuid.UUID(int=0x0102030405060708090A0B0C0D0E0F10)
DIR_B = uuid.UUID(int=0xA0A1A2A3A4A5A6A7A8A9AAABACADAEAF)


def test_vote_request_v0_bytes() -> None:
    wire = (
        bytes.fromhex("0034 0000 0000002a".replace(" ", ""))
        + HEADER_V2
        + _compact(b"cluster")
        + b"\x02"  # one topic
        + _compact(METADATA_TOPIC)
        + b"\x02"  # one partition
        + _i32(0)  # partition index
        + _i32(5)  # candidate epoch
        + _i32(1)  # candidate id
        + _i32(4)  # last offset epoch
        + _i64(100)  # last offset
        + b"\x00\x00\x00"  # partition, topic and top-level tag buffers
    )
    frame = decode_request(wire)
    assert frame.header == RequestHeader(52, 0, 42, "raft-1")
    body = frame.body_as(raft_rpc.VoteRequest)
    assert body.cluster_id == "cluster"
    partition = body.topics[0].partitions[0]
    assert (partition.replica_epoch, partition.replica_id) == (5, 1)
    assert (partition.last_offset_epoch, partition.last_offset) == (4, 100)
    assert encode_request(frame.header, frame.body) == wire


def test_vote_request_v2_pre_vote_bytes() -> None:
    wire = (
        bytes.fromhex("0034 0002 00000007".replace(" ", ""))
        + HEADER_V2
        + b"\x00"  # cluster id null: a plain nullable string here, not tagged
        + _i32(2)  # voter id
        + b"\x02"
        + _compact(METADATA_TOPIC)
        + b"\x02"
        + _i32(0)
        + _i32(3)  # replica epoch (pre-vote: not incremented)
        + _i32(1)
        + DIR_A.bytes
        + DIR_B.bytes
        + _i32(3)
        + _i64(77)
        + b"\x01"  # pre vote
        + b"\x00\x00\x00"
    )
    frame = decode_request(wire)
    body = frame.body_as(raft_rpc.VoteRequest)
    assert body.cluster_id is None
    assert body.voter_id == 2
    partition = body.topics[0].partitions[0]
    assert partition.pre_vote is True
    assert (partition.replica_directory_id, partition.voter_directory_id) == (DIR_A, DIR_B)
    assert encode_request(frame.header, frame.body) == wire


def test_begin_quorum_epoch_v0_is_not_flexible() -> None:
    wire = (
        bytes.fromhex("0035 0000 00000003".replace(" ", ""))
        + HEADER_V1  # header v1: no tag buffer
        + _legacy(b"cluster")
        + _i32(1)  # int32 array count
        + _legacy(METADATA_TOPIC)
        + _i32(1)
        + _i32(0)
        + _i32(1)  # leader id
        + _i32(9)  # leader epoch
    )
    frame = decode_request(wire)
    body = frame.body_as(raft_rpc.BeginQuorumEpochRequest)
    assert body.topics[0].partitions[0].leader_epoch == 9
    assert encode_request(frame.header, frame.body) == wire


def test_fetch_snapshot_cluster_id_is_tag_zero() -> None:
    wire = (
        bytes.fromhex("003b 0000 00000001".replace(" ", ""))
        + HEADER_V2
        + _i32(-1)  # replica id
        + _i32(0x7FFFFFFF)  # max bytes
        + b"\x02"
        + _compact(METADATA_TOPIC)
        + b"\x02"
        + _i32(0)
        + _i32(5)  # current leader epoch
        + _i64(100)  # snapshot end offset
        + _i32(4)  # snapshot epoch
        + b"\x00"  # SnapshotId tag buffer
        + _i64(0)  # position
        + b"\x00\x00"  # partition and topic tag buffers
        + b"\x01\x00\x08"  # one tagged field: tag 0, 8 bytes
        + _compact(b"cluster")
    )
    frame = decode_request(wire)
    body = frame.body_as(raft_rpc.FetchSnapshotRequest)
    assert body.cluster_id == "cluster"
    assert body.topics[0].partitions[0].snapshot_id.end_offset == 100
    assert encode_request(frame.header, frame.body) == wire


def test_update_raft_voter_response_port_is_int32() -> None:
    leader = _i32(1) + _i32(5) + _compact(b"localhost") + _i32(9092) + b"\x00"
    wire = (
        _i32(11)  # correlation id
        + b"\x00"  # response header v1 tags
        + _i32(0)  # throttle
        + b"\x00\x00"  # error code
        + b"\x01\x00"
        + bytes([len(leader)])
        + leader
    )
    frame = decode_response(82, 0, wire)
    assert frame.correlation_id == 11
    assert (frame.body.current_leader.host, frame.body.current_leader.port) == ("localhost", 9092)
    assert encode_response(11, 82, 0, frame.body) == wire


def test_unknown_top_level_tag_is_kept_and_reencoded() -> None:
    # librdkafka 2.16's Metadata v13 "all topics" request ends with an empty tag 0.
    wire = bytes.fromhex("0003000d00000005") + _legacy(b"rdkafka") + bytes.fromhex("00000000010000")
    frame = decode_request(wire)
    body = frame.body_as(MetadataRequest)
    assert body.topics is None
    assert frame.unknown_tags == ((0, b""),)
    assert encode_request(frame.header, frame.body, frame.unknown_tags) == wire


def test_unknown_tag_merges_in_order_with_known_tags() -> None:
    response = decode_response(59, 0, encode_response(1, 59, 0, _fetch_snapshot_response()))
    wire = encode_response(1, 59, 0, response.body, [(7, b"\xaa")])
    frame = decode_response(59, 0, wire)
    assert frame.unknown_tags == ((7, b"\xaa"),)
    assert frame.body == dataclasses.replace(response.body, unknown_tagged_fields=((7, b"\xaa"),))


#: (api, version, is request) of every flexible version of the APIs every client sends first.
FLEXIBLE = [(key, version, is_request) for key in (ApiKey.API_VERSIONS, ApiKey.METADATA)
            for version in API_SPECS[key].versions if API_SPECS[key].is_flexible(version)
            for is_request in (True, False)]


@pytest.mark.parametrize(("api_key", "version", "is_request"), FLEXIBLE,
                         ids=[f"{k.name}-v{v}-{'request' if r else 'response'}"
                              for k, v, r in FLEXIBLE])
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), payload=st.binary(max_size=6))
def test_an_unknown_top_level_tag_spliced_into_any_body_is_handed_back(
    api_key: int, version: int, is_request: bool, data: st.DataObject, payload: bytes
) -> None:
    """A newer client's tag (1000) in a body drawn at random: decoded, handed back raw, and
    written back byte for byte (spliced into the bytes, so the writer under test is not the
    one that put it there)."""
    body = data.draw(request_bodies(api_key, version) if is_request
                     else response_bodies(api_key, version))
    body = dataclasses.replace(body, **{f.attr: f.default for f in schema_of(type(body)).fields
                                        if f.tag is not None})
    if is_request:
        wire = encode_request(RequestHeader(api_key, version, 1, "c"), body)
    else:
        wire = encode_response(1, api_key, version, body)
    assert wire.endswith(b"\x00")  # the empty top-level tag buffer
    tampered = wire[:-1] + b"\x01" + encode_uvarint(1000) + encode_uvarint(len(payload)) + payload
    if is_request:
        request = decode_request(tampered)
        assert request.unknown_tags == ((1000, payload),)
        assert encode_request(request.header, request.body, request.unknown_tags) == tampered
    else:
        response = decode_response(api_key, version, tampered)
        assert (response.api_version, response.unknown_tags) == (version, ((1000, payload),))
        assert encode_response(1, api_key, version, response.body,
                               response.unknown_tags) == tampered


def test_the_body_type_is_the_generated_class_of_a_served_version() -> None:
    assert request_type(ApiKey.VOTE, 2) is raft_rpc.VoteRequest
    assert response_type(ApiKey.VOTE, 0) is raft_rpc.VoteResponse
    with pytest.raises(UnsupportedVersionError):
        request_type(ApiKey.FETCH, 3)  # below the KIP-896 floor: Kafka's schema has it


def _fetch_snapshot_response() -> raft_rpc.FetchSnapshotResponse:
    return raft_rpc.fetch_snapshot_error(ErrorCode.NONE)


@pytest.mark.parametrize(
    ("prefix", "api_key", "version"),
    [
        ("0034000700000063", 52, 7),  # Vote v7: unknown version
        ("0001000300000063", 1, 3),  # Fetch v3: below the KIP-896 floor
        ("0013000100000063", 19, 1),  # CreateTopics v1: below the floor
        ("00070000 00000063", 7, 0),  # ControlledShutdown: not served by pykraft
        ("7fff000000000063", 0x7FFF, 0),  # no such api
    ],
)
def test_unsupported_requests_carry_correlation_id(prefix: str, api_key: int, version: int) -> None:
    with pytest.raises(UnsupportedVersionError) as caught:
        decode_request(bytes.fromhex(prefix.replace(" ", "")) + b"garbage")
    error = caught.value
    assert (error.api_key, error.api_version, error.correlation_id) == (api_key, version, 0x63)


def test_encoding_an_unsupported_version_is_refused() -> None:
    body = raft_rpc.VoteRequest(voter_id=1)
    with pytest.raises(UnsupportedVersionError):
        encode_request(RequestHeader(52, 9, 1, None), body)


def test_body_must_match_header() -> None:
    body = raft_rpc.VoteRequest(voter_id=1)
    with pytest.raises(ValueError, match="is not BeginQuorumEpochRequest"):
        encode_request(RequestHeader(53, 1, 1, None), body)


def test_trailing_request_bytes_are_kept_like_kafka_does() -> None:
    # confluent-kafka 2.16 (librdkafka 2.16.0), list_topics: Metadata v13, topics=null,
    # then 3 bytes past the end of the message. Kafka's broker ignores them.
    wire = (
        bytes.fromhex("0003000d00000003") + _legacy(b"rdkafka") + bytes.fromhex("0000000000010000")
    )
    frame = decode_request(wire)
    body = frame.body_as(MetadataRequest)
    assert body.topics is None
    assert frame.trailing == bytes.fromhex("010000")
    assert encode_request(frame.header, frame.body, frame.unknown_tags, frame.trailing) == wire


def test_trailing_response_bytes_are_rejected() -> None:
    wire = encode_response(3, 52, 2, _vote_response())
    decode_response(52, 2, wire)
    with pytest.raises(MalformedMessageError, match="trailing"):
        decode_response(52, 2, wire + b"\x00")


def _vote_response() -> raft_rpc.VoteResponse:
    return raft_rpc.VoteResponse(error_code=ErrorCode.NONE)


def test_a_request_body_is_taken_as_the_class_its_api_names() -> None:
    wire = encode_request(RequestHeader(ApiKey.METADATA, 12, 1, "c"), MetadataRequest(topics=None))
    frame = decode_request(wire)
    assert frame.body_as(MetadataRequest).topics is None
    with pytest.raises(TypeError, match="api 3 carries MetadataRequest, not VoteRequest"):
        frame.body_as(raft_rpc.VoteRequest)
