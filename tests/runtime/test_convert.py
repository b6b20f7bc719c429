"""convert(): same API, other version, by field name; dropped and defaulted fields."""

from __future__ import annotations

import datetime

import pytest
from kio.index import load_request_schema
from kio.schema.describe_log_dirs.v1 import response as dld1
from kio.schema.describe_log_dirs.v3 import response as dld3
from kio.schema.describe_log_dirs.v5 import response as dld
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i32, i32Timedelta, i64

from pykraft.protocol.convert import convert
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch


def _describe_log_dirs_v5() -> dld.DescribeLogDirsResponse:
    partition = dld.DescribeLogDirsPartition(partition_index=i32(0), partition_size=i64(10),
                                             offset_lag=i64(0), is_future_key=False)
    result = dld.DescribeLogDirsResult(
        error_code=ErrorCode.none, log_dir="/data",
        topics=(dld.DescribeLogDirsTopic(name=TopicName("t"), partitions=(partition,)),),
        total_bytes=i64(100), usable_bytes=i64(50))
    return dld.DescribeLogDirsResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=ErrorCode.none,
        results=(result,))


def test_latest_to_older_drops_fields_recursively() -> None:
    old = convert(_describe_log_dirs_v5(), dld1.DescribeLogDirsResponse)
    result = old.results[0]
    assert type(result) is dld1.DescribeLogDirsResult
    assert (result.log_dir, result.topics[0].partitions[0].partition_size) == ("/data", 10)
    assert not hasattr(result, "total_bytes") and not hasattr(old, "error_code")
    v3 = convert(_describe_log_dirs_v5(), dld3.DescribeLogDirsResponse)
    assert v3.error_code == ErrorCode.none and not hasattr(v3.results[0], "total_bytes")


def test_older_to_latest_defaults_new_fields() -> None:
    latest = convert(convert(_describe_log_dirs_v5(), dld1.DescribeLogDirsResponse),
                     dld.DescribeLogDirsResponse)
    result = latest.results[0]
    assert result.total_bytes == -1 and result.usable_bytes == -1  # the schema default
    assert latest.error_code == ErrorCode.none


def test_a_generated_class_is_its_own_conversion() -> None:
    """One generated class serves every version: convert() hands it back unchanged."""
    request = rpc.vote_request("c", 2, epoch=4, local_id=1, last=OffsetAndEpoch(7, 3),
                               pre_vote=False)
    assert convert(request, rpc.VoteRequest) is request


def test_refuses_another_api_and_non_entities() -> None:
    with pytest.raises(TypeError):
        convert(_describe_log_dirs_v5(), load_request_schema(43, 0))
    with pytest.raises(TypeError):
        convert(object(), dld1.DescribeLogDirsResponse)
