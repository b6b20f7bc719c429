"""Arbitrary wire messages never crash the core with anything but a typed error."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from raft_harness import Harness, data_batches

from pykraft.errors import FatalRaftError
from pykraft.messages.kafka import fetch_response as fetch_resp
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.quorum_state import ElectionState

REQUESTS = st.one_of(
    st.from_type(rpc.VoteRequest), st.from_type(rpc.BeginQuorumEpochRequest),
    st.from_type(rpc.EndQuorumEpochRequest), st.from_type(rpc.FetchRequest),
    st.from_type(rpc.DescribeQuorumRequest),
)
FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


_PARTITIONS = st.builds(
    fetch_resp.PartitionData,
    records=st.one_of(st.none(), st.binary(max_size=120)),
    aborted_transactions=st.none(),
)
FETCH_RESPONSES = st.builds(
    rpc.FetchResponse,
    responses=st.lists(st.builds(fetch_resp.FetchableTopicResponse,
                                 partitions=st.lists(_PARTITIONS, max_size=2).map(tuple)),
                       max_size=2).map(tuple),
)


def leader() -> Harness:
    h = Harness()
    h.make_leader()
    return h


@FUZZ
@given(st.lists(REQUESTS, min_size=1, max_size=5), st.booleans())
def test_random_requests_always_get_an_answer_or_are_parked(
    requests: list[rpc.RaftRequest], as_leader: bool
) -> None:
    h = leader() if as_leader else Harness(stored=ElectionState(2, leader_id=1))
    for index, request in enumerate(requests):
        h.request(4, request, correlation=index)
        answered = {r.correlation_id for r in h.take_responses()}
        assert index in answered or isinstance(request, rpc.FetchRequest)


@FUZZ
@given(FETCH_RESPONSES)
def test_random_fetch_responses_are_survived(response: rpc.FetchResponse) -> None:
    h = Harness(stored=ElectionState(2, leader_id=1))
    (out,) = h.take_requests(rpc.FetchRequest)
    # a diverging epoch below the (random) high watermark is a typed, fatal stop
    with contextlib.suppress(FatalRaftError):
        h.respond(out, response)
    assert h.log.log_end_offset >= 0


@FUZZ
@given(st.binary(max_size=200), st.integers(0, 3))
def test_garbage_records_are_rejected_without_appending(garbage: bytes, prefix: int) -> None:
    h = Harness(stored=ElectionState(2, leader_id=1))
    (out,) = h.take_requests(rpc.FetchRequest)
    records = data_batches(0, 2, prefix) + garbage
    h.respond(out, rpc.fetch_response(ErrorCode.NONE, 1, 2, high_watermark=0, records=records))
    assert h.log.log_end_offset in (0, prefix)


@FUZZ
@given(st.from_type(rpc.VoteResponse))
def test_random_vote_responses_are_survived(response: rpc.VoteResponse) -> None:
    h = Harness()
    h.advance_to_next_tick()
    (out, *_) = h.take_requests(rpc.VoteRequest)
    h.respond(out, response)
    assert h.client.epoch >= 0
