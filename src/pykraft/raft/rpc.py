"""Builders and readers for the KRaft RPCs, on the generated classes of
:mod:`pykraft.messages.kafka` (one class serves every version).

KRaft RPCs carry one topic with one partition; these helpers hide that nesting so the core
deals in (epoch, leader, offsets) and the runtime only encodes and decodes.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Protocol, TypeVar

from pykraft.features import KRAFT_VERSION_FEATURE
from pykraft.ids import METADATA_TOPIC_ID, METADATA_TOPIC_NAME, ZERO_UUID
from pykraft.messages.kafka import add_raft_voter_request as add_req
from pykraft.messages.kafka import add_raft_voter_response as add_resp
from pykraft.messages.kafka import api_versions_request as av_req
from pykraft.messages.kafka import api_versions_response as av_resp
from pykraft.messages.kafka import begin_quorum_epoch_request as bqe_req
from pykraft.messages.kafka import begin_quorum_epoch_response as bqe_resp
from pykraft.messages.kafka import describe_quorum_request as dq_req
from pykraft.messages.kafka import describe_quorum_response as dq_resp
from pykraft.messages.kafka import end_quorum_epoch_request as eqe_req
from pykraft.messages.kafka import end_quorum_epoch_response as eqe_resp
from pykraft.messages.kafka import fetch_request as fetch_req
from pykraft.messages.kafka import fetch_response as fetch_resp
from pykraft.messages.kafka import fetch_snapshot_request as fs_req
from pykraft.messages.kafka import fetch_snapshot_response as fs_resp
from pykraft.messages.kafka import remove_raft_voter_request as remove_req
from pykraft.messages.kafka import remove_raft_voter_response as remove_resp
from pykraft.messages.kafka import update_raft_voter_request as update_req
from pykraft.messages.kafka import update_raft_voter_response as update_resp
from pykraft.messages.kafka import vote_request as vote_req
from pykraft.messages.kafka import vote_response as vote_resp
from pykraft.messages.rpc import response_class
from pykraft.protocol.codec import api_key_of
from pykraft.protocol.errors import ErrorCode
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
ReplicaState = dq_resp.ReplicaState
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
    def partition_index(self) -> int: ...


_P = TypeVar("_P", bound=_PartitionIndexed)
_T = TypeVar("_T")


@dataclasses.dataclass(frozen=True, slots=True)
class ResponseHeader:
    """What every KRaft response says about the quorum, for the common response handling;
    ``error`` is the wire's code (compare it with :class:`ErrorCode`: a peer may send a
    code this software does not name)."""

    error: int
    leader_id: int | None
    epoch: int | None


def _leader_id(leader_id: int | None) -> int:
    return NO_LEADER if leader_id is None else leader_id


def _leader_or_none(leader_id: int) -> int | None:
    return None if leader_id < 0 else leader_id


def _directory(directory_id: uuid.UUID | None) -> uuid.UUID:
    """A directory id on the wire: the zero UUID stands for none."""
    return ZERO_UUID if directory_id is None else directory_id


# -- partition selection ------------------------------------------------------------------

def check_topic_name(topics: tuple[object, ...], names: list[str], partitions: list[int]) -> (
    ErrorCode | None
):
    """None when the request addresses exactly ``__cluster_metadata-0`` by name; else
    FetchSnapshot's errors (Kafka: INVALID_REQUEST for the shape, UNKNOWN_TOPIC_OR_PARTITION
    for another partition)."""
    if len(topics) != 1 or len(partitions) != 1:
        return ErrorCode.INVALID_REQUEST
    if names[0] != METADATA_TOPIC_NAME or partitions[0] != 0:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return None


def _election_partition(names: list[str], parts: list[_P]) -> _P | ErrorCode:
    """The one partition of a Vote, BeginQuorumEpoch or EndQuorumEpoch; anything but
    ``__cluster_metadata-0`` alone is INVALID_REQUEST (Kafka's hasValidTopicPartition)."""
    if names == [METADATA_TOPIC_NAME] and len(parts) == 1 and parts[0].partition_index == 0:
        return parts[0]
    return ErrorCode.INVALID_REQUEST


def _topics_unless(top_error: ErrorCode, topics: tuple[_T, ...]) -> tuple[_T, ...]:
    """A request refused as a whole (top-level error) is answered with no topics, as Kafka."""
    return () if top_error != ErrorCode.NONE else topics


# -- Vote ---------------------------------------------------------------------------------

def vote_request(
    cluster_id: str | None, voter_id: int, *, epoch: int, local_id: int, last: OffsetAndEpoch,
    pre_vote: bool, local_directory_id: uuid.UUID | None = None,
    voter_directory_id: uuid.UUID | None = None,
) -> VoteRequest:
    """A pre-vote cannot be written below v2 (Kafka's VoteRequest builder refuses it too):
    encoding it for a peer that predates KIP-996 raises UnsupportedVersionError."""
    partition = vote_req.PartitionData(
        partition_index=0, replica_epoch=epoch, replica_id=local_id,
        replica_directory_id=_directory(local_directory_id),
        voter_directory_id=_directory(voter_directory_id),
        last_offset_epoch=last.epoch, last_offset=last.offset, pre_vote=pre_vote,
    )
    return VoteRequest(
        cluster_id=cluster_id, voter_id=voter_id,
        topics=(vote_req.TopicData(topic_name=METADATA_TOPIC_NAME, partitions=(partition,)),),
    )


def vote_partition(request: VoteRequest) -> vote_req.PartitionData | ErrorCode:
    return _election_partition([t.topic_name for t in request.topics],
                               [p for t in request.topics for p in t.partitions])


def vote_response_partition(response: VoteResponse) -> vote_resp.PartitionData | ErrorCode:
    """The one partition of a Vote answer; any other shape is INVALID_REQUEST, which the
    voter ignores (Kafka's ``hasValidTopicPartition`` on the response)."""
    return _election_partition([t.topic_name for t in response.topics],
                               [p for t in response.topics for p in t.partitions])


def vote_response(
    error: ErrorCode, leader_id: int | None, epoch: int, granted: bool,
    top_error: ErrorCode = ErrorCode.NONE,
) -> VoteResponse:
    partition = vote_resp.PartitionData(
        partition_index=0, error_code=error, leader_id=_leader_id(leader_id),
        leader_epoch=epoch, vote_granted=granted,
    )
    return VoteResponse(
        error_code=top_error,
        topics=_topics_unless(top_error, (vote_resp.TopicData(topic_name=METADATA_TOPIC_NAME,
                                                               partitions=(partition,)),)),
    )


# -- BeginQuorumEpoch / EndQuorumEpoch ----------------------------------------------------

def begin_quorum_request(
    cluster_id: str | None, voter_id: int, leader_id: int, epoch: int,
    voter_directory_id: uuid.UUID | None = None,
) -> BeginQuorumEpochRequest:
    partition = bqe_req.PartitionData(
        partition_index=0, voter_directory_id=_directory(voter_directory_id),
        leader_id=leader_id, leader_epoch=epoch,
    )
    return BeginQuorumEpochRequest(
        cluster_id=cluster_id, voter_id=voter_id,
        topics=(bqe_req.TopicData(topic_name=METADATA_TOPIC_NAME, partitions=(partition,)),),
    )


def begin_quorum_partition(request: BeginQuorumEpochRequest) -> bqe_req.PartitionData | ErrorCode:
    return _election_partition([t.topic_name for t in request.topics],
                               [p for t in request.topics for p in t.partitions])


def begin_quorum_response(
    error: ErrorCode, leader_id: int | None, epoch: int, top_error: ErrorCode = ErrorCode.NONE
) -> BeginQuorumEpochResponse:
    partition = bqe_resp.PartitionData(
        partition_index=0, error_code=error, leader_id=_leader_id(leader_id),
        leader_epoch=epoch,
    )
    return BeginQuorumEpochResponse(
        error_code=top_error,
        topics=_topics_unless(top_error, (bqe_resp.TopicData(topic_name=METADATA_TOPIC_NAME,
                                                               partitions=(partition,)),)),
    )


def end_quorum_request(
    cluster_id: str | None, leader_id: int, epoch: int, successors: tuple[ReplicaKey, ...]
) -> EndQuorumEpochRequest:
    """The successors twice, as Kafka's ``RaftUtil`` writes them: v0's PreferredSuccessors
    (ids) and v1's PreferredCandidates (ids and directory ids, the zero UUID when unknown);
    each version's writer keeps its own and drops the other (both are ignorable)."""
    partition = eqe_req.PartitionData(
        partition_index=0, leader_id=leader_id, leader_epoch=epoch,
        preferred_successors=tuple(s.id for s in successors),
        preferred_candidates=tuple(
            eqe_req.ReplicaInfo(candidate_id=s.id,
                                candidate_directory_id=_directory(s.directory_id))
            for s in successors
        ),
    )
    return EndQuorumEpochRequest(
        cluster_id=cluster_id,
        topics=(eqe_req.TopicData(topic_name=METADATA_TOPIC_NAME, partitions=(partition,)),),
    )


def end_quorum_partition(request: EndQuorumEpochRequest) -> eqe_req.PartitionData | ErrorCode:
    return _election_partition([t.topic_name for t in request.topics],
                               [p for t in request.topics for p in t.partitions])


def preferred_successors(partition: eqe_req.PartitionData) -> list[ReplicaKey]:
    """The successors an EndQuorumEpoch names, best first: v1's candidates, else v0's ids
    without directory (Kafka's ``EndQuorumEpochRequest.preferredCandidates``)."""
    if partition.preferred_candidates:
        return [ReplicaKey.of(c.candidate_id, c.candidate_directory_id)
                for c in partition.preferred_candidates]
    return [ReplicaKey(replica_id) for replica_id in partition.preferred_successors]


def end_quorum_response(
    error: ErrorCode, leader_id: int | None, epoch: int, top_error: ErrorCode = ErrorCode.NONE
) -> EndQuorumEpochResponse:
    partition = eqe_resp.PartitionData(
        partition_index=0, error_code=error, leader_id=_leader_id(leader_id),
        leader_epoch=epoch,
    )
    return EndQuorumEpochResponse(
        error_code=top_error,
        topics=_topics_unless(top_error, (eqe_resp.TopicData(topic_name=METADATA_TOPIC_NAME,
                                                               partitions=(partition,)),)),
    )


# -- Fetch --------------------------------------------------------------------------------

def fetch_request(
    cluster_id: str | None, local_id: int | None, *, epoch: int, position: OffsetAndEpoch,
    high_watermark: int | None, max_wait_ms: int, max_bytes: int,
    directory_id: uuid.UUID | None = None, log_start_offset: int = 0,
) -> FetchRequest:
    partition = fetch_req.FetchPartition(
        partition=0, current_leader_epoch=epoch, fetch_offset=position.offset,
        last_fetched_epoch=position.epoch, log_start_offset=log_start_offset,
        partition_max_bytes=max_bytes,
        replica_directory_id=ZERO_UUID if directory_id is None else directory_id,
        high_watermark=-1 if high_watermark is None else high_watermark,
    )
    return FetchRequest(
        cluster_id=cluster_id,
        replica_state=fetch_req.ReplicaState(replica_id=_leader_id(local_id)),
        max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes,
        topics=(fetch_req.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=(partition,)),),
    )


