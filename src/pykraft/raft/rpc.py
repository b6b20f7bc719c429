"""Builders and readers for the KRaft RPCs, on kio's latest wire types.

KRaft RPCs carry one topic with one partition; these helpers hide that nesting so the core
deals in (epoch, leader, offsets) and the runtime only encodes and decodes.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from kio.schema.begin_quorum_epoch.v1 import request as bqe_req
from kio.schema.begin_quorum_epoch.v1 import response as bqe_resp
from kio.schema.describe_quorum.v2 import request as dq_req
from kio.schema.describe_quorum.v2 import response as dq_resp
from kio.schema.end_quorum_epoch.v1 import request as eqe_req
from kio.schema.end_quorum_epoch.v1 import response as eqe_resp
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v18 import request as fetch_req
from kio.schema.fetch.v18 import response as fetch_resp
from kio.schema.types import BrokerId, TopicName
from kio.schema.vote.v2 import request as vote_req
from kio.schema.vote.v2 import response as vote_resp
from kio.static.primitive import Records, i32, i32Timedelta, i64

from pykraft.ids import METADATA_TOPIC_ID, METADATA_TOPIC_NAME
from pykraft.raft.log import OffsetAndEpoch

VoteRequest = vote_req.VoteRequest
VoteResponse = vote_resp.VoteResponse
BeginQuorumEpochRequest = bqe_req.BeginQuorumEpochRequest
BeginQuorumEpochResponse = bqe_resp.BeginQuorumEpochResponse
EndQuorumEpochRequest = eqe_req.EndQuorumEpochRequest
EndQuorumEpochResponse = eqe_resp.EndQuorumEpochResponse
FetchRequest = fetch_req.FetchRequest
FetchResponse = fetch_resp.FetchResponse
DescribeQuorumRequest = dq_req.DescribeQuorumRequest
DescribeQuorumResponse = dq_resp.DescribeQuorumResponse

RaftRequest = (
    VoteRequest | BeginQuorumEpochRequest | EndQuorumEpochRequest | FetchRequest
    | DescribeQuorumRequest
)
RaftResponse = (
    VoteResponse | BeginQuorumEpochResponse | EndQuorumEpochResponse | FetchResponse
    | DescribeQuorumResponse
)

NO_LEADER = -1
_TOPIC = TopicName(METADATA_TOPIC_NAME)
_PARTITION = i32(0)


@dataclass(frozen=True, slots=True)
class ResponseHeader:
    """What every KRaft response says about the quorum, for the common response handling."""

    error: ErrorCode
    leader_id: int | None
    epoch: int | None


def _leader(leader_id: int | None) -> BrokerId:
    return BrokerId(NO_LEADER if leader_id is None else leader_id)


def _leader_or_none(leader_id: int) -> int | None:
    return None if leader_id < 0 else leader_id


# -- partition selection ------------------------------------------------------------------

def check_topic_name(topics: tuple[object, ...], names: list[str], partitions: list[int]) -> (
    ErrorCode | None
):
    """None when the request addresses exactly ``__cluster_metadata-0`` by name."""
    if len(topics) != 1 or len(partitions) != 1:
        return ErrorCode.invalid_request
    if names[0] != METADATA_TOPIC_NAME or partitions[0] != 0:
        return ErrorCode.unknown_topic_or_partition
    return None


# -- Vote ---------------------------------------------------------------------------------

def vote_request(
    cluster_id: str | None, voter_id: int, *, epoch: int, local_id: int, last: OffsetAndEpoch,
    pre_vote: bool,
) -> VoteRequest:
    partition = vote_req.PartitionData(
        partition_index=_PARTITION, replica_epoch=i32(epoch), replica_id=BrokerId(local_id),
        replica_directory_id=None, voter_directory_id=None,
        last_offset_epoch=i32(last.epoch), last_offset=i64(last.offset), pre_vote=pre_vote,
    )
    return VoteRequest(
        cluster_id=cluster_id, voter_id=BrokerId(voter_id),
        topics=(vote_req.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
    )


def vote_partition(request: VoteRequest) -> vote_req.PartitionData | ErrorCode:
    parts = [p for t in request.topics for p in t.partitions]
    error = check_topic_name(
        request.topics, [t.topic_name for t in request.topics], [p.partition_index for p in parts]
    )
    return parts[0] if error is None else error


def vote_response(
    error: ErrorCode, leader_id: int | None, epoch: int, granted: bool,
    top_error: ErrorCode = ErrorCode.none,
) -> VoteResponse:
    partition = vote_resp.PartitionData(
        partition_index=_PARTITION, error_code=error, leader_id=_leader(leader_id),
        leader_epoch=i32(epoch), vote_granted=granted,
    )
    return VoteResponse(
        error_code=top_error,
        topics=(vote_resp.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
    )


# -- BeginQuorumEpoch / EndQuorumEpoch ----------------------------------------------------

def begin_quorum_request(
    cluster_id: str | None, voter_id: int, leader_id: int, epoch: int
) -> BeginQuorumEpochRequest:
    partition = bqe_req.PartitionData(
        partition_index=_PARTITION, voter_directory_id=None, leader_id=BrokerId(leader_id),
        leader_epoch=i32(epoch),
    )
    return BeginQuorumEpochRequest(
        cluster_id=cluster_id, voter_id=BrokerId(voter_id),
        topics=(bqe_req.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
        leader_endpoints=(),
    )


def begin_quorum_partition(request: BeginQuorumEpochRequest) -> bqe_req.PartitionData | ErrorCode:
    parts = [p for t in request.topics for p in t.partitions]
    error = check_topic_name(
        request.topics, [t.topic_name for t in request.topics], [p.partition_index for p in parts]
    )
    return parts[0] if error is None else error


def begin_quorum_response(
    error: ErrorCode, leader_id: int | None, epoch: int, top_error: ErrorCode = ErrorCode.none
) -> BeginQuorumEpochResponse:
    partition = bqe_resp.PartitionData(
        partition_index=_PARTITION, error_code=error, leader_id=_leader(leader_id),
        leader_epoch=i32(epoch),
    )
    return BeginQuorumEpochResponse(
        error_code=top_error,
        topics=(bqe_resp.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
    )


def end_quorum_request(
    cluster_id: str | None, leader_id: int, epoch: int, successors: tuple[int, ...]
) -> EndQuorumEpochRequest:
    partition = eqe_req.PartitionData(
        partition_index=_PARTITION, leader_id=BrokerId(leader_id), leader_epoch=i32(epoch),
        preferred_candidates=tuple(
            eqe_req.ReplicaInfo(candidate_id=BrokerId(s), candidate_directory_id=None)
            for s in successors
        ),
    )
    return EndQuorumEpochRequest(
        cluster_id=cluster_id,
        topics=(eqe_req.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
        leader_endpoints=(),
    )


def end_quorum_partition(request: EndQuorumEpochRequest) -> eqe_req.PartitionData | ErrorCode:
    parts = [p for t in request.topics for p in t.partitions]
    error = check_topic_name(
        request.topics, [t.topic_name for t in request.topics], [p.partition_index for p in parts]
    )
    return parts[0] if error is None else error


def end_quorum_response(
    error: ErrorCode, leader_id: int | None, epoch: int, top_error: ErrorCode = ErrorCode.none
) -> EndQuorumEpochResponse:
    partition = eqe_resp.PartitionData(
        partition_index=_PARTITION, error_code=error, leader_id=_leader(leader_id),
        leader_epoch=i32(epoch),
    )
    return EndQuorumEpochResponse(
        error_code=top_error,
        topics=(eqe_resp.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
    )


# -- Fetch --------------------------------------------------------------------------------

def fetch_request(
    cluster_id: str | None, local_id: int | None, *, epoch: int, position: OffsetAndEpoch,
    high_watermark: int | None, max_wait_ms: int, max_bytes: int,
) -> FetchRequest:
    partition = fetch_req.FetchPartition(
        partition=_PARTITION, current_leader_epoch=i32(epoch), fetch_offset=i64(position.offset),
        last_fetched_epoch=i32(position.epoch), log_start_offset=i64(0),
        partition_max_bytes=i32(max_bytes),
        high_watermark=i64(-1 if high_watermark is None else high_watermark),
    )
    return FetchRequest(
        cluster_id=cluster_id,
        replica_state=fetch_req.ReplicaState(replica_id=_leader(local_id)),
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=max_wait_ms)),
        min_bytes=i32(1), max_bytes=i32(max_bytes),
        topics=(fetch_req.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=(partition,)),),
        forgotten_topics_data=(),
    )


def fetch_partition(request: FetchRequest) -> fetch_req.FetchPartition | ErrorCode:
    """KRaft validates Fetch by topic id only."""
    parts = [p for t in request.topics for p in t.partitions]
    if len(request.topics) != 1 or len(parts) != 1:
        return ErrorCode.invalid_request
    if request.topics[0].topic_id != METADATA_TOPIC_ID or parts[0].partition != 0:
        return ErrorCode.unknown_topic_or_partition
    return parts[0]


def fetch_response(
    error: ErrorCode, leader_id: int | None, epoch: int, *, high_watermark: int | None = None,
    records: bytes = b"", diverging: OffsetAndEpoch | None = None,
    top_error: ErrorCode = ErrorCode.none,
) -> FetchResponse:
    partition = fetch_resp.PartitionData(
        partition_index=_PARTITION, error_code=error,
        high_watermark=i64(-1 if high_watermark is None else high_watermark),
        log_start_offset=i64(0),
        diverging_epoch=(
            fetch_resp.EpochEndOffset()
            if diverging is None
            else fetch_resp.EpochEndOffset(epoch=i32(diverging.epoch),
                                           end_offset=i64(diverging.offset))
        ),
        current_leader=fetch_resp.LeaderIdAndEpoch(leader_id=_leader(leader_id),
                                                   leader_epoch=i32(epoch)),
        aborted_transactions=None,
        records=Records(records),
    )
    return FetchResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=top_error,
        responses=(fetch_resp.FetchableTopicResponse(topic_id=METADATA_TOPIC_ID,
                                                     partitions=(partition,)),),
    )


def max_wait_ms(request: FetchRequest) -> int:
    return int(request.max_wait.total_seconds() * 1000)


# -- DescribeQuorum -----------------------------------------------------------------------

def describe_quorum_request() -> DescribeQuorumRequest:
    return DescribeQuorumRequest(topics=(
        dq_req.TopicData(topic_name=_TOPIC, partitions=(dq_req.PartitionData(
            partition_index=_PARTITION),)),
    ))


@dataclass(frozen=True, slots=True)
class ReplicaRow:
    """One replica's line in DescribeQuorum; None means unknown (-1 on the wire)."""

    replica_id: int
    log_end_offset: int | None
    last_fetch_ms: int | None
    last_caught_up_ms: int | None


