"""Fetch on both sides: long-poll, divergence, truncation, HWM, persist-before-send."""

from __future__ import annotations

import uuid

import pytest
from raft_harness import Harness, data_batches, partition_of

from pykraft.errors import NotLeaderError
from pykraft.ids import METADATA_TOPIC_ID, ZERO_UUID
from pykraft.messages.kafka import fetch_request as fetch_req
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.quorum_state import ElectionState
from pykraft.raft.states import Follower, Leader, Prospective, Resigned, Unattached
from pykraft.records.batch import iter_batches


def leader_with_data(records: int = 2) -> Harness:
    """Leader of epoch 1 in {0,1,2}: LeaderChange at 0, ``records`` data records after."""
    h = Harness()
    h.make_leader()
    for i in range(records):
        h.client.append(h.now, [b"r%d" % i])
    h.advance(h.config.append_linger_ms)
    h.flush()
    return h


# -- leader side ------------------------------------------------------------------------

def test_leader_returns_records_from_the_fetch_offset() -> None:
    h = leader_with_data(2)
    response = h.fetch(1, 1, 1, 1)
    assert response is not None
    part = partition_of(response)
    assert part.error_code == ErrorCode.NONE
    batches = list(iter_batches(bytes(part.records or b"")))
    assert [b.base_offset for b in batches] == [1]
    assert [r.value for r in batches[0].records()] == [b"r0", b"r1"]
    assert part.current_leader.leader_id == 0 and part.current_leader.leader_epoch == 1


def test_high_watermark_needs_a_majority_and_the_epoch_start() -> None:
    h = leader_with_data(2)
    assert h.hwm() is None  # only the leader has flushed
    h.fetch(1, 1, 1, 1)  # follower 1 has the LeaderChange batch: offset 1 > epoch start 0
    assert h.hwm() == 1
    h.fetch(1, 1, 3, 1)
    assert h.hwm() == 3
    assert [b.base_offset for b in h.listener.commits] == [0, 1]


def test_observers_never_count_towards_the_high_watermark() -> None:
    h = leader_with_data(2)
    h.fetch(7, 1, 3, 1)
    h.fetch(8, 1, 3, 1)
    assert h.hwm() is None
    observers = h.client.describe_quorum().topics[0].partitions[0].observers
    assert sorted(o.replica_id for o in observers) == [7, 8]


def test_leader_counts_only_its_flushed_offset() -> None:
    h = Harness()
    h.make_leader()
    h.client.append(h.now, [b"x"])
    h.advance(h.config.append_linger_ms)
    h.fetch(1, 1, 2, 1)  # the follower is ahead of the leader's disk
    assert h.hwm() == 1
    h.flush()
    assert h.hwm() == 2


def test_fetch_with_diverging_epoch_gets_the_leaders_epoch_end() -> None:
    log = MemoryLog()
    log.append(data_batches(0, 1, 3))
    h = Harness(log=log, stored=ElectionState(1))
    h.make_leader()  # epoch 2 starts at offset 3
    response = h.fetch(1, 2, 5, 1)
    assert response is not None
    diverging = partition_of(response).diverging_epoch
    assert (diverging.epoch, diverging.end_offset) == (1, 3)
    assert not partition_of(response).records


def test_empty_fetch_is_parked_until_new_data() -> None:
    h = leader_with_data(0)
    h.fetch(1, 1, 1, 1)  # acknowledges the LeaderChange: HWM 1
    assert h.fetch(1, 1, 1, 1, hwm=1, max_wait_ms=500) is None
    h.client.append(h.now, [b"late"])
    h.advance(h.config.append_linger_ms)
    (out,) = h.take_responses()
    assert isinstance(out.response, rpc.FetchResponse)
    assert partition_of(out.response).records


def test_parked_fetch_expires_empty() -> None:
    h = leader_with_data(0)
    h.fetch(1, 1, 1, 1)
    assert h.fetch(1, 1, 1, 1, hwm=1, max_wait_ms=500) is None
    h.advance(499)
    assert h.take_responses() == []
    h.advance(1)
    (out,) = h.take_responses()
    assert isinstance(out.response, rpc.FetchResponse)
    assert not partition_of(out.response).records