def fetch_replica_id(request: FetchRequest) -> int:
    """Kafka's ``FetchRequest.replicaId``: ``replica_id`` up to v14, ``replica_state``'s
    from v15 (KIP-903); the field a version lacks keeps its default, -1, when decoded."""
    if request.replica_id >= 0:
        return request.replica_id
    return request.replica_state.replica_id


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
    return FetchResponse(error_code=top_error, responses=())


def fetch_response(
    error: ErrorCode, leader_id: int | None, epoch: int, *, high_watermark: int | None = None,
    records: bytes = b"", diverging: OffsetAndEpoch | None = None,
    snapshot_id: OffsetAndEpoch | None = None, log_start_offset: int = 0,
) -> FetchResponse:
    partition = fetch_resp.PartitionData(
        partition_index=0, error_code=error,
        high_watermark=-1 if high_watermark is None else high_watermark,
        log_start_offset=log_start_offset,
        snapshot_id=(
            fetch_resp.SnapshotId() if snapshot_id is None
            else fetch_resp.SnapshotId(end_offset=snapshot_id.offset, epoch=snapshot_id.epoch)
        ),
        diverging_epoch=(
            fetch_resp.EpochEndOffset() if diverging is None
            else fetch_resp.EpochEndOffset(epoch=diverging.epoch, end_offset=diverging.offset)
        ),
        current_leader=fetch_resp.LeaderIdAndEpoch(leader_id=_leader_id(leader_id),
                                                   leader_epoch=epoch),
        aborted_transactions=(),  # Kafka's RaftUtil leaves the schema's default: empty
        records=records,
    )
    return FetchResponse(
        error_code=ErrorCode.NONE,
        responses=(fetch_resp.FetchableTopicResponse(topic_id=METADATA_TOPIC_ID,
                                                     partitions=(partition,)),),
    )


