"""Snapshots on one core (KIP-630): creation rules, retention, FetchSnapshot answers and a
follower installing a snapshot chunk by chunk."""

from __future__ import annotations

import dataclasses

import pytest
from raft_harness import Harness, partition_of

from pykraft.errors import RaftError
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch, SnapshotInfo
from pykraft.raft.snapshots import retention_target
from pykraft.raft.states import Follower, Leader
from pykraft.records.batch import records_field


def leader_with_commits(records: int, **overrides: int) -> Harness:
    """A single-voter leader whose records are committed and delivered."""
    h = Harness(0, {0}, **overrides)
    h.flush()
    for i in range(records):
        h.client.append(h.now, [b"r%d" % i])
        h.advance(h.config.append_linger_ms)
        h.flush()
    assert isinstance(h.state(), Leader)
    return h


def end_id(h: Harness) -> OffsetAndEpoch:
    return OffsetAndEpoch(h.log.log_end_offset, h.log.last_fetched_epoch)


def test_snapshot_must_be_committed_aligned_and_a_log_position() -> None:
    h = leader_with_commits(3)
    end = end_id(h)
    with pytest.raises(RaftError, match="not committed"):
        h.client.create_snapshot(h.now, OffsetAndEpoch(end.offset + 1, end.epoch), [])
    with pytest.raises(RaftError, match="does not end"):
        h.client.create_snapshot(h.now, OffsetAndEpoch(end.offset, end.epoch + 1), [])
    h.client.create_snapshot(h.now, end, [[b"state"]])
    assert [s.snapshot_id for s in h.log.snapshots()] == [end]
    with pytest.raises(RaftError, match="exists"):
        h.client.create_snapshot(h.now, end, [])
    batches = h.client.read_snapshot(end)
    assert batches[0].is_control and batches[-1].is_control
    assert [r.value for r in batches[1].records()] == [b"state"]


def info(offset: int, size: int = 100, timestamp: int = 0) -> SnapshotInfo:
    return SnapshotInfo(OffsetAndEpoch(offset, 1), size, timestamp)


def test_retention_retires_oldest_snapshots_kafka_style() -> None:
    snaps = [info(10), info(20), info(30)]
    kwargs = {"retention_ms": -1, "committed_offset": 100}
    assert retention_target(snaps, 50, 0, retention_bytes=-1, **kwargs) is None
    assert retention_target(snaps, 50, 0, retention_bytes=260, **kwargs) == (
        OffsetAndEpoch(20, 1))  # 350 > 260: retire 10; 250 fits
    assert retention_target(snaps, 500, 0, retention_bytes=10, **kwargs) == (
        OffsetAndEpoch(30, 1))  # the newest always stays
    assert retention_target(snaps, 500, 0, retention_bytes=10, retention_ms=-1,
                            committed_offset=25) == OffsetAndEpoch(20, 1)
    old = [info(10, timestamp=0), info(20, timestamp=900), info(30, timestamp=1000)]
    assert retention_target(old, 0, 1000, retention_bytes=-1, retention_ms=500,
                            committed_offset=100) == OffsetAndEpoch(20, 1)


def test_log_start_moves_behind_snapshots_and_fetchers_below_get_the_snapshot_id() -> None:
    h = Harness(0, {0, 1, 2}, snapshot_retention_bytes=0)
    h.make_leader()
    epoch = h.client.epoch
    for _ in range(2):
        h.client.append(h.now, [b"x"])
        h.advance(h.config.append_linger_ms)
        h.flush()
        h.fetch(1, epoch, h.log.log_end_offset, epoch)
        h.client.create_snapshot(h.now, end_id(h), [[b"s"]])
    latest = end_id(h)
    assert h.log.log_start_offset == latest.offset  # retention 0: only the newest stays
    response = h.fetch(2, epoch, 0, 0)
    assert response is not None
    assert (partition_of(response).snapshot_id.end_offset,
            partition_of(response).snapshot_id.epoch) == (latest.offset, latest.epoch)