def test_fetch_from_follower_behind_on_hwm_is_answered_at_once() -> None:
    h = leader_with_data(0)
    h.fetch(1, 1, 1, 1)
    response = h.fetch(2, 1, 1, 1, hwm=0, max_wait_ms=500)
    assert response is not None and partition_of(response).high_watermark == 1


@pytest.mark.parametrize(("epoch", "error"), [
    (0, ErrorCode.FENCED_LEADER_EPOCH), (2, ErrorCode.UNKNOWN_LEADER_EPOCH),
])
def test_fetch_epoch_mismatch(epoch: int, error: ErrorCode) -> None:
    h = leader_with_data(0)
    response = h.fetch(1, epoch, 0, 0)
    assert response is not None and partition_of(response).error_code == error


def test_non_leader_answers_fetch_with_not_leader_and_the_known_leader() -> None:
    h = Harness(stored=ElectionState(3, leader_id=2))
    response = h.fetch(1, 3, 0, 0)
    assert response is not None
    part = partition_of(response)
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert part.current_leader.leader_id == 2


@pytest.mark.parametrize(("topic_id", "partition"), [
    (ZERO_UUID, 0), (uuid.UUID(int=7), 0), (METADATA_TOPIC_ID, 1),
], ids=["by_name", "other_topic_id", "other_partition"])
def test_fetch_of_another_topic_partition_is_an_invalid_request(
        topic_id: uuid.UUID, partition: int) -> None:
    """Kafka (RaftUtil.hasValidTopicPartition) matches the topic by id only, so a Fetch
    naming the topic (v4-v12, no id) or another partition gets a top-level INVALID_REQUEST
    with no topics, like any request the single-partition KRaft client does not serve."""
    h = leader_with_data(0)
    request = rpc.fetch_request(None, 1, epoch=1, position=OffsetAndEpoch(0, 0),
                                high_watermark=None, max_wait_ms=0, max_bytes=100)
    (sent,) = request.topics[0].partitions
    part = fetch_req.FetchPartition(
        partition=partition, current_leader_epoch=sent.current_leader_epoch,
        fetch_offset=sent.fetch_offset, last_fetched_epoch=sent.last_fetched_epoch,
        log_start_offset=sent.log_start_offset, partition_max_bytes=sent.partition_max_bytes)
    topic = fetch_req.FetchTopic(topic_id=topic_id, partitions=(part,))
    h.request(1, rpc.FetchRequest(max_wait_ms=request.max_wait_ms, min_bytes=request.min_bytes,
                                  topics=(topic,)))
    (out,) = h.take_responses()
    assert isinstance(out.response, rpc.FetchResponse)
    assert (out.response.error_code, out.response.responses) == (ErrorCode.INVALID_REQUEST, ())


def test_invalid_fetch_fields() -> None:
    h = leader_with_data(0)
    response = h.fetch(1, 1, 0, 2)  # last fetched epoch beyond the current epoch
    assert response is not None and partition_of(response).error_code == (
        ErrorCode.INVALID_REQUEST)


def test_check_quorum_resigns_a_leader_nobody_fetches_from() -> None:
    h = leader_with_data(0)
    state = h.state()
    assert isinstance(state, Leader)
    h.advance(state.progress.check_quorum_deadline_ms - h.now - 1)
    h.fetch(1, 1, 1, 1)  # one follower + the leader is a majority of 3
    h.advance(h.config.check_quorum_timeout_ms - 1)
    assert not isinstance(h.state(), Resigned)
    h.advance(1)
    assert isinstance(h.state(), Resigned)


def test_appends_without_a_poll_share_one_batch_written_at_the_next_input() -> None:
    h = Harness(append_linger_ms=0)
    h.make_leader()
    end = h.log.log_end_offset
    last = [h.client.append(h.now, [b"a%d" % i], poll=False) for i in range(3)]
    assert last == [end, end + 1, end + 2]  # offsets are handed out at once
    assert h.log.log_end_offset == end  # nothing reached the log yet
    h.client.tick(h.now)
    h.drain()
    written = [b for b in iter_batches(h.log.read(end, 1 << 20)) if not b.is_control]
    assert [(b.base_offset, [r.value for r in b.records()]) for b in written] == [
        (end, [b"a0", b"a1", b"a2"])]


def test_append_only_on_leader() -> None:
    h = Harness()
    with pytest.raises(NotLeaderError):
        h.client.append(h.now, [b"x"])