def max_wait_ms(request: FetchRequest) -> int:
    return request.max_wait_ms


# -- DescribeQuorum -----------------------------------------------------------------------

def describe_quorum_request() -> DescribeQuorumRequest:
    return DescribeQuorumRequest(topics=(
        dq_req.TopicData(topic_name=METADATA_TOPIC_NAME,
                         partitions=(dq_req.PartitionData(partition_index=0),)),
    ))


@dataclasses.dataclass(frozen=True, slots=True)
class ReplicaRow:
    """One replica's line in DescribeQuorum; None means unknown (-1 on the wire)."""

    replica_id: int
    log_end_offset: int | None
    last_fetch_ms: int | None
    last_caught_up_ms: int | None
    directory_id: uuid.UUID | None = None


def _or_unknown(value: int | None) -> int:
    return -1 if value is None else value


def describe_quorum_nodes(voter_set: VoterSet) -> tuple[dq_resp.Node, ...]:
    """DescribeQuorum v2's ``Nodes``: the listeners of every voter in ``voter_set``."""
    return tuple(
        dq_resp.Node(node_id=node.key.id, listeners=tuple(
            dq_resp.Listener(name=e.name, host=e.host, port=e.port) for e in node.endpoints))
        for node in voter_set.nodes
    )


def describe_quorum_response(
    leader_id: int, epoch: int, high_watermark: int | None, voters: list[ReplicaRow],
    observers: list[ReplicaRow], voter_set: VoterSet | None = None,
) -> DescribeQuorumResponse:
    """The v2 answer: ``Nodes`` lists the listeners of every voter in ``voter_set``; the
    messages are empty, as Kafka's ``RaftUtil.singletonDescribeQuorumResponse`` leaves
    them. :func:`describe_quorum_at` trims it for an older version."""
    def states(rows: list[ReplicaRow]) -> tuple[dq_resp.ReplicaState, ...]:
        return tuple(
            dq_resp.ReplicaState(
                replica_id=row.replica_id, replica_directory_id=_directory(row.directory_id),
                log_end_offset=_or_unknown(row.log_end_offset),
                last_fetch_timestamp=_or_unknown(row.last_fetch_ms),
                last_caught_up_timestamp=_or_unknown(row.last_caught_up_ms),
            )
            for row in rows
        )

    partition = dq_resp.PartitionData(
        partition_index=0, error_code=ErrorCode.NONE, error_message="",
        leader_id=leader_id, leader_epoch=epoch,
        high_watermark=_or_unknown(high_watermark), current_voters=states(voters),
        observers=states(observers),
    )
    return DescribeQuorumResponse(
        error_code=ErrorCode.NONE, error_message="",
        nodes=() if voter_set is None else describe_quorum_nodes(voter_set),
        topics=(dq_resp.TopicData(topic_name=METADATA_TOPIC_NAME, partitions=(partition,)),),
    )


