"""Builders and readers for the KRaft RPCs, on kio's latest wire types (ApiVersions: the
generated class of every version, :mod:`pykraft.messages.kafka`).

KRaft RPCs carry one topic with one partition; these helpers hide that nesting so the core
deals in (epoch, leader, offsets) and the runtime only encodes and decodes.
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass
from typing import Protocol, TypeVar

from kio.schema.add_raft_voter.v1 import request as add_req
from kio.schema.add_raft_voter.v1 import response as add_resp
from kio.schema.begin_quorum_epoch.v1 import request as bqe_req
from kio.schema.begin_quorum_epoch.v1 import response as bqe_resp
from kio.schema.describe_quorum.v2 import request as dq_req
from kio.schema.describe_quorum.v2 import response as dq_resp
from kio.schema.end_quorum_epoch.v1 import request as eqe_req
from kio.schema.end_quorum_epoch.v1 import response as eqe_resp
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v18 import request as fetch_req
from kio.schema.fetch.v18 import response as fetch_resp
from kio.schema.fetch_snapshot.v1 import request as fs_req
from kio.schema.fetch_snapshot.v1 import response as fs_resp
from kio.schema.remove_raft_voter.v0 import request as remove_req
from kio.schema.remove_raft_voter.v0 import response as remove_resp
from kio.schema.types import BrokerId, TopicName
from kio.schema.update_raft_voter.v0 import request as update_req
from kio.schema.update_raft_voter.v0 import response as update_resp
from kio.schema.vote.v2 import request as vote_req
from kio.schema.vote.v2 import response as vote_resp
from kio.static.primitive import Records, i16, i32, i32Timedelta, i64, u16

from pykraft.features import KRAFT_VERSION_FEATURE
from pykraft.ids import METADATA_TOPIC_ID, METADATA_TOPIC_NAME, ZERO_UUID
from pykraft.messages.kafka import api_versions_request as av_req
from pykraft.messages.kafka import api_versions_response as av_resp
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.voter_set import ReplicaKey, VoterSet

VoteRequest = vote_req.VoteRequest
ApiVersionsRequest = av_req.ApiVersionsRequest
ApiVersionsResponse = av_resp.ApiVersionsResponse
VoteResponse = vote_resp.VoteResponse
BeginQuorumEpochRequest = bqe_req.BeginQuorumEpochRequest
BeginQuorumEpochResponse = bqe_resp.BeginQuorumEpochResponse
EndQuorumEpochRequest = eqe_req.EndQuorumEpochRequest
EndQuorumEpochResponse = eqe_resp.EndQuorumEpochResponse
FetchRequest = fetch_req.FetchRequest
FetchResponse = fetch_resp.FetchResponse
DescribeQuorumRequest = dq_req.DescribeQuorumRequest
DescribeQuorumResponse = dq_resp.DescribeQuorumResponse
FetchSnapshotRequest = fs_req.FetchSnapshotRequest
FetchSnapshotResponse = fs_resp.FetchSnapshotResponse
AddRaftVoterRequest = add_req.AddRaftVoterRequest
AddRaftVoterResponse = add_resp.AddRaftVoterResponse
RemoveRaftVoterRequest = remove_req.RemoveRaftVoterRequest
RemoveRaftVoterResponse = remove_resp.RemoveRaftVoterResponse
UpdateRaftVoterRequest = update_req.UpdateRaftVoterRequest
UpdateRaftVoterResponse = update_resp.UpdateRaftVoterResponse


ReconfigRequest = AddRaftVoterRequest | RemoveRaftVoterRequest | UpdateRaftVoterRequest
ReconfigResponse = AddRaftVoterResponse | RemoveRaftVoterResponse | UpdateRaftVoterResponse
RaftRequest = (
    VoteRequest | BeginQuorumEpochRequest | EndQuorumEpochRequest | FetchRequest
    | DescribeQuorumRequest | FetchSnapshotRequest | ReconfigRequest | ApiVersionsRequest
)
RaftResponse = (
    VoteResponse | BeginQuorumEpochResponse | EndQuorumEpochResponse | FetchResponse
    | DescribeQuorumResponse | FetchSnapshotResponse | ReconfigResponse | ApiVersionsResponse
)

NO_LEADER = -1


class _PartitionIndexed(Protocol):
    @property
    def partition_index(self) -> i32: ...


_P = TypeVar("_P", bound=_PartitionIndexed)
_T = TypeVar("_T")
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
    """None when the request addresses exactly ``__cluster_metadata-0`` by name; else
    FetchSnapshot's errors (Kafka: INVALID_REQUEST for the shape, UNKNOWN_TOPIC_OR_PARTITION
    for another partition)."""
    if len(topics) != 1 or len(partitions) != 1:
        return ErrorCode.invalid_request
    if names[0] != METADATA_TOPIC_NAME or partitions[0] != 0:
        return ErrorCode.unknown_topic_or_partition
    return None


def _election_partition(names: list[str], parts: list[_P]) -> _P | ErrorCode:
    """The one partition of a Vote, BeginQuorumEpoch or EndQuorumEpoch; anything but
    ``__cluster_metadata-0`` alone is INVALID_REQUEST (Kafka's hasValidTopicPartition)."""
    if names == [METADATA_TOPIC_NAME] and len(parts) == 1 and parts[0].partition_index == 0:
        return parts[0]
    return ErrorCode.invalid_request


def _topics_unless(top_error: ErrorCode, topics: tuple[_T, ...]) -> tuple[_T, ...]:
    """A request refused as a whole (top-level error) is answered with no topics, as Kafka."""
    return () if top_error != ErrorCode.none else topics


# -- Vote ---------------------------------------------------------------------------------

def vote_request(
    cluster_id: str | None, voter_id: int, *, epoch: int, local_id: int, last: OffsetAndEpoch,
    pre_vote: bool, local_directory_id: uuid.UUID | None = None,
    voter_directory_id: uuid.UUID | None = None,
) -> VoteRequest:
    partition = vote_req.PartitionData(
        partition_index=_PARTITION, replica_epoch=i32(epoch), replica_id=BrokerId(local_id),
        replica_directory_id=local_directory_id, voter_directory_id=voter_directory_id,
        last_offset_epoch=i32(last.epoch), last_offset=i64(last.offset), pre_vote=pre_vote,
    )
    return VoteRequest(
        cluster_id=cluster_id, voter_id=BrokerId(voter_id),
        topics=(vote_req.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
    )


def vote_partition(request: VoteRequest) -> vote_req.PartitionData | ErrorCode:
    return _election_partition([t.topic_name for t in request.topics],
                               [p for t in request.topics for p in t.partitions])


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
        topics=_topics_unless(top_error, (vote_resp.TopicData(topic_name=_TOPIC,
                                                               partitions=(partition,)),)),
    )


# -- BeginQuorumEpoch / EndQuorumEpoch ----------------------------------------------------

def begin_quorum_request(
    cluster_id: str | None, voter_id: int, leader_id: int, epoch: int,
    voter_directory_id: uuid.UUID | None = None,
) -> BeginQuorumEpochRequest:
    partition = bqe_req.PartitionData(
        partition_index=_PARTITION, voter_directory_id=voter_directory_id,
        leader_id=BrokerId(leader_id),
        leader_epoch=i32(epoch),
    )
    return BeginQuorumEpochRequest(
        cluster_id=cluster_id, voter_id=BrokerId(voter_id),
        topics=(bqe_req.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
        leader_endpoints=(),
    )


def begin_quorum_partition(request: BeginQuorumEpochRequest) -> bqe_req.PartitionData | ErrorCode:
    return _election_partition([t.topic_name for t in request.topics],
                               [p for t in request.topics for p in t.partitions])


def begin_quorum_response(
    error: ErrorCode, leader_id: int | None, epoch: int, top_error: ErrorCode = ErrorCode.none
) -> BeginQuorumEpochResponse:
    partition = bqe_resp.PartitionData(
        partition_index=_PARTITION, error_code=error, leader_id=_leader(leader_id),
        leader_epoch=i32(epoch),
    )
    return BeginQuorumEpochResponse(
        error_code=top_error,
        topics=_topics_unless(top_error, (bqe_resp.TopicData(topic_name=_TOPIC,
                                                               partitions=(partition,)),)),
    )


def end_quorum_request(
    cluster_id: str | None, leader_id: int, epoch: int, successors: tuple[ReplicaKey, ...]
) -> EndQuorumEpochRequest:
    """v1's PreferredCandidates name each successor's directory id when it is known
    (kraft.version 1); the zero UUID otherwise."""
    partition = eqe_req.PartitionData(
        partition_index=_PARTITION, leader_id=BrokerId(leader_id), leader_epoch=i32(epoch),
        preferred_candidates=tuple(
            eqe_req.ReplicaInfo(candidate_id=BrokerId(s.id),
                                candidate_directory_id=s.directory_id or ZERO_UUID)
            for s in successors
        ),
    )
    return EndQuorumEpochRequest(
        cluster_id=cluster_id,
        topics=(eqe_req.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
        leader_endpoints=(),
    )


def end_quorum_partition(request: EndQuorumEpochRequest) -> eqe_req.PartitionData | ErrorCode:
    return _election_partition([t.topic_name for t in request.topics],
                               [p for t in request.topics for p in t.partitions])


def end_quorum_response(
    error: ErrorCode, leader_id: int | None, epoch: int, top_error: ErrorCode = ErrorCode.none
) -> EndQuorumEpochResponse:
    partition = eqe_resp.PartitionData(
        partition_index=_PARTITION, error_code=error, leader_id=_leader(leader_id),
        leader_epoch=i32(epoch),
    )
    return EndQuorumEpochResponse(
        error_code=top_error,
        topics=_topics_unless(top_error, (eqe_resp.TopicData(topic_name=_TOPIC,
                                                               partitions=(partition,)),)),
    )


# -- Fetch --------------------------------------------------------------------------------

def fetch_request(
    cluster_id: str | None, local_id: int | None, *, epoch: int, position: OffsetAndEpoch,
    high_watermark: int | None, max_wait_ms: int, max_bytes: int,
    directory_id: uuid.UUID | None = None, log_start_offset: int = 0,
) -> FetchRequest:
    partition = fetch_req.FetchPartition(
        partition=_PARTITION, current_leader_epoch=i32(epoch), fetch_offset=i64(position.offset),
        last_fetched_epoch=i32(position.epoch), log_start_offset=i64(log_start_offset),
        partition_max_bytes=i32(max_bytes), replica_directory_id=directory_id,
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


def fetch_partition(request: FetchRequest) -> fetch_req.FetchPartition | None:
    """The one partition a KRaft Fetch may ask for, matched by topic id only as Kafka's
    RaftUtil does (a Fetch below v13 names the topic and carries no id: it never matches);
    None for anything else, which Kafka answers with :func:`fetch_error` INVALID_REQUEST."""
    parts = [p for t in request.topics for p in t.partitions]
    if (len(request.topics) != 1 or len(parts) != 1
            or request.topics[0].topic_id != METADATA_TOPIC_ID or parts[0].partition != 0):
        return None
    return parts[0]


def fetch_error(top_error: ErrorCode) -> FetchResponse:
    """A refusal of the whole request: the top-level error and no topics, as Kafka sends."""
    return FetchResponse(throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
                         error_code=top_error, responses=())


def fetch_response(
    error: ErrorCode, leader_id: int | None, epoch: int, *, high_watermark: int | None = None,
    records: bytes = b"", diverging: OffsetAndEpoch | None = None,
    snapshot_id: OffsetAndEpoch | None = None, log_start_offset: int = 0,
) -> FetchResponse:
    partition = fetch_resp.PartitionData(
        partition_index=_PARTITION, error_code=error,
        high_watermark=i64(-1 if high_watermark is None else high_watermark),
        log_start_offset=i64(log_start_offset),
        snapshot_id=(
            fetch_resp.SnapshotId() if snapshot_id is None
            else fetch_resp.SnapshotId(end_offset=i64(snapshot_id.offset),
                                       epoch=i32(snapshot_id.epoch))
        ),
        diverging_epoch=(
            fetch_resp.EpochEndOffset()
            if diverging is None
            else fetch_resp.EpochEndOffset(epoch=i32(diverging.epoch),
                                           end_offset=i64(diverging.offset))
        ),
        current_leader=fetch_resp.LeaderIdAndEpoch(leader_id=_leader(leader_id),
                                                   leader_epoch=i32(epoch)),
        aborted_transactions=(),  # Kafka's RaftUtil leaves the schema's default: empty
        records=Records(records),
    )
    return FetchResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=ErrorCode.none,
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
    directory_id: uuid.UUID | None = None


def _or_unknown(value: int | None) -> i64:
    return i64(-1 if value is None else value)


def describe_quorum_response(
    leader_id: int, epoch: int, high_watermark: int | None, voters: list[ReplicaRow],
    observers: list[ReplicaRow], voter_set: VoterSet | None = None,
) -> DescribeQuorumResponse:
    """``Nodes`` (v2) lists the listeners of every voter in ``voter_set``; the messages
    are empty, as Kafka's ``RaftUtil.singletonDescribeQuorumResponse`` leaves them."""
    def states(rows: list[ReplicaRow]) -> tuple[dq_resp.ReplicaState, ...]:
        return tuple(
            dq_resp.ReplicaState(
                replica_id=BrokerId(row.replica_id), replica_directory_id=row.directory_id,
                log_end_offset=_or_unknown(row.log_end_offset),
                last_fetch_timestamp=_or_unknown(row.last_fetch_ms),
                last_caught_up_timestamp=_or_unknown(row.last_caught_up_ms),
            )
            for row in rows
        )

    partition = dq_resp.PartitionData(
        partition_index=_PARTITION, error_code=ErrorCode.none, error_message="",
        leader_id=BrokerId(leader_id), leader_epoch=i32(epoch),
        high_watermark=_or_unknown(high_watermark), current_voters=states(voters),
        observers=states(observers),
    )
    nodes = () if voter_set is None else tuple(
        dq_resp.Node(node_id=BrokerId(node.key.id), listeners=tuple(
            dq_resp.Listener(name=e.name, host=e.host, port=u16(e.port)) for e in node.endpoints
        ))
        for node in voter_set.nodes
    )
    return DescribeQuorumResponse(
        error_code=ErrorCode.none, error_message="", nodes=nodes,
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
        error_code=top_error, error_message="",
        topics=(dq_resp.TopicData(topic_name=_TOPIC, partitions=(partition,)),), nodes=(),
    )


# -- FetchSnapshot ------------------------------------------------------------------------

def fetch_snapshot_request(
    cluster_id: str | None, local_id: int | None, *, epoch: int, snapshot_id: OffsetAndEpoch,
    position: int, max_bytes: int, directory_id: uuid.UUID | None = None,
) -> FetchSnapshotRequest:
    partition = fs_req.PartitionSnapshot(
        partition=_PARTITION, current_leader_epoch=i32(epoch),
        snapshot_id=fs_req.SnapshotId(end_offset=i64(snapshot_id.offset),
                                      epoch=i32(snapshot_id.epoch)),
        position=i64(position), replica_directory_id=directory_id,
    )
    return FetchSnapshotRequest(
        cluster_id=cluster_id, replica_id=_leader(local_id), max_bytes=i32(max_bytes),
        topics=(fs_req.TopicSnapshot(name=_TOPIC, partitions=(partition,)),),
    )


def fetch_snapshot_partition(request: FetchSnapshotRequest) -> (
    fs_req.PartitionSnapshot | ErrorCode
):
    parts = [p for t in request.topics for p in t.partitions]
    error = check_topic_name(
        request.topics, [t.name for t in request.topics], [p.partition for p in parts]
    )
    return parts[0] if error is None else error


def fetch_snapshot_error(top_error: ErrorCode) -> FetchSnapshotResponse:
    """A refusal of the whole request: the top-level error and no topics, as Kafka's
    ``FetchSnapshotResponse.withTopLevelError`` sends."""
    return FetchSnapshotResponse(throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
                                 error_code=top_error, topics=())


def fetch_snapshot_response(
    error: ErrorCode, leader_id: int | None, epoch: int, *,
    snapshot_id: OffsetAndEpoch | None = None, size: int = -1, position: int = -1,
    chunk: bytes = b"",
) -> FetchSnapshotResponse:
    wanted = snapshot_id or OffsetAndEpoch(-1, -1)
    partition = fs_resp.PartitionSnapshot(
        index=_PARTITION, error_code=error,
        snapshot_id=fs_resp.SnapshotId(end_offset=i64(wanted.offset), epoch=i32(wanted.epoch)),
        current_leader=fs_resp.LeaderIdAndEpoch(leader_id=_leader(leader_id),
                                                leader_epoch=i32(epoch)),
        size=i64(size), position=i64(position), unaligned_records=Records(chunk),
    )
    return FetchSnapshotResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=ErrorCode.none,
        topics=(fs_resp.TopicSnapshot(name=_TOPIC, partitions=(partition,)),),
    )


# -- AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter ------------------------------------

def add_voter_request(
    cluster_id: str | None, voter_id: int, directory_id: uuid.UUID | None,
    listeners: list[tuple[str, str, int]], timeout_ms: int = 30_000, *,
    ack_when_committed: bool = True,
) -> AddRaftVoterRequest:
    return AddRaftVoterRequest(
        cluster_id=cluster_id,
        timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)),
        voter_id=i32(voter_id), voter_directory_id=directory_id,
        listeners=tuple(add_req.Listener(name=n, host=h, port=u16(p)) for n, h, p in listeners),
        ack_when_committed=ack_when_committed,
    )


def remove_voter_request(
    cluster_id: str | None, voter_id: int, directory_id: uuid.UUID | None
) -> RemoveRaftVoterRequest:
    return RemoveRaftVoterRequest(cluster_id=cluster_id, voter_id=i32(voter_id),
                                  voter_directory_id=directory_id)


def update_voter_request(
    cluster_id: str | None, epoch: int, voter_id: int, directory_id: uuid.UUID | None,
    listeners: list[tuple[str, str, int]], supported: tuple[int, int],
) -> UpdateRaftVoterRequest:
    return UpdateRaftVoterRequest(
        cluster_id=cluster_id, current_leader_epoch=i32(epoch), voter_id=i32(voter_id),
        voter_directory_id=directory_id,
        listeners=tuple(update_req.Listener(name=n, host=h, port=u16(p))
                        for n, h, p in listeners),
        k_raft_version_feature=update_req.KRaftVersionFeature(
            min_supported_version=i16(supported[0]), max_supported_version=i16(supported[1])),
    )


def reconfig_response(
    request: ReconfigRequest, error: ErrorCode, message: str | None = None, *,
    leader_id: int | None = None, epoch: int = -1, leader_endpoint: tuple[str, int] | None = None,
) -> ReconfigResponse:
    """The answer to an Add/Remove/UpdateRaftVoter request (Update also names the leader and,
    when known, its host and port on the controller listener)."""
    throttle = i32Timedelta.parse(datetime.timedelta(0))
    if isinstance(request, AddRaftVoterRequest):
        return AddRaftVoterResponse(throttle_time=throttle, error_code=error,
                                    error_message=message)
    if isinstance(request, RemoveRaftVoterRequest):
        return RemoveRaftVoterResponse(throttle_time=throttle, error_code=error,
                                       error_message=message)
    host, port = leader_endpoint or ("", -1)
    return UpdateRaftVoterResponse(
        throttle_time=throttle, error_code=error,
        current_leader=update_resp.CurrentLeader(leader_id=_leader(leader_id),
                                                 leader_epoch=i32(epoch), host=host,
                                                 port=i32(port)),
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
    if isinstance(response, DescribeQuorumResponse | AddRaftVoterResponse
                  | RemoveRaftVoterResponse):
        return ResponseHeader(response.error_code, None, None)
    if isinstance(response, ApiVersionsResponse):
        return ResponseHeader(ErrorCode(response.error_code), None, None)
    if isinstance(response, UpdateRaftVoterResponse):
        leader = response.current_leader
        return ResponseHeader(response.error_code, _leader_or_none(leader.leader_id),
                              _epoch_or_none(leader.leader_epoch))
    if isinstance(response, FetchSnapshotResponse):
        sparts = [p for t in response.topics for p in t.partitions]
        if response.error_code != ErrorCode.none or len(sparts) != 1:
            return ResponseHeader(_top_error(response.error_code), None, None)
        spart = sparts[0]
        return ResponseHeader(
            spart.error_code, _leader_or_none(spart.current_leader.leader_id),
            _epoch_or_none(spart.current_leader.leader_epoch),
        )
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


# -- ApiVersions (the leader's probe of a voter being added) -------------------------------

def api_versions_request(software_version: str) -> ApiVersionsRequest:
    return ApiVersionsRequest(client_software_name="pykraft",
                              client_software_version=software_version)


def kraft_api_versions_response(supported: tuple[int, int],
                                finalized: int) -> ApiVersionsResponse:
    """The kraft.version part of an ApiVersions answer (the simulator's replicas give it;
    a real listener adds its API ranges)."""
    return ApiVersionsResponse(
        error_code=ErrorCode.none,
        supported_features=(av_resp.SupportedFeatureKey(KRAFT_VERSION_FEATURE, *supported),),
        finalized_features=(
            av_resp.FinalizedFeatureKey(KRAFT_VERSION_FEATURE, finalized, finalized),),
    )


def supported_kraft_versions(response: ApiVersionsResponse) -> tuple[int, int]:
    """The kraft.version range a replica supports; a replica that names none supports only
    0 (Kafka before 3.9)."""
    for feature in response.supported_features:
        if feature.name == KRAFT_VERSION_FEATURE:
            return feature.min_version, feature.max_version
    return 0, 0
