"""Request frames captured from kcat, confluent-kafka, kafka-python and aiokafka decode and
re-encode byte for byte (see tests/fixtures/client_frames/README.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pykraft.messages.kafka import API_MESSAGES
from pykraft.messages.kafka.api_versions_request import ApiVersionsRequest
from pykraft.messages.kafka.describe_quorum_request import DescribeQuorumRequest
from pykraft.messages.kafka.metadata_request import MetadataRequest
from pykraft.protocol.codec import decode_request, encode_request
from pykraft.protocol.header import RequestHeader

FRAMES_DIR = Path(__file__).parent / "fixtures" / "client_frames"
FRAMES = sorted(FRAMES_DIR.glob("*.bin"))
NAME = re.compile(r"(?P<client>kcat|confluent|kafka-python|aiokafka)-(?P<api>\w+)-v(?P<v>\d+)")


def test_all_four_clients_were_captured() -> None:
    clients = {NAME.match(path.name).group("client") for path in FRAMES}  # type: ignore[union-attr]
    assert clients == {"kcat", "confluent", "kafka-python", "aiokafka"}
    assert len(FRAMES) >= 20


@pytest.mark.parametrize("path", FRAMES, ids=lambda path: path.stem)
def test_captured_frame_decodes_and_reencodes_identically(path: Path) -> None:
    wire = path.read_bytes()
    frame = decode_request(wire)
    match = NAME.match(path.name)
    assert match is not None
    assert API_MESSAGES[frame.api_key][1] == match.group("api")
    assert frame.api_version == int(match.group("v"))
    assert encode_request(frame.header, frame.body, frame.unknown_tags, frame.trailing) == wire


def _frame(name: str) -> bytes:
    return (FRAMES_DIR / name).read_bytes()


def test_first_frames_match_the_known_client_identities() -> None:
    kcat = decode_request(_frame("kcat-api_versions-v3.bin"))
    assert kcat.header == RequestHeader(18, 3, 1, "rdkafka")
    assert (kcat.body_as(ApiVersionsRequest).client_software_name,
            kcat.body_as(ApiVersionsRequest).client_software_version) == (
        "librdkafka",
        "2.0.2",
    )
    assert _frame("kcat-api_versions-v3.bin")[:18] == bytes.fromhex("0012000300000001") + (
        b"\x00\x07rdkafka\x00"
    )
    kafka_python = decode_request(_frame("kafka-python-api_versions-v4.bin"))
    assert kafka_python.header.client_id == "kafka-python-3.0.12"
    assert kafka_python.body_as(ApiVersionsRequest).client_software_name == "kafka-python"
    aiokafka = decode_request(_frame("aiokafka-api_versions-v0.bin"))
    assert aiokafka.header == RequestHeader(18, 0, 1, "aiokafka-0.14.0")
    assert len(_frame("aiokafka-api_versions-v0.bin")) == 25


def test_librdkafka_metadata_with_trailing_bytes() -> None:
    frame = decode_request(_frame("confluent-metadata-v13-2.bin"))
    assert frame.body_as(MetadataRequest).topics is None
    assert frame.trailing == bytes.fromhex("010000")


def test_kafka_python_describe_quorum_asks_for_the_metadata_partition() -> None:
    frame = decode_request(_frame("kafka-python-describe_quorum-v2.bin"))
    (topic,) = frame.body_as(DescribeQuorumRequest).topics
    assert topic.topic_name == "__cluster_metadata"
    assert [partition.partition_index for partition in topic.partitions] == [0]