def describe_quorum_at(response: DescribeQuorumResponse, version: int) -> DescribeQuorumResponse:
    """``response`` as ``version`` can carry it: directory ids and ``Nodes`` are v2's, which
    Kafka's ``RaftUtil`` fills from v2 only (the timestamps v0 lacks are dropped by the
    writer: they are ignorable)."""
    if version >= 2:
        return response

    def without_directories(states: tuple[dq_resp.ReplicaState, ...]) -> (
        tuple[dq_resp.ReplicaState, ...]
    ):
        return tuple(dataclasses.replace(s, replica_directory_id=ZERO_UUID) for s in states)

    topics = tuple(dataclasses.replace(t, partitions=tuple(
        dataclasses.replace(p, current_voters=without_directories(p.current_voters),
                            observers=without_directories(p.observers))
        for p in t.partitions)) for t in response.topics)
    return dataclasses.replace(response, topics=topics, nodes=())


def describe_quorum_error(error: ErrorCode, top_error: ErrorCode = ErrorCode.NONE) -> (
    DescribeQuorumResponse
):
    partition = dq_resp.PartitionData(
        partition_index=0, error_code=error, error_message=None, leader_id=NO_LEADER,
        leader_epoch=-1, high_watermark=-1,
    )
    return DescribeQuorumResponse(
        error_code=top_error, error_message="",
        topics=(dq_resp.TopicData(topic_name=METADATA_TOPIC_NAME, partitions=(partition,)),),
    )