# -- follower side ------------------------------------------------------------------------

def follower() -> Harness:
    return Harness(stored=ElectionState(2, leader_id=1))


def answer_fetch(h: Harness, **kwargs: object) -> rpc.FetchRequest:
    (out,) = h.take_requests(rpc.FetchRequest)
    assert isinstance(out.request, rpc.FetchRequest)
    h.respond(out, rpc.fetch_response(ErrorCode.NONE, 1, h.client.epoch,
                                      **kwargs))  # type: ignore[arg-type]
    return out.request


def test_follower_appends_then_waits_for_flush_before_next_fetch() -> None:
    h = follower()
    answer_fetch(h, high_watermark=1, records=data_batches(0, 2, 2))
    assert h.log.log_end_offset == 2
    assert h.last_ready.flush is not None and h.last_ready.flush.up_to_offset == 2
    assert h.take_requests(rpc.FetchRequest) == []  # nothing durable yet: no ack
    h.flush()
    (out,) = h.take_requests(rpc.FetchRequest)
    assert isinstance(out.request, rpc.FetchRequest)
    assert out.request.topics[0].partitions[0].fetch_offset == 2


def test_follower_high_watermark_is_capped_by_its_log_and_delivers_commits() -> None:
    h = follower()
    answer_fetch(h, high_watermark=10, records=data_batches(0, 2, 2))
    assert h.hwm() == 2
    assert [b.base_offset for b in h.listener.commits] == [0, 1]


def test_follower_truncates_on_divergence() -> None:
    log = MemoryLog()
    log.append(data_batches(0, 1, 2) + data_batches(2, 2, 3))
    log.flush(5)
    h = Harness(log=log, stored=ElectionState(3, leader_id=1))
    answer_fetch(h, diverging=OffsetAndEpoch(3, 2))
    assert h.log.log_end_offset == 3


def test_truncation_below_committed_data_is_refused_and_the_fetch_retried() -> None:
    """Kafka stops on such an answer; a peer's word must not stop this node, nor make it
    drop committed data."""
    h = follower()
    answer_fetch(h, high_watermark=4, records=data_batches(0, 2, 4))
    h.flush()
    (out,) = h.take_requests(rpc.FetchRequest)
    h.respond(out, rpc.fetch_response(ErrorCode.NONE, 1, 2, diverging=OffsetAndEpoch(1, 2)))
    assert h.log.log_end_offset == 4 and h.hwm() == 4
    assert not h.take_requests(rpc.FetchRequest)
    h.advance(h.config.retry_backoff_ms)
    assert h.take_requests(rpc.FetchRequest)


def test_corrupt_records_are_not_appended_and_the_fetch_is_retried() -> None:
    h = follower()
    corrupt = bytearray(data_batches(0, 2, 1))
    corrupt[-1] ^= 0xFF
    answer_fetch(h, high_watermark=0, records=bytes(corrupt))
    assert h.log.log_end_offset == 0
    h.advance(h.config.retry_backoff_ms)
    assert len(h.take_requests(rpc.FetchRequest)) == 1


def test_fetch_response_naming_a_new_leader_switches_leader() -> None:
    h = follower()
    (out,) = h.take_requests(rpc.FetchRequest)
    h.respond(out, rpc.fetch_response(ErrorCode.FENCED_LEADER_EPOCH, 2, 3))
    assert isinstance(h.state(), Follower)
    assert (h.state().leader_id, h.client.epoch) == (2, 3)


def test_stale_response_is_ignored() -> None:
    h = follower()
    (out,) = h.take_requests(rpc.FetchRequest)
    h.respond(out, rpc.fetch_response(ErrorCode.NONE, 0, 1, records=data_batches(0, 1, 1)))
    assert h.log.log_end_offset == 0 and h.client.epoch == 2


def test_follower_without_fetches_starts_pre_vote() -> None:
    h = follower()
    h.advance(h.config.fetch_timeout_ms)
    assert isinstance(h.state(), Prospective)
    assert h.state().leader_id == 1  # remembered, to fall back to


