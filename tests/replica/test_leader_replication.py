"""The leader's ISR protocol (pykraft.replica.leader) against Kafka's Partition and
Replica rules, with property tests over random fetch / append / ISR-change sequences."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.protocol.errors import ErrorCode
from pykraft.replica.leader import (
    RECOVERED,
    RECOVERING,
    AlterResult,
    Brokers,
    Committed,
    FollowerState,
    IsrProposal,
    LeaderReplication,
    PartitionAssignment,
    PendingExpand,
    PendingShrink,
)

ME, F1, F2 = 1, 2, 3
LAG = 30_000
ALL = Brokers({ME: 10, F1: 20, F2: 30})


def leader(isr: tuple[int, ...] = (ME, F1, F2), *, leo: int = 0, now: int = 0,
           replicas: tuple[int, ...] = (ME, F1, F2)) -> LeaderReplication:
    return LeaderReplication(ME, PartitionAssignment(5, 7, replicas, isr),
                             epoch_start_offset=leo, now_ms=now, max_lag_ms=LAG)


def fetch(rep: LeaderReplication, replica: int, offset: int, *, now: int, leo: int,
          epoch: int | None = None) -> ErrorCode:
    return rep.record_fetch(replica, fetch_offset=offset, log_start_offset=0,
                            broker_epoch=ALL.alive_epochs[replica] if epoch is None else epoch,
                            now_ms=now, leader_end_offset=leo, brokers=ALL)


def hw(rep: LeaderReplication, current: int, *, leo: int, now: int = 0, min_isr: int = 1,
       brokers: Brokers = ALL) -> int:
    return rep.high_watermark(current, leader_end_offset=leo, now_ms=now,
                              min_insync_replicas=min_isr, brokers=brokers)


# ---------------------------------------------------------------------- follower state

def test_a_fetch_at_the_leaders_log_end_is_caught_up_now() -> None:
    state = FollowerState().fetched(fetch_offset=10, log_start_offset=0, now_ms=100,
                                    leader_end_offset=10, broker_epoch=1)
    assert (state.log_end_offset, state.last_caught_up_time_ms) == (10, 100)
    assert state.last_fetch_leader_log_end_offset == 10


def test_reaching_the_log_end_of_the_previous_fetch_is_caught_up_as_of_that_fetch() -> None:
    first = FollowerState().fetched(fetch_offset=5, log_start_offset=0, now_ms=100,
                                    leader_end_offset=10, broker_epoch=1)
    assert first.last_caught_up_time_ms == 0
    second = first.fetched(fetch_offset=10, log_start_offset=0, now_ms=200,
                           leader_end_offset=15, broker_epoch=1)
    assert second.last_caught_up_time_ms == 100  # the previous fetch's time, not now
    behind = second.fetched(fetch_offset=12, log_start_offset=0, now_ms=300,
                            leader_end_offset=20, broker_epoch=1)
    assert behind.last_caught_up_time_ms == 100


def test_caught_up_at_the_log_end_or_within_the_lag() -> None:
    state = FollowerState(log_end_offset=8, last_caught_up_time_ms=1_000)
    assert state.is_caught_up(8, 1_000_000, LAG)
    assert state.is_caught_up(9, 1_000 + LAG, LAG)
    assert not state.is_caught_up(9, 1_001 + LAG, LAG)


def test_a_new_leader_starts_isr_members_caught_up_and_forgets_positions() -> None:
    rep = leader((ME, F1), now=500)
    assert rep.followers[F1] == FollowerState(last_fetch_leader_log_end_offset=-1,
                                              last_caught_up_time_ms=500)
    assert rep.followers[F2].last_caught_up_time_ms == 0


# ---------------------------------------------------------------------- fetch checks

def test_a_fetch_from_a_broker_not_among_the_replicas_is_refused() -> None:
    rep = leader(replicas=(ME, F1), isr=(ME, F1))
    assert rep.check_follower(F1, 5) == ErrorCode.NONE
    assert rep.check_follower(9, 5) == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert rep.check_follower(9, -1) == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_fetch_from_an_older_broker_incarnation_is_not_leader_or_follower() -> None:
    rep = leader()
    assert fetch(rep, F1, 3, now=1, leo=3, epoch=19) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert rep.followers[F1].log_end_offset == -1
    assert fetch(rep, F1, 3, now=1, leo=3, epoch=-1) == ErrorCode.NONE  # before v15


# ---------------------------------------------------------------------- high watermark

def test_high_watermark_is_the_smallest_isr_log_end_and_never_moves_back() -> None:
    rep = leader()
    assert hw(rep, 0, leo=10) == 0  # followers' positions unknown
    fetch(rep, F1, 10, now=1, leo=10)
    fetch(rep, F2, 6, now=1, leo=10)
    assert hw(rep, 0, leo=10) == 6
    assert hw(rep, 8, leo=10) == 8


def test_high_watermark_is_frozen_under_min_isr_capped_by_the_replication_factor() -> None:
    rep = leader((ME,), replicas=(ME, F1, F2))
    assert hw(rep, 3, leo=10, min_isr=2) == 3
    alone = leader((ME,), replicas=(ME,))
    assert hw(alone, 3, leo=10, min_isr=2) == 10


def test_high_watermark_waits_for_a_caught_up_eligible_follower_about_to_join() -> None:
    rep = leader((ME, F1), leo=10, now=0)
    fetch(rep, F1, 10, now=1, leo=10)
    fetch(rep, F2, 10, now=1, leo=10)
    assert hw(rep, 10, leo=12, now=2) == 10  # F2 caught up at 1 and eligible: waits
    assert hw(rep, 10, leo=12, now=2, brokers=Brokers({ME: 10, F1: 20})) == 10  # F1 in ISR
    fetch(rep, F1, 12, now=3, leo=12)
    assert hw(rep, 10, leo=12, now=3, brokers=Brokers({ME: 10, F1: 20})) == 12  # F2 fenced
    assert hw(rep, 10, leo=12, now=2 + LAG) == 12  # F2 no longer caught up


# ---------------------------------------------------------------------- expansion

def test_a_follower_reaching_the_high_watermark_and_epoch_start_joins_the_isr() -> None:
    rep = leader((ME, F1), leo=10)
    fetch(rep, F2, 9, now=1, leo=12)
    assert rep.propose_expand(F2, high_watermark=9, brokers=ALL, local_epoch=10) is None
    fetch(rep, F2, 10, now=2, leo=12)
    assert rep.propose_expand(F2, high_watermark=11, brokers=ALL, local_epoch=10) is None
    proposal = rep.propose_expand(F2, high_watermark=10, brokers=ALL, local_epoch=10)
    assert proposal == IsrProposal(5, 7, ((ME, 10), (F1, -1), (F2, 30)))
    assert isinstance(rep.state, PendingExpand)
    assert rep.isr == (ME, F1) and rep.maximal_isr == {ME, F1, F2}
    assert rep.propose_expand(F2, high_watermark=10, brokers=ALL, local_epoch=10) is None


def test_a_pending_expansion_holds_the_high_watermark_even_when_the_member_lags() -> None:
    rep = leader((ME, F1), leo=10)
    fetch(rep, F1, 10, now=1, leo=10)
    fetch(rep, F2, 10, now=1, leo=10)
    assert rep.propose_expand(F2, high_watermark=10, brokers=ALL, local_epoch=10)
    fetch(rep, F1, 15, now=2 * LAG, leo=15)
    assert hw(rep, 10, leo=15, now=2 * LAG) == 10  # F2 is no longer caught up, yet counts


def test_a_leader_elected_uncleanly_proposes_its_isr_as_recovered() -> None:
    rep = LeaderReplication(ME, PartitionAssignment(5, 7, (ME, F1, F2), (ME,), RECOVERING),
                            epoch_start_offset=0, now_ms=0, max_lag_ms=LAG)
    fetch(rep, F1, 0, now=1, leo=0)
    proposal = rep.propose_expand(F1, high_watermark=0, brokers=ALL, local_epoch=10)
    assert proposal is not None and proposal.leader_recovery_state == RECOVERED  # KIP-704


def test_ineligible_followers_do_not_join() -> None:
    for brokers in (Brokers({ME: 10, F1: 20}), Brokers({ME: 10, F1: 20, F2: 31}),
                    Brokers(ALL.alive_epochs, frozenset({F2}))):
        rep = leader((ME, F1))
        fetch(rep, F2, 0, now=1, leo=0)
        assert rep.propose_expand(F2, high_watermark=0, brokers=brokers, local_epoch=10) is None


# ---------------------------------------------------------------------- shrink

def test_followers_lagging_past_the_max_lag_leave_the_isr_but_never_the_leader() -> None:
    rep = leader(leo=10, now=0)
    fetch(rep, F1, 10, now=100, leo=10)
    assert rep.propose_shrink(now_ms=LAG, leader_end_offset=10, local_epoch=10) is None
    proposal = rep.propose_shrink(now_ms=LAG + 1, leader_end_offset=10, local_epoch=10)
    assert proposal is not None and proposal.isr == (ME, F1)
    assert isinstance(rep.state, PendingShrink) and rep.maximal_isr == {ME, F1, F2}
    assert rep.propose_shrink(now_ms=LAG * 9, leader_end_offset=10, local_epoch=10) is None


def test_a_pending_shrink_holds_the_high_watermark_until_committed() -> None:
    rep = leader(leo=10)
    fetch(rep, F1, 10, now=1, leo=10)
    fetch(rep, F2, 4, now=1, leo=10)
    proposal = rep.propose_shrink(now_ms=LAG + 5, leader_end_offset=10, local_epoch=10)
    assert proposal is not None
    assert hw(rep, 4, leo=10, now=LAG + 5) == 4
    assert rep.complete(proposal, AlterResult(5, 8, proposal.isr)) is False
    assert rep.state == Committed((ME, F1)) and rep.partition_epoch == 8
    assert hw(rep, 4, leo=10, now=LAG + 5) == 10


# ---------------------------------------------------------------------- AlterPartition answers

def pending_shrink() -> tuple[LeaderReplication, IsrProposal]:
    rep = leader()
    proposal = rep.propose_shrink(now_ms=LAG + 1, leader_end_offset=1, local_epoch=10)
    assert proposal is not None
    return rep, proposal


def test_ineligible_replica_returns_to_the_committed_state() -> None:
    for code in (ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED):
        rep, proposal = pending_shrink()
        assert rep.complete(proposal, code) is False
        assert rep.state == Committed((ME, F1, F2))


def test_fencing_and_version_errors_wait_for_metadata_and_others_retry() -> None:
    for code in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION,
                 ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.NEW_LEADER_ELECTED):
        rep, proposal = pending_shrink()
        assert rep.complete(proposal, code) is False
        assert rep.in_flight
    rep, proposal = pending_shrink()
    assert rep.complete(proposal, ErrorCode.NOT_CONTROLLER) is True
    assert rep.in_flight


def test_stale_answers_are_ignored() -> None:
    rep, proposal = pending_shrink()
    assert rep.complete(proposal, AlterResult(4, 9, (ME,))) is False  # other leader epoch
    assert rep.complete(proposal, AlterResult(5, 6, (ME,))) is False  # older partition epoch
    assert rep.in_flight
    rep.assign(PartitionAssignment(5, 8, (ME, F1, F2), (ME, F1)), leader_end_offset=1,
               now_ms=LAG + 2)
    assert rep.state == Committed((ME, F1))
    assert rep.complete(proposal, AlterResult(5, 8, (ME,))) is False
    assert rep.state == Committed((ME, F1))


def test_an_older_partition_epoch_from_the_image_is_ignored() -> None:
    rep, proposal = pending_shrink()
    rep.complete(proposal, AlterResult(5, 8, proposal.isr))
    assert not rep.assign(PartitionAssignment(5, 7, (ME, F1, F2), (ME, F1, F2)),
                          leader_end_offset=1, now_ms=0)
    assert rep.isr == proposal.isr


def test_the_registration_already_held_keeps_the_change_in_flight() -> None:
    """Found by the replication simulation (replica-churn seed 153): an expansion is sent
    on the partition epoch an AlterPartition answer gave; the image of that same epoch
    arrives afterwards. Replacing the pending expansion by it would let the high watermark
    pass the new member, which the controller may already hold in the ISR."""
    rep = leader((ME, F1), leo=10)
    fetch(rep, F1, 10, now=1, leo=10)
    assert rep.high_watermark(0, leader_end_offset=10, now_ms=1, min_insync_replicas=1,
                              brokers=ALL) == 10
    fetch(rep, F2, 10, now=2, leo=10)
    proposal = rep.propose_expand(F2, high_watermark=10, brokers=ALL, local_epoch=10)
    assert proposal is not None
    assert not rep.assign(PartitionAssignment(5, 7, (ME, F1, F2), (ME, F1)),
                          leader_end_offset=20, now_ms=3)
    assert isinstance(rep.state, PendingExpand)
    fetch(rep, F1, 20, now=4, leo=20)
    assert rep.high_watermark(10, leader_end_offset=20, now_ms=4, min_insync_replicas=1,
                              brokers=ALL) == 10  # F2 (at 10) still holds it


def test_a_new_leader_epoch_restarts_the_followers_clocks() -> None:
    rep = leader((ME, F1), leo=0, now=0)
    fetch(rep, F1, 4, now=10, leo=4)
    assert rep.assign(PartitionAssignment(6, 8, (ME, F1, F2), (ME, F1)), leader_end_offset=4,
                      now_ms=50)
    assert rep.epoch_start_offset == 4
    assert rep.followers[F1].log_end_offset == 4  # kept: still the same leader
    assert rep.followers[F1].last_caught_up_time_ms == 50


# ---------------------------------------------------------------------- properties

_step = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 5)),
    st.tuples(st.just("fetch"), st.sampled_from((F1, F2)), st.integers(0, 100)),
    st.tuples(st.just("tick"), st.integers(1, LAG)),
    st.tuples(st.just("shrink")),
    st.tuples(st.just("expand"), st.sampled_from((F1, F2))),
    st.tuples(st.just("answer"), st.sampled_from(("ok", "ineligible", "fenced", "retry"))),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_step, max_size=60), st.integers(1, 3),
       st.sampled_from(((ME,), (ME, F1), (ME, F1, F2))))
def test_isr_and_high_watermark_invariants(steps: list[tuple[object, ...]], min_isr: int,
                                           isr: tuple[int, ...]) -> None:
    now, leo, high = 0, 0, 0
    rep = leader(isr, leo=0, now=0)
    for step in steps:
        sent = rep.state.proposal if not isinstance(rep.state, Committed) else None
        match step:
            case ("append", count):
                assert isinstance(count, int)
                leo += count
            case ("fetch", replica, offset):
                assert isinstance(replica, int) and isinstance(offset, int)
                known = rep.followers[replica].log_end_offset
                fetch(rep, replica, max(known, min(offset, leo)), now=now, leo=leo)
            case ("tick", elapsed):
                assert isinstance(elapsed, int)
                now += elapsed
            case ("shrink",):
                proposal = rep.propose_shrink(now_ms=now, leader_end_offset=leo, local_epoch=10)
                assert proposal is None or (sent is None and ME in proposal.isr)
            case ("expand", replica):
                assert isinstance(replica, int)
                proposal = rep.propose_expand(replica, high_watermark=high, brokers=ALL,
                                              local_epoch=10)
                assert proposal is None or (sent is None and ME in proposal.isr)
            case ("answer", kind) if sent is not None:
                answers: dict[str, AlterResult | ErrorCode] = {
                    "ok": AlterResult(rep.leader_epoch, rep.partition_epoch + 1, sent.isr),
                    "ineligible": ErrorCode.INELIGIBLE_REPLICA,
                    "fenced": ErrorCode.FENCED_LEADER_EPOCH,
                    "retry": ErrorCode.NOT_CONTROLLER}
                result = answers[str(kind)]
                rep.complete(sent, result)
        assert ME in rep.isr
        new = hw(rep, high, leo=leo, now=now, min_isr=min_isr)
        assert new >= high
        if new > high:
            assert new <= leo
            assert not rep.under_min_isr(min_isr)
            for member in rep.maximal_isr - {ME}:
                assert new <= rep.followers[member].log_end_offset
        high = new
