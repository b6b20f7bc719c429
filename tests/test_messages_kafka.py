"""The generated RPC message classes (pykraft.messages.kafka) and their codec
(pykraft.messages.rpc): in step with Kafka's schema facts, every class round-trips at every
version, the real clients' captured frames re-encode byte for byte, Kafka's version rules
(ignorable fields, header versions, the ApiVersions v0 fallback) hold, and hostile bytes
fail fast with the typed error."""

from __future__ import annotations

import contextlib
import importlib
import json
import pkgutil
import re
import struct
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from message_generator import GEN
from pykraft.errors import MessageDecodeError, MessageEncodeError, UnsupportedVersionError
from pykraft.ids import ZERO_UUID
from pykraft.messages import decode, encode, schema_of
from pykraft.messages import kafka as kafka_messages
from pykraft.messages.kafka import API_MESSAGES
from pykraft.messages.kafka.api_versions_request import ApiVersionsRequest
from pykraft.messages.kafka.api_versions_response import ApiVersionsResponse
from pykraft.messages.kafka.fetch_request import FetchRequest
from pykraft.messages.kafka.fetch_response import FetchResponse
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.messages.rpc import (
    RequestHeader,
    decode_body,
    decode_request,
    decode_response,
    encode_body,
    encode_request,
    encode_response,
    request_class,
    response_class,
)
from pykraft.messages.wire import CLASSIC_STRING
from test_messages_codec import schema_messages

FACTS: dict[str, Any] = json.loads(GEN.MESSAGES.facts.read_text())
FRAMES = sorted((Path(__file__).parent / "fixtures" / "client_frames").glob("*.bin"))
CLASSES = [cls for key in API_MESSAGES for cls in (request_class(key), response_class(key))]
DATA = [message["name"] for message in FACTS["messages"] if message["type"] == "data"]
DATA_CLASSES = [
    getattr(importlib.import_module(f"pykraft.messages.kafka.{GEN.snake_case(name)}"), name)
    for name in DATA
]


def versions_of(cls: type) -> range:
    valid = schema_of(cls).valid_versions
    assert valid is not None and valid.high is not None
    return range(valid.low, valid.high + 1)


# --- in step with the facts -----------------------------------------------------------------


def test_checked_in_modules_are_what_the_facts_generate() -> None:
    """Fails when a generated module is edited by hand, missing, left over from an older
    schema, or the generator changed unrun."""
    assert GEN.stale_modules(GEN.MESSAGES, FACTS) == []
    assert GEN.MESSAGES.facts.read_text() == GEN.dump_facts(FACTS)


def test_facts_name_the_release_the_records_name() -> None:
    source = FACTS["source"]
    records = json.loads(GEN.RECORDS.facts.read_text())["source"]
    assert (source["repository"], source["release"]) == ("apache/kafka", "4.4.0")
    assert source["commit"] == records["commit"]
    assert re.fullmatch("[0-9a-f]{16}|[0-9a-f]{40}", source["commit"])
    kinds = [message["type"] for message in FACTS["messages"]]
    assert kinds.count("header") == 2
    assert sorted(DATA) == [
        "AbortedTxn", "ConsumerProtocolAssignment", "ConsumerProtocolSubscription",
        "ControlRecordTypeSchema", "DefaultPrincipalData", "EndTxnMarker", "KRaftVersionRecord",
        "LeaderChangeMessage", "SnapshotFooterRecord", "SnapshotHeaderRecord", "VotersRecord",
    ]
    assert kinds.count("request") == kinds.count("response") == len(API_MESSAGES) == 91


def test_every_module_is_an_api_message_a_header_or_a_data_message() -> None:
    stems = {stem for _, stem in API_MESSAGES.values()}
    modules = {module.name for module in pkgutil.iter_modules(kafka_messages.__path__)}
    expected = {f"{stem}_{kind}" for stem in stems for kind in ("request", "response")}
    data = {GEN.snake_case(name) for name in DATA}
    assert modules == expected | data | {"request_header", "response_header"}
    assert len(CLASSES) == 182
    assert sum(len(versions_of(cls)) for cls in CLASSES) == 618
    assert sum(len(versions_of(cls)) for cls in DATA_CLASSES) == 18


def test_registered_schema_follows_the_facts_of_a_message() -> None:
    """Spot checks of what the decorators registered, against the facts' wording."""
    schema = schema_of(MetadataRequest)
    assert (str(schema.valid_versions), str(schema.flexible_versions)) == ("0-13", "9+")
    topic_id = schema_of(MetadataRequestTopic).fields[0]
    assert (topic_id.kafka_name, str(topic_id.versions), topic_id.ignorable) == (
        "TopicId", "10+", True
    )
    client_id = schema_of(RequestHeader).fields[3]
    assert client_id.type is CLASSIC_STRING  # classic even in flexible header v2


