"""Every KRaft RPC, with each integer field at each edge of its wire type, to every role.

For each role (leader, follower, prospective, candidate, unattached, observer, resigned, a
KIP-853 leader) and each message (every request kind, and the response to each request the
role has in flight), every integer field is set in turn to 0, -1 and the minimum and
maximum of its type (int16, int32, int64). The node then runs through election timeouts
with every vote granted, so an adopted epoch is also campaigned from. Nothing may raise,
the node must still answer, and what it persisted must read back from the quorum-state
file. ``pytest -s`` prints the counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from raft_harness import Harness
from reconfig_helpers import LISTENERS, bootstrapped_log, dir_id

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.api import OutboundRequest
from pykraft.raft.limits import INT32_MAX
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.quorum_state import ElectionState
from pykraft.runtime.disk_quorum_state import FileQuorumStateStore
from pykraft.sim.hostile import mutations, request_templates


def _leader() -> Harness:
    h = Harness(0, {0, 1, 2})
    h.make_leader()
    return h


def _follower() -> Harness:
    h = Harness(0, {0, 1, 2}, stored=ElectionState(2, leader_id=1))
    (fetch,) = h.take_requests(rpc.FetchRequest)
    h.respond(fetch, rpc.fetch_response(ErrorCode.NONE, 1, 2, high_watermark=0))
    return h


def _prospective() -> Harness:
    h = Harness(0, {0, 1, 2})
    h.advance_to_next_tick()
    return h


def _candidate() -> Harness:
    h = _prospective()
    h.grant_all_votes()
    return h


def _resigned() -> Harness:
    h = _leader()
    h.client.begin_shutdown(h.now)
    h.drain()
    return h


def _dynamic_leader() -> Harness:
    """Node 0 leads a KIP-853 quorum of {0, 1}; an AddRaftVoter for 2 waits on its probe."""
    h = Harness(0, set(), log=bootstrapped_log(0, 1), directory_id=dir_id(0),
                bootstrap_servers=(1,))
    h.make_leader()
    h.request(-7, rpc.add_voter_request(None, 2, dir_id(2), LISTENERS))
    return h


ROLES: dict[str, Callable[[], Harness]] = {
    "leader": _leader,
    "follower": _follower,
    "prospective": _prospective,
    "candidate": _candidate,
    "unattached": lambda: Harness(0, {0, 1, 2}, stored=ElectionState(2)),
    "observer": lambda: Harness(5, {0, 1, 2}),
    "resigned": _resigned,
    "dynamic-leader": _dynamic_leader,
}


def live_requests(h: Harness) -> list[rpc.RaftRequest]:
    """Requests from voter 1 that a replica in this role acts on as they are."""
    client, epoch = h.client, h.client.epoch
    last = OffsetAndEpoch(h.log.log_end_offset, h.log.last_fetched_epoch)
    leader = client.leader_and_epoch.leader_id
    return [
        rpc.vote_request(None, client.node_id, epoch=epoch + 1, local_id=1, last=last,
                         pre_vote=False),
        rpc.vote_request(None, client.node_id, epoch=epoch, local_id=1, last=last,
                         pre_vote=True),
        rpc.begin_quorum_request(None, client.node_id, 1, epoch + 1),
        rpc.end_quorum_request(None, 1 if leader is None else leader, epoch,
                               (client.local_key,)),
        rpc.fetch_request(None, 1, epoch=epoch, position=last, high_watermark=None,
                          max_wait_ms=0, max_bytes=1 << 20, directory_id=dir_id(1)),
        rpc.fetch_snapshot_request(None, 1, epoch=epoch, snapshot_id=OffsetAndEpoch(1, 1),
                                   position=0, max_bytes=1 << 20),
        rpc.add_voter_request(None, 3, dir_id(3), LISTENERS),
        rpc.remove_voter_request(None, 1, dir_id(1)),
        rpc.update_voter_request(None, epoch, 1, dir_id(1), LISTENERS, (0, 1)),
    ]


def answer_to(out: OutboundRequest) -> rpc.RaftResponse | None:
    """A well-formed answer from the destination to a request the role sent."""
    request, peer = out.request, out.destination
    if isinstance(request, rpc.VoteRequest):
        return rpc.vote_response(ErrorCode.NONE, None,
                                 int(request.topics[0].partitions[0].replica_epoch), True)
    if isinstance(request, rpc.FetchRequest):
        epoch = int(request.topics[0].partitions[0].current_leader_epoch)
        return rpc.fetch_response(ErrorCode.NONE, peer, epoch, high_watermark=0,
                                  diverging=OffsetAndEpoch(0, 0), snapshot_id=None)
    if isinstance(request, rpc.BeginQuorumEpochRequest):
        return rpc.begin_quorum_response(ErrorCode.NONE, None,
                                         int(request.topics[0].partitions[0].leader_epoch))
    if isinstance(request, rpc.EndQuorumEpochRequest):
        return rpc.end_quorum_response(ErrorCode.NONE, None,
                                       int(request.topics[0].partitions[0].leader_epoch))
    if isinstance(request, rpc.ApiVersionsRequest):
        return rpc.kraft_api_versions_response((0, 1), 1)
    return None


def check_alive_and_readable(h: Harness, store: FileQuorumStateStore) -> None:
    """The node still answers, and its stored state survives the quorum-state file."""
    h.request(9, rpc.describe_quorum_request(), correlation=10_000)
    assert any(r.correlation_id == 10_000 for r in h.take_responses())
    stored = h.store.read()
    assert stored is not None and stored.epoch == h.client.epoch <= INT32_MAX
    store.write(stored, h.client.kraft_version)
    assert store.read() == stored


def test_boundary_values_in_every_field_of_every_rpc(tmp_path: Path) -> None:
    counts: Counter[str] = Counter()
    store = FileQuorumStateStore(tmp_path, frozenset({0, 1, 2}))
    for make in ROLES.values():
        probe = make()
        templates = live_requests(probe) + request_templates(1, probe.client)
        for index, template in enumerate(templates):
            for _label, request in mutations(template):
                h = make()
                h.take_responses()
                h.request(1, request, correlation=index)
                answers = [r.response for r in h.take_responses() if r.correlation_id == index]
                counts["requests sent"] += 1
                if not answers:
                    counts["requests parked or pending"] += 1
                elif rpc.response_header(answers[0]).error == ErrorCode.NONE:
                    counts["requests accepted"] += 1
                else:
                    counts["requests refused"] += 1
                    if rpc.response_header(answers[0]).error == ErrorCode.INVALID_REQUEST:
                        counts["requests refused as INVALID_REQUEST"] += 1
                h.run_elections(rounds=8)
                check_alive_and_readable(h, store)
                counts["nodes alive after a request"] += 1
        for out in probe.requests:
            template_answer = answer_to(out)
            if template_answer is None:
                continue
            position = probe.requests.index(out)
            for _label, response in mutations(template_answer):
                h = make()
                target = h.requests[position]
                h.respond(target, response)
                counts["responses sent"] += 1
                h.run_elections(rounds=8)
                check_alive_and_readable(h, store)
                counts["nodes alive after a response"] += 1
    print("\nboundary fuzz:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    assert counts["requests sent"] == counts["nodes alive after a request"] > 1000
    assert counts["responses sent"] == counts["nodes alive after a response"] > 200
    assert counts["requests refused as INVALID_REQUEST"] > 0
