"""A single RaftClient with in-memory log and store, plus helpers to play its peers."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from pykraft.messages.kafka import fetch_response as fetch_resp
from pykraft.messages.kafka import vote_request as vote_req
from pykraft.messages.kafka import vote_response as vote_resp
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.api import LeaderAndEpoch, OutboundRequest, OutboundResponse, Ready, deliver
from pykraft.raft.config import QuorumConfig
from pykraft.raft.core import RaftClient
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.quorum_state import ElectionState, MemoryQuorumStateStore, QuorumStateStore
from pykraft.raft.states import State
from pykraft.records.batch import RecordBatch, encode_batch

EMPTY = OffsetAndEpoch(0, 0)


@dataclass
class RecordingListener:
    commits: list[RecordBatch] = field(default_factory=list)
    leaders: list[LeaderAndEpoch] = field(default_factory=list)
    loads: list[OffsetAndEpoch] = field(default_factory=list)

    def handle_commit(self, batch: RecordBatch) -> None:
        self.commits.append(batch)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leaders.append(leader)

    def handle_load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        self.loads.append(snapshot_id)


def config(voters: set[int], **overrides: Any) -> QuorumConfig:
    return QuorumConfig(voters=frozenset(voters), **overrides)


def data_batches(base_offset: int, epoch: int, count: int, per_batch: int = 1) -> bytes:
    out = b""
    offset = base_offset
    for _ in range(count):
        out += encode_batch(offset, [(None, b"v%d" % (offset + i)) for i in range(per_batch)],
                            partition_leader_epoch=epoch, timestamp=0)
        offset += per_batch
    return out


class Harness:
    """Drives one client; ``now`` advances only when a test says so."""

    def __init__(self, node_id: int = 0, voters: set[int] | None = None, *,
                 log: MemoryLog | None = None, stored: ElectionState | None = None,
                 seed: int = 1, directory_id: uuid.UUID | None = None,
                 store: QuorumStateStore | None = None, **overrides: Any) -> None:
        self.now = 0
        self.log = log or MemoryLog()
        self.store: QuorumStateStore = store or MemoryQuorumStateStore(stored)
        self.listener = RecordingListener()
        self.config = config(voters if voters is not None else {0, 1, 2}, **overrides)
        self.client = RaftClient(node_id, self.config, self.log, self.store,
                                 rng=random.Random(seed), now_ms=self.now,
                                 directory_id=directory_id)
        self.requests: list[OutboundRequest] = []
        self.responses: list[OutboundResponse] = []
        self.drain()

    def state(self) -> State:
        """The client's state, read afresh (the client changes it behind the test's back)."""
        return self.client.state

    def hwm(self) -> int | None:
        return self.client.high_watermark

    def take_votes(self) -> list[tuple[int, vote_req.PartitionData]]:
        """Outstanding Vote requests as (destination, partition)."""
        out = []
        for sent in self.take_requests(rpc.VoteRequest):
            assert isinstance(sent.request, rpc.VoteRequest)
            out.append((sent.destination, sent.request.topics[0].partitions[0]))
        return out

    def drain(self) -> Ready:
        ready = self.client.ready()
        self.requests.extend(ready.requests)
        self.responses.extend(ready.responses)
        deliver(ready.events, self.listener)
        self.last_ready = ready
        return ready

    def advance(self, ms: int) -> None:
        self.now += ms
        self.client.tick(self.now)
        self.drain()

    def advance_to_next_tick(self) -> None:
        self.now = max(self.now, self.last_ready.next_tick_ms)
        self.client.tick(self.now)
        self.drain()

    def take_requests(self, kind: type | None = None) -> list[OutboundRequest]:
        taken = [r for r in self.requests if kind is None or isinstance(r.request, kind)]
        self.requests = [r for r in self.requests if r not in taken]
        return taken

    def take_responses(self) -> list[OutboundResponse]:
        taken, self.responses = self.responses, []
        return taken

    def request(self, source: int, request: rpc.RaftRequest, correlation: int = 99) -> None:
        self.client.handle_request(self.now, source, correlation, request)
        self.drain()

    def respond(self, out: OutboundRequest, response: rpc.RaftResponse) -> None:
        self.client.handle_response(self.now, out.destination, out.correlation_id, response)
        self.drain()

    def flush(self) -> None:
        self.log.flush(self.log.log_end_offset)
        self.client.flush_completed(self.now, self.log.log_end_offset)
        self.drain()

    def vote(self, source: int, epoch: int, *, last: OffsetAndEpoch = EMPTY,
             pre_vote: bool = False, voter_id: int | None = None) -> rpc.VoteResponse:
        self.request(source, rpc.vote_request(
            None, self.client.node_id if voter_id is None else voter_id, epoch=epoch,
            local_id=source, last=last, pre_vote=pre_vote))
        (out,) = self.take_responses()
        assert isinstance(out.response, rpc.VoteResponse)
        return out.response

    def fetch(self, source: int, epoch: int, offset: int, last_epoch: int, *,
              hwm: int | None = None, max_wait_ms: int = 0,
              directory_id: uuid.UUID | None = None) -> rpc.FetchResponse | None:
        self.request(source, rpc.fetch_request(
            None, source, epoch=epoch, position=OffsetAndEpoch(offset, last_epoch),
            high_watermark=hwm, max_wait_ms=max_wait_ms, max_bytes=1 << 20,
            directory_id=directory_id))
        outs = self.take_responses()
        if not outs:
            return None
        assert isinstance(outs[-1].response, rpc.FetchResponse)
        return outs[-1].response

    def grant_all_votes(self, granted: bool = True) -> None:
        """Answer every outstanding Vote request."""
        for out in self.take_requests(rpc.VoteRequest):
            assert isinstance(out.request, rpc.VoteRequest)
            epoch = out.request.topics[0].partitions[0].replica_epoch
            self.respond(out, rpc.vote_response(ErrorCode.NONE, None, epoch, granted))

    def run_elections(self, rounds: int = 30) -> None:
        """Let timers fire and grant every vote asked for, so the node campaigns if it can."""
        for _ in range(rounds):
            self.advance_to_next_tick()
            self.grant_all_votes()

    def make_leader(self) -> None:
        """Time out, win the pre-vote and the vote."""
        self.advance_to_next_tick()
        self.grant_all_votes()
        self.grant_all_votes()
        self.flush()


def partition_of(response: rpc.FetchResponse) -> fetch_resp.PartitionData:
    return response.responses[0].partitions[0]


def vote_partition(response: rpc.VoteResponse) -> vote_resp.PartitionData:
    return response.topics[0].partitions[0]