# --- round trips ----------------------------------------------------------------------------


def test_default_instance_round_trips_at_every_version() -> None:
    for cls in CLASSES + DATA_CLASSES:
        msg = cls()
        for version in versions_of(cls):
            assert decode(cls, version, encode(msg, version)) == msg, (cls, version)


@pytest.mark.parametrize("cls", CLASSES + DATA_CLASSES, ids=lambda cls: cls.__name__)
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_drawn_message_round_trips_at_every_version(cls: type, data: st.DataObject) -> None:
    assert_drawn_round_trips(cls, data)


def assert_drawn_round_trips(cls: type, data: st.DataObject) -> None:
    """A message drawn at each version of ``cls`` round-trips; at the newest version,
    unknown tagged fields drawn in every struct round-trip too."""
    schema = schema_of(cls)
    for version in versions_of(cls):
        unknown = version == schema.highest_version and schema.is_flexible(version)
        msg = data.draw(schema_messages(schema, version, unknown), label=f"v{version}")
        raw = encode(msg, version)
        assert decode(cls, version, raw) == msg
        assert encode(decode(cls, version, raw), version) == raw


@pytest.mark.parametrize("path", FRAMES, ids=lambda path: path.stem)
def test_captured_client_frame_decodes_and_re_encodes_identically(path: Path) -> None:
    wire = path.read_bytes()
    frame = decode_request(wire)
    api, version = re.fullmatch(r"[a-z-]+?-(\w+)-v(\d+)(-\d)?", path.stem).group(1, 2)  # type: ignore[union-attr]
    assert API_MESSAGES[frame.api_key][1] == api
    assert frame.api_version == int(version)
    assert type(frame.body) is request_class(frame.api_key)
    assert encode_request(frame.header, frame.body, frame.unknown_tags, frame.trailing) == wire


def test_captured_frames_carry_what_the_clients_sent() -> None:
    kcat = decode_request((FRAMES[0].parent / "kcat-api_versions-v3.bin").read_bytes())
    assert kcat.header == RequestHeader(18, 3, 1, "rdkafka")
    assert kcat.body == ApiVersionsRequest("librdkafka", "2.0.2")
    trailing = decode_request((FRAMES[0].parent / "confluent-metadata-v13-2.bin").read_bytes())
    assert (trailing.body.topics, len(trailing.trailing)) == (None, 3)  # type: ignore[attr-defined]


# --- Kafka's version rules ------------------------------------------------------------------


def test_a_non_default_value_missing_from_the_version_is_refused_unless_ignorable() -> None:
    with pytest.raises(UnsupportedVersionError, match="AllowAutoTopicCreation"):
        encode(MetadataRequest(topics=(), allow_auto_topic_creation=False), 3)
    topic = MetadataRequestTopic(topic_id=uuid.uuid4(), name="t")  # TopicId: ignorable, v10+
    raw = encode(MetadataRequest(topics=(topic,)), 9)
    assert decode(MetadataRequest, 9, raw).topics == (MetadataRequestTopic(ZERO_UUID, "t"),)


def test_header_versions_follow_the_body_flexibility() -> None:
    classic = encode_request(RequestHeader(3, 8, 5, "c"), MetadataRequest())
    flexible = encode_request(RequestHeader(3, 9, 5, "c"), MetadataRequest())
    assert classic[8:11] == flexible[8:11] == b"\x00\x01c"  # ClientId classic in both
    assert classic[11:15] == b"\x00\x00\x00\x00" and flexible[11:13] == b"\x00\x01"
    # ApiVersions answers always use response header v0, even at flexible v3+:
    wire = encode_response(7, 18, 4, ApiVersionsResponse())
    assert wire[:4] == struct.pack(">i", 7) and wire[4:6] == b"\x00\x00"


def test_api_versions_answer_in_v0_is_read_as_v0() -> None:
    """KIP-511: a broker lacking the asked version answers UNSUPPORTED_VERSION in v0."""
    wire = encode_response(3, 18, 0, ApiVersionsResponse(error_code=35))
    frame = decode_response(18, 4, wire)
    assert (frame.api_version, frame.body) == (0, ApiVersionsResponse(error_code=35))
    with pytest.raises(MessageDecodeError):
        decode_response(3, 12, wire)  # no fallback for other apis


def test_unknown_top_level_tags_are_kept_and_written_back() -> None:
    body = FetchRequest(cluster_id="c", replica_id=1)
    unknown = ((7, b"\x01\x02"), (40, b""))
    wire = encode_request(RequestHeader(1, 13, 2, None), body, unknown)
    frame = decode_request(wire)
    assert frame.body == replace(body, unknown_tagged_fields=unknown)
    assert frame.unknown_tags == unknown
    assert encode_request(frame.header, frame.body, frame.unknown_tags) == wire
    assert encode_request(frame.header, frame.body) == wire  # the body keeps them
    with pytest.raises(MessageEncodeError, match="collides"):
        encode_body(body, 13, ((0, b"\x00"),))  # tag 0 is ClusterId


