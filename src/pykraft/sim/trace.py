"""One-line descriptions of KRaft messages for readable simulation traces."""

from __future__ import annotations

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.records.batch import records_field


def describe(message: rpc.RaftRequest | rpc.RaftResponse) -> str:
    """The fields that matter for following a run, e.g. ``Vote(e3 pre last=12@2)``."""
    if isinstance(message, rpc.VoteRequest):
        p = message.topics[0].partitions[0]
        pre = " pre" if p.pre_vote else ""
        return f"Vote(e{p.replica_epoch}{pre} last={p.last_offset}@{p.last_offset_epoch})"
    if isinstance(message, rpc.FetchRequest):
        f = message.topics[0].partitions[0]
        return (f"Fetch(e{f.current_leader_epoch} offset={f.fetch_offset}@"
                f"{f.last_fetched_epoch} hwm={f.high_watermark})")
    if isinstance(message, rpc.BeginQuorumEpochRequest | rpc.EndQuorumEpochRequest):
        q = message.topics[0].partitions[0]
        kind = "Begin" if isinstance(message, rpc.BeginQuorumEpochRequest) else "End"
        return f"{kind}QuorumEpoch(leader={q.leader_id} e{q.leader_epoch})"
    if isinstance(message, rpc.FetchResponse) and message.responses:
        r = message.responses[0].partitions[0]
        extra = f" diverging={r.diverging_epoch.end_offset}@{r.diverging_epoch.epoch}" if (
            r.diverging_epoch.epoch >= 0) else f" bytes={len(records_field(r.records))}"
        return (f"FetchResponse({ErrorCode(r.error_code).name} "
                f"leader={r.current_leader.leader_id} "
                f"e{r.current_leader.leader_epoch} hwm={r.high_watermark}{extra})")
    if isinstance(message, rpc.VoteResponse) and message.topics:
        v = message.topics[0].partitions[0]
        return (f"VoteResponse({ErrorCode(v.error_code).name} granted={v.vote_granted} "
                f"leader={v.leader_id} e{v.leader_epoch})")
    return type(message).__name__
