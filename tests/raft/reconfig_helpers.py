"""Shared helpers of the KIP-853 core tests: a bootstrapped dynamic quorum, admin requests
and the new replica's answer to the leader's ApiVersions probe."""

from __future__ import annotations

import uuid

from raft_harness import Harness

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.snapshots import BOOTSTRAP_SNAPSHOT_ID, snapshot_content
from pykraft.raft.states import Leader
from pykraft.raft.voter_set import SUPPORTED_KRAFT_VERSIONS, ReplicaKey, VoterNode, VoterSet
from pykraft.records.control import KRaftVersionRecord, VoterEndpoint

LISTENERS = [("CONTROLLER", "localhost", 9093)]


def dir_id(node: int) -> uuid.UUID:
    return uuid.UUID(int=100 + node)


def bootstrapped_log(*voter_ids: int) -> MemoryLog:
    """``storage format --initial-controllers``: the 0-0 checkpoint with the voters."""
    log = MemoryLog()
    initial = VoterSet(VoterNode(ReplicaKey(v, dir_id(v)),
                                 (VoterEndpoint("CONTROLLER", "localhost", 9093),),
                                 SUPPORTED_KRAFT_VERSIONS) for v in voter_ids)
    sink = log.create_snapshot(BOOTSTRAP_SNAPSHOT_ID)
    for data in snapshot_content(BOOTSTRAP_SNAPSHOT_ID, timestamp_ms=0, batches=(),
                                 header_records=(KRaftVersionRecord(0, 1), initial.to_record())):
        sink.write(data)
    sink.freeze()
    return log


def dynamic_leader() -> Harness:
    """Node 0, the only initial voter of a dynamic quorum, leads with a HWM."""
    h = Harness(0, set(), log=bootstrapped_log(0), directory_id=dir_id(0),
                bootstrap_servers=(1,))
    h.flush()
    assert isinstance(h.state(), Leader) and h.hwm() is not None
    return h


def ask(h: Harness, request: rpc.RaftRequest) -> rpc.RaftResponse | None:
    h.request(-7, request, correlation=len(h.responses) + 500)
    answers = [r.response for r in h.take_responses() if r.destination == -7]
    return answers[-1] if answers else None


def error_of(response: rpc.RaftResponse | None) -> ErrorCode:
    assert response is not None
    return ErrorCode(rpc.response_header(response).error)


def catch_up(h: Harness, node: int) -> None:
    """A fetch from ``node`` at the leader's end (its answer is dropped, others kept)."""
    h.request(node, rpc.fetch_request(
        None, node, epoch=h.client.epoch,
        position=OffsetAndEpoch(h.log.log_end_offset, h.log.last_fetched_epoch),
        high_watermark=None, max_wait_ms=0, max_bytes=1 << 20, directory_id=dir_id(node)))
    h.responses = [r for r in h.responses if not isinstance(r.response, rpc.FetchResponse)]


def add(node: int, directory: uuid.UUID | None = None,
        listeners: list[tuple[str, str, int]] | None = None,
        ack_when_committed: bool = True) -> rpc.AddRaftVoterRequest:
    return rpc.add_voter_request(None, node, dir_id(node) if directory is None else directory,
                                 LISTENERS if listeners is None else listeners,
                                 ack_when_committed=ack_when_committed)


def answer_probe(h: Harness, node: int, supported: tuple[int, int] = (0, 1)) -> None:
    """The replica being added answers the leader's ApiVersions probe."""
    (probe,) = h.take_requests(rpc.ApiVersionsRequest)
    assert probe.destination == node
    h.respond(probe, rpc.kraft_api_versions_response(supported, 0))


def add_voter(h: Harness, node: int, supported: tuple[int, int] = (0, 1),
              ack_when_committed: bool = True) -> rpc.RaftResponse | None:
    """AddRaftVoter through the probe; None while the answer waits for the commit."""
    answer = ask(h, add(node, ack_when_committed=ack_when_committed))
    if answer is not None:
        return answer
    answer_probe(h, node, supported)
    answers = [r.response for r in h.take_responses() if r.destination == -7]
    return answers[-1] if answers else None
