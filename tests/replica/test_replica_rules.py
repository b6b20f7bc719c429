"""The replica package's small rules: leader-epoch fencing, the leader's divergence check
of a follower's fetch, the follower's truncation offset and high watermark, acks=all."""

from __future__ import annotations

import pytest

from pykraft.protocol.errors import ErrorCode
from pykraft.replica.acks import acks_all_outcome
from pykraft.replica.epochs import Divergence, check_leader_epoch, fetch_divergence
from pykraft.replica.follower import follower_high_watermark, truncation_for
from pykraft.storage.leader_epoch import LeaderEpochCache


@pytest.mark.parametrize(("request_epoch", "code"), [
    (-1, ErrorCode.NONE), (5, ErrorCode.NONE), (4, ErrorCode.FENCED_LEADER_EPOCH),
    (6, ErrorCode.UNKNOWN_LEADER_EPOCH)])
def test_leader_epoch_check(request_epoch: int, code: ErrorCode) -> None:
    assert check_leader_epoch(request_epoch, 5) == code


def test_acks_all_outcomes() -> None:
    common = {"required_offset": 5, "min_isr": 2, "replication_factor": 3}
    assert acks_all_outcome(is_leader=True, high_watermark=4, isr_size=3, **common) is None
    assert acks_all_outcome(is_leader=True, high_watermark=5, isr_size=3,
                            **common) == ErrorCode.NONE
    assert acks_all_outcome(is_leader=True, high_watermark=5, isr_size=1,
                            **common) == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert acks_all_outcome(is_leader=False, high_watermark=4, isr_size=3,
                            **common) == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_an_epoch_the_follower_lacks_truncates_in_two_rounds() -> None:
    epochs = LeaderEpochCache([(0, 0), (2, 6)])
    # leader: epoch 1 ends at 8; we never had epoch 1: back to the end of our epoch 0 first
    first = truncation_for(epochs, 10, 1, 8, 10)
    assert (first.offset, first.completed) == (6, False)
    assert truncation_for(epochs, 10, 2, 12, 10).offset == 10
    assert truncation_for(epochs, 10, -1, 4, 10).offset == 4
    assert truncation_for(epochs, 10, 0, -1, 9).offset == 9


def test_the_leader_answers_a_diverging_fetch_with_where_its_epoch_ends() -> None:
    epochs = LeaderEpochCache([(0, 0), (2, 6)])  # our log: epoch 0 at 0-5, epoch 2 from 6
    def verdict(offset: int, last_epoch: int) -> Divergence | ErrorCode | None:
        return fetch_divergence(epochs, fetch_offset=offset, last_fetched_epoch=last_epoch,
                                log_start_offset=0, log_end_offset=10)
    assert verdict(8, 2) is None and verdict(8, -1) is None
    assert verdict(8, 1) == Divergence(0, 6)  # an epoch we never had: ours before it
    assert verdict(7, 0) == Divergence(0, 6)  # epoch 0 ended at 6 here
    assert verdict(5, 3) == ErrorCode.OFFSET_OUT_OF_RANGE  # an epoch from our future


def test_a_follower_takes_the_leaders_high_watermark_within_its_log() -> None:
    assert follower_high_watermark(9, log_start_offset=0, log_end_offset=5) == 5
    assert follower_high_watermark(3, log_start_offset=0, log_end_offset=5) == 3
    assert follower_high_watermark(3, log_start_offset=4, log_end_offset=5) == 4


def test_the_controller_refuses_isr_changes_by_kafkas_rules() -> None:
    from pykraft.replica.isr_change import isr_change_error
    from pykraft.replica.leader import IsrProposal, PartitionAssignment

    current = PartitionAssignment(leader_epoch=3, partition_epoch=7, replicas=(1, 2, 3),
                                  isr=(1, 2))

    def error(sender: int, leader_epoch: int, partition_epoch: int,
              isr: tuple[int, ...]) -> ErrorCode:
        proposal = IsrProposal(leader_epoch, partition_epoch, tuple((b, 5) for b in isr))
        return isr_change_error(current, leader_id=1, sender=sender, proposal=proposal,
                                eligible=lambda broker, epoch: broker != 3 or epoch == 5)
    assert error(1, 3, 7, (1, 2, 3)) == ErrorCode.NONE
    assert error(1, 2, 7, (1,)) == ErrorCode.FENCED_LEADER_EPOCH
    assert error(1, 3, 6, (1,)) == ErrorCode.INVALID_UPDATE_VERSION
    assert error(1, 4, 7, (1,)) == ErrorCode.NOT_CONTROLLER
    assert error(2, 3, 7, (1, 2)) == ErrorCode.INVALID_REQUEST  # not the leader
    assert error(1, 3, 7, (2, 3)) == ErrorCode.INVALID_REQUEST  # without the leader
    assert error(1, 3, 7, (1, 4)) == ErrorCode.INVALID_REQUEST  # not a replica
    proposal = IsrProposal(3, 7, ((1, 5), (3, 4)))
    assert isr_change_error(current, leader_id=1, sender=1, proposal=proposal,
                            eligible=lambda broker, epoch: broker != 3 or epoch == 5
                            ) == ErrorCode.INELIGIBLE_REPLICA