def test_observer_finds_the_leader_through_any_voter() -> None:
    h = Harness(node_id=5, voters={0, 1, 2})
    assert isinstance(h.state(), Unattached)
    (out,) = h.take_requests(rpc.FetchRequest)
    h.respond(out, rpc.fetch_response(ErrorCode.NOT_LEADER_OR_FOLLOWER, 2, 4))
    assert isinstance(h.state(), Follower) and h.state().leader_id == 2
    h.advance(10 * h.config.election_timeout_ms)
    assert not isinstance(h.state(), Prospective)  # observers never campaign


def test_response_after_timeout_is_ignored() -> None:
    h = follower()
    (out,) = h.take_requests(rpc.FetchRequest)
    h.advance(h.config.request_timeout_ms)
    h.respond(out, rpc.fetch_response(ErrorCode.NONE, 1, 2, records=data_batches(0, 2, 1)))
    assert h.log.log_end_offset == 0


def test_a_late_answer_at_the_end_of_the_retry_backoff_still_sends_the_next_fetch() -> None:
    """A restarted broker's observer: its first Fetch (queued when the core was built)
    times out while the broker recovers its logs, the fetch timeout makes it Unattached and
    the leader's address backs off. The late answer to that Fetch arrives exactly when the
    backoff ends: the observer must ask again then, not wait for its next timer (the
    snapshot-clean interval, 60 s: a restarted broker stayed fenced that long)."""
    h = Harness(node_id=1000, voters={1}, stored=ElectionState(1, leader_id=1))
    (first,) = h.take_requests(rpc.FetchRequest)
    h.advance(h.config.fetch_timeout_ms + 1500)  # the event loop was busy recovering logs
    assert isinstance(h.state(), Unattached)
    assert h.take_requests(rpc.FetchRequest) == []  # the leader backs off
    h.now += h.config.retry_backoff_ms
    h.respond(first, rpc.fetch_response(ErrorCode.NONE, 1, 1, high_watermark=0))
    assert h.log.log_end_offset == 0  # the late answer itself is dropped
    sent = h.take_requests(rpc.FetchRequest)
    assert [out.destination for out in sent] == [1]


def test_describe_quorum_reports_voters_and_observers() -> None:
    h = leader_with_data(1)
    h.now += 5
    h.fetch(1, 1, 2, 1)
    h.fetch(9, 1, 1, 1)
    part = h.client.describe_quorum().topics[0].partitions[0]
    assert (part.leader_id, part.leader_epoch, part.high_watermark) == (0, 1, 2)
    voters = {int(v.replica_id): v for v in part.current_voters}
    assert voters[0].last_fetch_timestamp == h.now
    assert (voters[1].log_end_offset, voters[1].last_caught_up_timestamp) == (2, h.now)
    assert voters[2].log_end_offset == -1
    assert [(o.replica_id, o.log_end_offset) for o in part.observers] == [(9, 1)]


def test_the_leaders_row_is_now_even_when_the_voter_set_names_no_directory() -> None:
    """A static voter set has no directory ids while the leader has one: its own row is
    still the leader's ``now``, so no follower's caught-up time is later than the leader's
    (the tool's MaxFollowerLagTimeMs, leader minus laggard, was negative)."""
    h = Harness(0, {0, 1, 2}, directory_id=uuid.UUID(int=5))
    h.make_leader()
    h.advance(100)
    h.fetch(1, h.client.epoch, h.log.log_end_offset, h.log.last_fetched_epoch)
    part = h.client.describe_quorum().topics[0].partitions[0]
    voters = {int(v.replica_id): v for v in part.current_voters}
    assert voters[0].last_caught_up_timestamp == voters[0].last_fetch_timestamp == h.now
    assert voters[1].last_caught_up_timestamp == h.now


def test_describe_quorum_on_a_follower_is_not_leader() -> None:
    h = follower()
    h.request(3, rpc.describe_quorum_request())
    (out,) = h.take_responses()
    assert isinstance(out.response, rpc.DescribeQuorumResponse)
    assert out.response.topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_observer_asks_voters_at_most_once_per_retry_backoff() -> None:
    h = Harness(node_id=5, voters={0, 1, 2})
    (out,) = h.take_requests(rpc.FetchRequest)
    h.respond(out, rpc.fetch_response(ErrorCode.NOT_LEADER_OR_FOLLOWER, None, 0))
    assert h.take_requests(rpc.FetchRequest) == []
    h.advance(h.config.retry_backoff_ms)
    assert len(h.take_requests(rpc.FetchRequest)) == 1
