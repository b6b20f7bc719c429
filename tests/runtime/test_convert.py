"""convert(): same API, other version, by field name; dropped and defaulted fields."""

from __future__ import annotations

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.schema.describe_quorum.v0 import response as dq0
from kio.schema.describe_quorum.v1 import response as dq1
from kio.schema.vote.v0 import request as vote0

from pykraft.protocol.codec import decode_response, encode_response
from pykraft.protocol.convert import convert
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch


def _describe_v2() -> rpc.DescribeQuorumResponse:
    from kio.schema.describe_quorum.v2 import response as dq
    from kio.schema.types import BrokerId, TopicName
    from kio.static.primitive import i32, i64

    row = dq.ReplicaState(replica_id=BrokerId(2), replica_directory_id=None,
                          log_end_offset=i64(10), last_fetch_timestamp=i64(5),
                          last_caught_up_timestamp=i64(4))
    part = dq.PartitionData(partition_index=i32(0), error_code=ErrorCode.none,
                            error_message=None, leader_id=BrokerId(1), leader_epoch=i32(3),
                            high_watermark=i64(9), current_voters=(row,), observers=())
    return dq.DescribeQuorumResponse(
        error_code=ErrorCode.none, error_message=None, nodes=(),
        topics=(dq.TopicData(topic_name=TopicName("__cluster_metadata"), partitions=(part,)),),
    )


def test_latest_to_older_drops_fields_recursively() -> None:
    old = convert(_describe_v2(), dq0.DescribeQuorumResponse)
    row = old.topics[0].partitions[0].current_voters[0]
    assert type(row) is dq0.ReplicaState
    assert (row.replica_id, row.log_end_offset) == (2, 10)
    assert not hasattr(row, "last_fetch_timestamp")
    v1 = convert(_describe_v2(), dq1.DescribeQuorumResponse)
    assert v1.topics[0].partitions[0].current_voters[0].last_fetch_timestamp == 5


def test_older_to_latest_defaults_new_fields() -> None:
    latest = convert(convert(_describe_v2(), dq0.DescribeQuorumResponse),
                     rpc.DescribeQuorumResponse)
    row = latest.topics[0].partitions[0].current_voters[0]
    assert row.last_fetch_timestamp == -1  # the schema default, not zero
    assert row.replica_directory_id is None
    assert latest.nodes == () and latest.error_message is None


def test_vote_v0_request_becomes_v2_with_pre_vote_false() -> None:
    request = rpc.vote_request("c", 2, epoch=4, local_id=1, last=OffsetAndEpoch(7, 3),
                               pre_vote=False)
    old = convert(request, vote0.VoteRequest)
    back = convert(old, rpc.VoteRequest)
    assert back.topics[0].partitions[0].pre_vote is False
    assert back.voter_id == -1  # v1+ field: Kafka's default
    assert back.topics[0].partitions[0].last_offset == 7


@pytest.mark.parametrize("version", [0, 1, 2])
def test_converted_describe_quorum_encodes_at_every_version(version: int) -> None:
    body = convert(_describe_v2(), load_response_schema(55, version))
    frame = encode_response(9, 55, version, body)
    decoded = decode_response(55, version, frame)
    assert decoded.body == body


def test_refuses_another_api_and_non_entities() -> None:
    with pytest.raises(TypeError):
        convert(_describe_v2(), load_request_schema(52, 0))
    with pytest.raises(TypeError):
        convert(object(), dq0.DescribeQuorumResponse)