def _or_unknown(value: int | None) -> i64:
    return i64(-1 if value is None else value)


def describe_quorum_response(
    leader_id: int, epoch: int, high_watermark: int | None, voters: list[ReplicaRow],
    observers: list[ReplicaRow],
) -> DescribeQuorumResponse:
    def states(rows: list[ReplicaRow]) -> tuple[dq_resp.ReplicaState, ...]:
        return tuple(
            dq_resp.ReplicaState(
                replica_id=BrokerId(row.replica_id), replica_directory_id=None,
                log_end_offset=_or_unknown(row.log_end_offset),
                last_fetch_timestamp=_or_unknown(row.last_fetch_ms),
                last_caught_up_timestamp=_or_unknown(row.last_caught_up_ms),
            )
            for row in rows
        )

    partition = dq_resp.PartitionData(
        partition_index=_PARTITION, error_code=ErrorCode.none, error_message=None,
        leader_id=BrokerId(leader_id), leader_epoch=i32(epoch),
        high_watermark=_or_unknown(high_watermark), current_voters=states(voters),
        observers=states(observers),
    )
    return DescribeQuorumResponse(
        error_code=ErrorCode.none, error_message=None, nodes=(),
        topics=(dq_resp.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
    )


def describe_quorum_error(error: ErrorCode, top_error: ErrorCode = ErrorCode.none) -> (
    DescribeQuorumResponse
):
    partition = dq_resp.PartitionData(
        partition_index=_PARTITION, error_code=error, error_message=None,
        leader_id=BrokerId(NO_LEADER), leader_epoch=i32(-1), high_watermark=i64(-1),
        current_voters=(), observers=(),
    )
    return DescribeQuorumResponse(
        error_code=top_error, error_message=None,
        topics=(dq_resp.TopicData(topic_name=_TOPIC, partitions=(partition,)),), nodes=(),
    )


# -- common response reading -------------------------------------------------------------

def response_header(response: RaftResponse) -> ResponseHeader:
    """Top-level error, else the single partition's error, leader and epoch."""
    if isinstance(response, FetchResponse):
        fparts = [p for t in response.responses for p in t.partitions]
        if response.error_code != ErrorCode.none or len(fparts) != 1:
            return ResponseHeader(_top_error(response.error_code), None, None)
        fpart = fparts[0]
        return ResponseHeader(
            fpart.error_code, _leader_or_none(fpart.current_leader.leader_id),
            _epoch_or_none(fpart.current_leader.leader_epoch),
        )
    if isinstance(response, DescribeQuorumResponse):
        return ResponseHeader(response.error_code, None, None)
    parts = [p for t in response.topics for p in t.partitions]
    if response.error_code != ErrorCode.none or len(parts) != 1:
        return ResponseHeader(_top_error(response.error_code), None, None)
    part = parts[0]
    return ResponseHeader(part.error_code, _leader_or_none(part.leader_id),
                          _epoch_or_none(part.leader_epoch))


def _top_error(error: ErrorCode) -> ErrorCode:
    return ErrorCode.invalid_request if error == ErrorCode.none else error


def _epoch_or_none(epoch: int) -> int | None:
    return None if epoch < 0 else epoch
