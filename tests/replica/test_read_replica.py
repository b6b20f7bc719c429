"""The preferred read replica (KIP-392): ``replica.selector.class`` and Kafka's
RackAwareReplicaSelector over findPreferredReadReplica's candidates."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.errors import ConfigError
from pykraft.replica.leader import FollowerState
from pykraft.replica.read_replica import (
    RACK_AWARE_REPLICA_SELECTOR,
    ReplicaSelector,
    ReplicaView,
    preferred_read_replica,
    rack_aware_select,
    replica_selector,
)

RACK_AWARE = ReplicaSelector.RACK_AWARE
NOW = 100_000


def test_the_selector_is_read_from_the_class_name() -> None:
    assert replica_selector({}) is None
    assert replica_selector({"replica.selector.class": f" {RACK_AWARE_REPLICA_SELECTOR} "}) \
        is RACK_AWARE


@pytest.mark.parametrize("name", ["com.example.MySelector", "", "RackAwareReplicaSelector"])
def test_any_other_class_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=r"replica\.selector\.class.*cannot load Java classes"):
        replica_selector({"replica.selector.class": name})


def test_kafkas_same_rack_cases() -> None:
    """Kafka's ReplicaSelectorTest.testSameRackSelector: the most caught-up of the client's
    rack, else the leader (no replica there, or the leader is there)."""
    leader = ReplicaView(0, "rack-a", 4, 0)
    replicas = [leader, ReplicaView(1, "rack-a", 2, 5), ReplicaView(2, "rack-b", 3, 3),
                ReplicaView(3, "rack-b", 4, 2)]
    assert rack_aware_select("rack-b", leader, replicas).broker_id == 3
    assert rack_aware_select("not-a-rack", leader, replicas) is leader
    assert rack_aware_select("rack-a", leader, replicas) is leader
    assert rack_aware_select("", leader, replicas) is leader
    assert rack_aware_select(None, leader, replicas) is leader


def test_ties_go_to_the_most_recently_caught_up_then_the_highest_id() -> None:
    leader = ReplicaView(0, "a", 9, 0)
    recent, stale = ReplicaView(1, "b", 9, 10), ReplicaView(2, "b", 9, 50)
    assert rack_aware_select("b", leader, [leader, recent, stale]) is recent
    low, high = ReplicaView(1, "b", 9, 10), ReplicaView(5, "b", 9, 10)
    assert rack_aware_select("b", leader, [leader, high, low]) is high


def _follower(start: int, end: int, caught_up_ms: int = NOW) -> FollowerState:
    return FollowerState(log_start_offset=start, log_end_offset=end,
                         last_caught_up_time_ms=caught_up_ms)


def _preferred(client_rack: str | None, followers: dict[int, FollowerState], *,
               isr: tuple[int, ...] = (1, 2, 3), fetch_offset: int = 5,
               racks: dict[int, str | None] | None = None,
               selector: ReplicaSelector | None = RACK_AWARE) -> int:
    return preferred_read_replica(
        selector, client_rack, leader_id=1, leader_end_offset=10, followers=followers,
        isr=isr, racks={1: "a", 2: "b", 3: "c"} if racks is None else racks,
        fetch_offset=fetch_offset, now_ms=NOW)


def test_a_caught_up_follower_in_the_clients_rack_is_preferred() -> None:
    followers = {2: _follower(0, 10), 3: _follower(0, 10)}
    assert _preferred("c", followers) == 3
    assert _preferred("b", followers) == 2
    assert _preferred("a", followers) == -1  # the leader's rack
    assert _preferred("", followers) == -1
    assert _preferred("c", followers, selector=None) == -1  # unset: leaders only


@pytest.mark.parametrize(("why", "follower", "isr", "racks"), [
    ("out of the ISR", _follower(0, 10), (1, 2), None),
    ("behind the fetch offset", _follower(0, 4), (1, 2, 3), None),
    ("its log starts past the fetch offset", _follower(6, 10), (1, 2, 3), None),
    ("never fetched since this leader started", FollowerState(), (1, 2, 3), None),
    ("no endpoint on the client's listener", _follower(0, 10), (1, 2, 3), {1: "a"}),
])
def test_a_follower_that_cannot_serve_the_offset_is_not_preferred(
        why: str, follower: FollowerState, isr: tuple[int, ...],
        racks: dict[int, str | None] | None) -> None:
    assert _preferred("c", {2: _follower(0, 10), 3: follower}, isr=isr, racks=racks) == -1, why


def test_a_follower_at_exactly_the_fetch_offset_serves_it() -> None:
    assert _preferred("c", {3: _follower(5, 5)}, fetch_offset=5) == 3


_RACKS = st.sampled_from(["a", "b", "c"])
_FOLLOWERS = st.dictionaries(
    st.integers(2, 8),
    st.tuples(st.integers(0, 6), st.integers(-1, 12), st.integers(0, NOW), st.booleans(),
              st.one_of(st.none(), _RACKS)),
    max_size=6)


@given(_FOLLOWERS, st.one_of(st.none(), st.just(""), _RACKS), _RACKS, st.integers(0, 10))
def test_the_preferred_replica_is_the_best_candidate_of_the_clients_rack(
        drawn: dict[int, tuple[int, int, int, bool, str | None]], client_rack: str | None,
        leader_rack: str, fetch_offset: int) -> None:
    """Whatever the followers' states: -1 when the client has no rack or shares the
    leader's; otherwise an in-sync follower of the client's rack holding the fetch offset,
    none of whose rack-mates holding it is more caught up; -1 only when there is none."""
    followers = {b: _follower(start, end, caught) for b, (start, end, caught, _, _)
                 in drawn.items()}
    isr = (1, *(b for b, (*_, in_sync, _) in drawn.items() if in_sync))
    racks: dict[int, str | None] = {1: leader_rack}
    racks.update({b: rack for b, (*_, rack) in drawn.items() if rack is not None})
    chosen = _preferred(client_rack, followers, isr=isr, fetch_offset=fetch_offset,
                        racks=racks)
    eligible = {b: (s.log_end_offset, s.last_caught_up_time_ms, b)
                for b, s in followers.items()
                if b in isr and racks.get(b) == client_rack
                and s.log_start_offset <= fetch_offset <= s.log_end_offset}
    if not client_rack or client_rack == leader_rack or not eligible:
        assert chosen == -1
        return
    assert chosen in eligible
    assert eligible[chosen] == max(eligible.values())
