"""``pykraft dump-log --offsets-decoder`` on a ``__consumer_offsets`` segment, printed as
Kafka's ``DumpLogSegments.OffsetsMessageParser`` prints it."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.group.consumer_records import (
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    consumer_record,
)
from pykraft.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    group_metadata_record,
    offset_commit_record,
)
from pykraft.records.batch import encode_batch
from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_log import PartitionLog

runner = CliRunner()

# ConsumerProtocol.serializeSubscription/serializeAssignment of kafka-clients 3.9.0:
# Subscription(["t1", "t2"], owned [t1-0], generation 4, rack "r1") and Assignment([t1-0]).
SUBSCRIPTION = bytes.fromhex(
    "0003000000020002743100027432ffffffff000000010002743100000001000000000000000400027231"
)
ASSIGNMENT = bytes.fromhex("0003000000010002743100000001" + "00000000" + "ffffffff")


def _segment(tmp_path: Path) -> Path:
    member = MemberMetadata(
        "m-1", None, "cli", "/127.0.0.1", 300000, 45000, SUBSCRIPTION, ASSIGNMENT
    )
    group = GroupMetadataValue("consumer", 1, "range", "m-1", 1000, (member,))
    records = [
        offset_commit_record(
            OffsetCommitKey("g", "t1", 0),
            OffsetCommitValue(offset=5, leader_epoch=0, metadata="", commit_timestamp=1000,
                              topic_id=uuid.UUID(int=7)),
        ),
        group_metadata_record(GroupMetadataKey("g"), group),
        offset_commit_record(OffsetCommitKey("g", "t1", 0), None),
        group_metadata_record(
            GroupMetadataKey("conn"),
            GroupMetadataValue("connect", 2, "sessioned", "w", 7, (member,)),
        ),
    ]
    records.append(consumer_record(ConsumerGroupMetadataKey("new"), ConsumerGroupMetadataValue(3)))
    pairs = [(r.key, r.value) for r in records] + [
        (b"\x7f\xff" + b"\x00\x01x", b"\x00\x00"),  # a record type Kafka has not defined
        (b"\x00\x01" + b"\x00", b"\x00\x03"),  # malformed key
    ]
    directory = tmp_path / "__consumer_offsets-7"
    with PartitionLog.open(directory, LogConfig(), now_ms=0) as log:
        log.append(encode_batch(0, pairs, partition_leader_epoch=0, timestamp=1000), now_ms=0)
    return directory / "00000000000000000000.log"


def test_offsets_decoder_prints_keys_and_values_as_kafka_does(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    result = runner.invoke(app, ["dump-log", "--files", str(segment), "--offsets-decoder"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("| ")]
    assert len(lines) == 7
    assert lines[0].endswith(
        ' key: {"type":"1","data":{"group":"g","topic":"t1","partition":0}} payload: '
        '{"version":"4","data":{"offset":5,"leaderEpoch":0,"metadata":"","commitTimestamp":1000,'
        '"topicId":"AAAAAAAAAAAAAAAAAAAABw"}}'
    )
    assert lines[1].endswith(
        ' key: {"type":"2","data":{"group":"g"}} payload: {"version":"3","data":{'
        '"protocolType":"consumer","generation":1,"protocol":"range","leader":"m-1",'
        '"currentStateTimestamp":1000,"members":[{"memberId":"m-1","groupInstanceId":null,'
        '"clientId":"cli","clientHost":"/127.0.0.1","rebalanceTimeout":300000,'
        '"sessionTimeout":45000,"subscription":{"topics":["t1","t2"],"userData":null,'
        '"ownedPartitions":[{"topic":"t1","partitions":[0]}],"generationId":4,"rackId":"r1"},'
        '"assignment":{"assignedPartitions":[{"topic":"t1","partitions":[0]}],'
        '"userData":null}}]}}'
    )
    assert lines[2].endswith(
        ' key: {"type":"1","data":{"group":"g","topic":"t1","partition":0}} payload: <DELETE>'
    )
    # Not the consumer protocol: the member's bytes stay base64.
    assert '"subscription":"AAMAAAAC' in lines[3]
    # a KIP-848 record (key version 3)
    assert lines[4].endswith(
        ' key: {"type":"3","data":{"groupId":"new"}} payload: {"version":"0","data":{"epoch":3}}'
    )
    assert lines[5].endswith(" key: Unknown record type 32767 at offset 5, skipping.")
    assert " key: Error at offset 6, skipping. " in lines[6]
    assert "payload" not in lines[5] + lines[6]


def test_offsets_decoder_json(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    result = runner.invoke(
        app, ["dump-log", "--files", str(segment), "--offsets-decoder", "--json"]
    )
    assert result.exit_code == 0, result.output
    (doc,) = json.loads(result.output)["files"]
    records = doc["batches"][0]["records"]
    assert records[0]["key"] == {"type": "1", "data": {"group": "g", "topic": "t1", "partition": 0}}
    assert records[0]["payload"]["data"]["offset"] == 5
    assert records[2]["payload"] == "<DELETE>"


def test_without_the_decoder_records_print_as_text(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    result = runner.invoke(app, ["dump-log", "--files", str(segment), "--print-data-log"])
    assert result.exit_code == 0
    assert '"type":"1"' not in result.output