def test_fetch_snapshot_error_cases_and_chunks() -> None:
    h = leader_with_commits(3)
    sid = end_id(h)
    h.client.create_snapshot(h.now, sid, [[b"v" * 300]])
    size = h.log.snapshots()[-1].size

    def fetch_snapshot(snapshot: OffsetAndEpoch, position: int, epoch: int | None = None,
                       max_bytes: int = 128) -> rpc.FetchSnapshotResponse:
        h.request(1, rpc.fetch_snapshot_request(
            None, 1, epoch=h.client.epoch if epoch is None else epoch, snapshot_id=snapshot,
            position=position, max_bytes=max_bytes))
        (out,) = h.take_responses()
        assert isinstance(out.response, rpc.FetchSnapshotResponse)
        return out.response

    def error(response: rpc.FetchSnapshotResponse) -> ErrorCode:
        return ErrorCode(rpc.response_header(response).error)

    assert error(fetch_snapshot(OffsetAndEpoch(99, 1), 0)) == ErrorCode.SNAPSHOT_NOT_FOUND
    assert error(fetch_snapshot(OffsetAndEpoch(0, 0), 0)) == ErrorCode.SNAPSHOT_NOT_FOUND
    assert error(fetch_snapshot(sid, size)) == ErrorCode.POSITION_OUT_OF_RANGE
    assert error(fetch_snapshot(sid, 0, epoch=h.client.epoch - 1)) == (
        ErrorCode.FENCED_LEADER_EPOCH)
    assert error(fetch_snapshot(sid, 0, epoch=h.client.epoch + 1)) == (
        ErrorCode.UNKNOWN_LEADER_EPOCH)
    assert error(fetch_snapshot(sid, 0, max_bytes=0)) == ErrorCode.INVALID_REQUEST
    data = b""
    while len(data) < size:
        part = fetch_snapshot(sid, len(data)).topics[0].partitions[0]
        assert part.size == size and part.position == len(data)
        data += records_field(part.unaligned_records)
    assert data == h.log.read_snapshot(sid, 0, size)


def test_follower_downloads_installs_and_loads_a_snapshot() -> None:
    leader = leader_with_commits(4)
    sid = end_id(leader)
    leader.client.create_snapshot(leader.now, sid, [[b"counter=4"]])
    size = leader.log.snapshots()[-1].size
    f = Harness(1, {0, 1}, max_fetch_bytes=100)
    f.request(0, rpc.begin_quorum_request(None, 1, 0, sid.epoch))
    f.take_responses()
    assert isinstance(f.state(), Follower)
    (fetch,) = f.take_requests(rpc.FetchRequest)
    f.respond(fetch, rpc.fetch_response(ErrorCode.NONE, 0, sid.epoch, high_watermark=sid.offset,
                                        snapshot_id=sid))
    position = 0
    while position < size:
        (out,) = f.take_requests(rpc.FetchSnapshotRequest)
        assert isinstance(out.request, rpc.FetchSnapshotRequest)
        assert out.request.topics[0].partitions[0].position == position
        chunk = leader.log.read_snapshot(sid, position, 100)
        f.respond(out, rpc.fetch_snapshot_response(ErrorCode.NONE, 0, sid.epoch, snapshot_id=sid,
                                                   size=size, position=position, chunk=chunk))
        position += len(chunk)
    assert f.log.log_start_offset == sid.offset == f.log.log_end_offset
    assert f.listener.loads == [sid]
    assert f.take_requests(rpc.FetchRequest)  # back to fetching, from the snapshot's end


def test_time_based_retention_applies_without_a_new_snapshot() -> None:
    h = leader_with_commits(2, snapshot_retention_ms=10_000, snapshot_retention_bytes=-1)
    first = end_id(h)
    h.client.create_snapshot(h.now, first, [[b"s1"]])
    h.client.append(h.now, [b"more"])
    h.advance(h.config.append_linger_ms)
    h.flush()
    second = end_id(h)
    h.client.create_snapshot(h.now, second, [[b"s2"]])
    assert h.log.log_start_offset == 0  # both snapshots are young
    h.advance(10_001)
    assert h.log.log_start_offset < second.offset  # not re-checked yet
    h.advance_to_next_tick()
    while h.log.log_start_offset < second.offset and h.now < 200_000:
        h.advance_to_next_tick()
    assert h.log.log_start_offset == second.offset
    assert [s.snapshot_id for s in h.log.snapshots()] == [second]


def test_a_snapshot_chunk_behind_an_empty_topic_is_read_without_failing() -> None:
    """A peer's answer may put its one partition in a second topic after an empty one:
    the follower reads the partition the header found (it indexed the first topic and
    stopped on an IndexError)."""
    f = Harness(1, {0, 1})
    f.request(0, rpc.begin_quorum_request(None, 1, 0, 1))
    (fetch,) = f.take_requests(rpc.FetchRequest)
    sid = OffsetAndEpoch(5, 1)
    f.respond(fetch, rpc.fetch_response(ErrorCode.NONE, 0, 1, high_watermark=5,
                                        snapshot_id=sid))
    (out,) = f.take_requests(rpc.FetchSnapshotRequest)
    answer = rpc.fetch_snapshot_response(ErrorCode.NONE, 0, 1, snapshot_id=sid, size=100,
                                         position=0, chunk=b"x" * 10)
    empty = dataclasses.replace(answer.topics[0], partitions=())
    f.respond(out, dataclasses.replace(answer, topics=(empty, *answer.topics)))
    (again,) = f.take_requests(rpc.FetchSnapshotRequest)
    assert isinstance(again.request, rpc.FetchSnapshotRequest)
    assert again.request.topics[0].partitions[0].position == 10
