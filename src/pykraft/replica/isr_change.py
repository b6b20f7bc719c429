"""The controller's side of an ISR change: whether it accepts a leader's AlterPartition
entry (Kafka's ``ReplicationControlManager.alterPartition`` checks, without eligible leader
replicas). The controller answers every refusal without a record; an accepted change that
alters the ISR or the recovery state bumps the partition epoch.

Interface::

    code = isr_change_error(current, leader_id=..., sender=..., proposal=...,
                            eligible=lambda broker, broker_epoch: ...)
"""

from __future__ import annotations

from collections.abc import Callable

from pykraft.protocol.errors import ErrorCode
from pykraft.replica.leader import RECOVERED, RECOVERING, IsrProposal, PartitionAssignment

#: Whether a broker may be in an ISR, given the broker epoch the leader sent for it (-1: none).
Eligible = Callable[[int, int], bool]


def isr_change_error(current: PartitionAssignment, *, leader_id: int, sender: int,
                     proposal: IsrProposal, eligible: Eligible) -> ErrorCode:
    """NONE if ``sender``'s ``proposal`` may replace ``current`` (led by ``leader_id``).

    Epochs ahead of ours mean this controller is behind (NOT_CONTROLLER); an older leader
    epoch is FENCED_LEADER_EPOCH and an older partition epoch INVALID_UPDATE_VERSION; a
    sender that is not the leader, an ISR without the leader, with duplicates or
    non-replicas, or an impossible recovery state is INVALID_REQUEST; a member that is
    fenced, unregistered or of another broker epoch is INELIGIBLE_REPLICA.
    """
    if (proposal.leader_epoch > current.leader_epoch
            or proposal.partition_epoch > current.partition_epoch):
        return ErrorCode.NOT_CONTROLLER
    if proposal.leader_epoch < current.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if leader_id != sender:
        return ErrorCode.INVALID_REQUEST
    if proposal.partition_epoch < current.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION
    new_isr, recovery = proposal.isr, proposal.leader_recovery_state
    if (sender not in new_isr or len(set(new_isr)) != len(new_isr)
            or any(b not in current.replicas for b in new_isr)
            or (recovery == RECOVERING and len(new_isr) > 1)
            or (current.leader_recovery_state == RECOVERED and recovery == RECOVERING)):
        return ErrorCode.INVALID_REQUEST
    if not all(eligible(broker, epoch) for broker, epoch in proposal.isr_with_epochs):
        return ErrorCode.INELIGIBLE_REPLICA
    return ErrorCode.NONE