# -- FetchSnapshot ------------------------------------------------------------------------

def fetch_snapshot_request(
    cluster_id: str | None, local_id: int | None, *, epoch: int, snapshot_id: OffsetAndEpoch,
    position: int, max_bytes: int, directory_id: uuid.UUID | None = None,
) -> FetchSnapshotRequest:
    partition = fs_req.PartitionSnapshot(
        partition=0, current_leader_epoch=epoch,
        snapshot_id=fs_req.SnapshotId(end_offset=snapshot_id.offset, epoch=snapshot_id.epoch),
        position=position, replica_directory_id=_directory(directory_id),
    )
    return FetchSnapshotRequest(
        cluster_id=cluster_id, replica_id=_leader_id(local_id), max_bytes=max_bytes,
        topics=(fs_req.TopicSnapshot(name=METADATA_TOPIC_NAME, partitions=(partition,)),),
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
    return FetchSnapshotResponse(error_code=top_error)


def fetch_snapshot_response(
    error: ErrorCode, leader_id: int | None, epoch: int, *,
    snapshot_id: OffsetAndEpoch | None = None, size: int = -1, position: int = -1,
    chunk: bytes = b"",
) -> FetchSnapshotResponse:
    wanted = snapshot_id or OffsetAndEpoch(-1, -1)
    partition = fs_resp.PartitionSnapshot(
        index=0, error_code=error,
        snapshot_id=fs_resp.SnapshotId(end_offset=wanted.offset, epoch=wanted.epoch),
        current_leader=fs_resp.LeaderIdAndEpoch(leader_id=_leader_id(leader_id),
                                                leader_epoch=epoch),
        size=size, position=position, unaligned_records=chunk,
    )
    return FetchSnapshotResponse(
        error_code=ErrorCode.NONE,
        topics=(fs_resp.TopicSnapshot(name=METADATA_TOPIC_NAME, partitions=(partition,)),),
    )


# -- AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter ------------------------------------

def add_voter_request(
    cluster_id: str | None, voter_id: int, directory_id: uuid.UUID | None,
    listeners: list[tuple[str, str, int]], timeout_ms: int = 30_000, *,
    ack_when_committed: bool = True,
) -> AddRaftVoterRequest:
    """``ack_when_committed=False`` needs v1 (KIP-1186): v0 cannot carry it, and encoding
    it for a v0 peer raises UnsupportedVersionError, as Kafka's builder refuses it."""
    return AddRaftVoterRequest(
        cluster_id=cluster_id, timeout_ms=timeout_ms, voter_id=voter_id,
        voter_directory_id=_directory(directory_id),
        listeners=tuple(add_req.Listener(name=n, host=h, port=p) for n, h, p in listeners),
        ack_when_committed=ack_when_committed,
    )


def remove_voter_request(
    cluster_id: str | None, voter_id: int, directory_id: uuid.UUID | None
) -> RemoveRaftVoterRequest:
    return RemoveRaftVoterRequest(cluster_id=cluster_id, voter_id=voter_id,
                                  voter_directory_id=_directory(directory_id))


def update_voter_request(
    cluster_id: str | None, epoch: int, voter_id: int, directory_id: uuid.UUID | None,
    listeners: list[tuple[str, str, int]], supported: tuple[int, int],
) -> UpdateRaftVoterRequest:
    return UpdateRaftVoterRequest(
        cluster_id=cluster_id, current_leader_epoch=epoch, voter_id=voter_id,
        voter_directory_id=_directory(directory_id),
        listeners=tuple(update_req.Listener(name=n, host=h, port=p) for n, h, p in listeners),
        k_raft_version_feature=update_req.KRaftVersionFeature(
            min_supported_version=supported[0], max_supported_version=supported[1]),
    )


def reconfig_response(
    request: ReconfigRequest, error: ErrorCode, message: str | None = None, *,
    leader_id: int | None = None, epoch: int = -1, leader_endpoint: tuple[str, int] | None = None,
) -> ReconfigResponse:
    """The answer to an Add/Remove/UpdateRaftVoter request (Update also names the leader and,
    when known, its host and port on the controller listener)."""
    if isinstance(request, AddRaftVoterRequest):
        return AddRaftVoterResponse(error_code=error, error_message=message)
    if isinstance(request, RemoveRaftVoterRequest):
        return RemoveRaftVoterResponse(error_code=error, error_message=message)
    host, port = leader_endpoint or ("", -1)
    return UpdateRaftVoterResponse(
        error_code=error,
        current_leader=update_resp.CurrentLeader(leader_id=_leader_id(leader_id),
                                                 leader_epoch=epoch, host=host, port=port),
    )


# -- common response reading -------------------------------------------------------------

def response_header(response: RaftResponse) -> ResponseHeader:
    """Top-level error, else the single partition's error, leader and epoch."""
    if isinstance(response, FetchResponse):
        # one topic with one partition (Kafka's RaftUtil.hasValidTopicPartition)
        fparts = [p for t in response.responses for p in t.partitions]
        if (response.error_code != ErrorCode.NONE or len(response.responses) != 1
                or len(fparts) != 1):
            return ResponseHeader(_top_error(response.error_code), None, None)
        fpart = fparts[0]
        return ResponseHeader(
            fpart.error_code, _leader_or_none(fpart.current_leader.leader_id),
            _epoch_or_none(fpart.current_leader.leader_epoch),
        )
    if isinstance(response, DescribeQuorumResponse | AddRaftVoterResponse
                  | RemoveRaftVoterResponse | ApiVersionsResponse):
        return ResponseHeader(response.error_code, None, None)
    if isinstance(response, UpdateRaftVoterResponse):
        leader = response.current_leader
        return ResponseHeader(response.error_code, _leader_or_none(leader.leader_id),
                              _epoch_or_none(leader.leader_epoch))
    if isinstance(response, FetchSnapshotResponse):
        sparts = [p for t in response.topics for p in t.partitions]
        if response.error_code != ErrorCode.NONE or len(sparts) != 1:
            return ResponseHeader(_top_error(response.error_code), None, None)
        spart = sparts[0]
        return ResponseHeader(
            spart.error_code, _leader_or_none(spart.current_leader.leader_id),
            _epoch_or_none(spart.current_leader.leader_epoch),
        )
    parts = [p for t in response.topics for p in t.partitions]
    if response.error_code != ErrorCode.NONE or len(parts) != 1:
        return ResponseHeader(_top_error(response.error_code), None, None)
    part = parts[0]
    return ResponseHeader(part.error_code, _leader_or_none(part.leader_id),
                          _epoch_or_none(part.leader_epoch))


def error_response(request: RaftRequest, error: ErrorCode) -> RaftResponse:
    """The answer a transport gives for a request it could not exchange, e.g. one the peer's
    versions cannot carry (Kafka's ``RaftUtil.errorResponse``, which ``KafkaNetworkChannel``
    answers a version mismatch with): the response type, its top-level error only."""
    if isinstance(request, FetchRequest):
        return fetch_error(error)
    response: RaftResponse = response_class(api_key_of(request))(error_code=error)
    return response


def _top_error(error: int) -> int:
    return ErrorCode.INVALID_REQUEST if error == ErrorCode.NONE else error


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
        error_code=ErrorCode.NONE,
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