# A Metadata v12 request naming one topic whose TAG_BUFFER holds tag 99, which the schema
# does not define (a newer client's field).
_TOPIC_WITH_TAG_99 = (
    b"\x02"  # one topic
    + bytes(range(16))  # TopicId
    + b"\x02t"  # Name
    + b"\x01" + b"\x63\x02\xaa\xbb"  # TAG_BUFFER: tag 99, 2 bytes
    + b"\x01\x00"  # AllowAutoTopicCreation, IncludeTopicAuthorizedOperations
    + b"\x00"  # the request's TAG_BUFFER
)


def test_an_unknown_tag_in_a_nested_struct_is_kept_and_written_back() -> None:
    """Kafka keeps ``_unknownTaggedFields`` on every struct: the request re-encodes byte for
    byte (skipped before, the topic's tag 99 was lost on the way through)."""
    body, unknown, end = decode_body(MetadataRequest, 12, _TOPIC_WITH_TAG_99)
    assert (unknown, end) == ((), len(_TOPIC_WITH_TAG_99))
    assert body.topics is not None
    assert body.topics[0].unknown_tagged_fields == ((99, b"\xaa\xbb"),)
    assert encode(body, 12) == _TOPIC_WITH_TAG_99
    wire = encode_request(RequestHeader(3, 12, 9, "c"), body)
    assert decode_request(wire).body == body


def test_unknown_tags_of_structs_nested_twice_follow_the_known_ones() -> None:
    """A Fetch v13 answer's partition with its known tag 1 (CurrentLeader) and unknown tags
    7 and 99, the leader struct inside it with its own unknown tag 4."""
    leader = b"\x00\x00\x00\x02" + b"\x00\x00\x00\x05" + b"\x01\x04\x01\x2a"
    partition = (
        bytes(4) + bytes(2) + bytes(8 * 3)  # index, error, HW, LSO, log start
        + b"\x00" + b"\xff\xff\xff\xff" + b"\x00"  # null aborted txns, -1 replica, null records
        + b"\x03" + b"\x01" + bytes([len(leader)]) + leader
        + b"\x07\x00" + b"\x63\x01\x09"
    )
    raw = (
        bytes(4) + bytes(2) + bytes(4)  # throttle, error, session id
        + b"\x02" + bytes(16) + b"\x02" + partition + b"\x00"  # one topic, one partition
        + b"\x00"
    )
    body = decode(FetchResponse, 13, raw)
    (data,) = body.responses[0].partitions
    assert data.unknown_tagged_fields == ((7, b""), (99, b"\x09"))
    assert data.current_leader.unknown_tagged_fields == ((4, b"\x2a"),)
    assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == (2, 5)
    assert encode(body, 13) == raw


def test_unknown_api_or_version_names_the_correlation_id() -> None:
    for prefix in (struct.pack(">hhi", 999, 0, 41), struct.pack(">hhi", 3, 14, 41)):
        with pytest.raises(UnsupportedVersionError) as caught:
            decode_request(prefix + b"\x00\x00")
        assert caught.value.correlation_id == 41


# --- hostile bytes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "count"),
    [(4, b"\x7f\xff\xff\xff"), (4, b"\xff\xff\xff\xfe"), (12, b"\xff\xff\xff\xff\x0f"),
     (12, b"\xfe\xff\xff\xff\x07")],
)
def test_hostile_array_counts_fail_before_allocating(version: int, count: bytes) -> None:
    with pytest.raises(MessageDecodeError, match="Topics"):
        decode_body(MetadataRequest, version, count + b"\x00" * 8)


def test_every_truncation_and_huge_length_of_the_captured_frames_is_a_typed_error() -> None:
    """Cut each frame at every byte, and write 0x7fffffff, -1 and 0x80000000 over every
    4-byte window: decoding succeeds or raises the typed errors, never anything else."""
    for path in FRAMES:
        wire = path.read_bytes()
        body_end = len(wire) - len(decode_request(wire).trailing)
        for cut in range(8, body_end):
            with pytest.raises(MessageDecodeError):
                _strict(wire[:cut])
        for at in range(8, len(wire) - 3):
            for word in (b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x80\x00\x00\x00"):
                with contextlib.suppress(MessageDecodeError, UnsupportedVersionError):
                    decode_request(wire[:at] + word + wire[at + 4 :])


def _strict(wire: bytes) -> None:
    """decode_request, failing on what it would keep as trailing bytes."""
    frame = decode_request(wire)
    if frame.trailing:
        raise MessageDecodeError("trailing bytes")
