"""The controller stand-in of the replication simulation: one partition's registration,
the brokers' registrations (broker epochs) and fencing, leader elections from the ISR, and
AlterPartition judged by :func:`pykraft.replica.isr_change.isr_change_error`, the rule the
real controller applies. Every change is published (``on_change``) with a growing metadata
offset, as a record of the metadata log would be.

As Kafka's ``PartitionChangeBuilder`` without unclean election or eligible leader replicas:
a fenced broker leaves the ISR unless it is its last member; a fenced leader is replaced by
the first replica (in assignment order) in the ISR and unfenced, or by none; a leaderless
partition takes the first ISR member that registers again. Any change of leader bumps the
leader epoch, any change at all the partition epoch.

Fast failover's evidence (every listener of a broker refused a connection) fences the
incarnation it is about only while it is the registered one, by the real controller's rule
(:func:`pykraft.controller.broker_liveness.evidence_is_current`); ``refusal_fences`` keeps
which incarnations it fenced (the registered one, whatever the evidence named), for the
invariant that none was alive.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pykraft.controller.broker_liveness import evidence_is_current
from pykraft.protocol.errors import ErrorCode
from pykraft.replica.isr_change import isr_change_error
from pykraft.replica.leader import AlterResult, Brokers, IsrProposal, PartitionAssignment

FIRST_BROKER_EPOCH = 100
NO_LEADER = -1


class SimController:
    def __init__(self, replicas: tuple[int, ...], on_change: Callable[[], None]) -> None:
        self.assignment = PartitionAssignment(leader_epoch=0, partition_epoch=0,
                                              replicas=replicas, isr=replicas)
        self.leader = replicas[0]
        self.broker_epochs: dict[int, int] = {}
        self.metadata_offset = 0
        self.leader_changes = 1
        self._next_epoch = FIRST_BROKER_EPOCH
        self._on_change = on_change
        self.refusal_fences: list[tuple[int, int]] = []
        """(broker, broker epoch) fenced on the evidence of refused connections."""
        self.stale_refusals = 0
        """Evidence that came after its broker re-registered (or was fenced): ignored."""

    @property
    def brokers(self) -> Brokers:
        return Brokers(dict(self.broker_epochs))

    def register(self, broker_id: int) -> int:
        """A broker (re)starts: its old registration is fenced first, then it is unfenced
        with a new broker epoch, which it returns."""
        self.fence(broker_id)
        self._next_epoch += 1
        self.broker_epochs[broker_id] = self._next_epoch
        if self.leader == NO_LEADER and broker_id in self.assignment.isr:
            self._change(broker_id, self.assignment.isr)
        else:
            self._publish()
        return self._next_epoch

    def broker_unreachable(self, broker_id: int, broker_epoch: int) -> bool:
        """Every listener of incarnation ``broker_epoch`` refused: fence it if it is still
        the registered one; True if fenced."""
        registered = self.broker_epochs.get(broker_id)
        if registered is None or not evidence_is_current(registered, broker_epoch):
            self.stale_refusals += 1
            return False
        self.refusal_fences.append((broker_id, registered))
        self.fence(broker_id)
        return True

    def fence(self, broker_id: int) -> None:
        if self.broker_epochs.pop(broker_id, None) is None:
            return
        isr = tuple(b for b in self.assignment.isr if b != broker_id) or self.assignment.isr
        leader = self.leader
        if leader == broker_id:
            leader = next((b for b in self.assignment.replicas if b in isr
                           and b in self.broker_epochs), NO_LEADER)
        if (leader, isr) != (self.leader, self.assignment.isr):
            self._change(leader, isr)
        else:
            self._publish()

    def elect(self, broker_id: int) -> bool:
        """Move leadership to an unfenced ISR member (a preferred or admin election)."""
        if (broker_id == self.leader or broker_id not in self.assignment.isr
                or broker_id not in self.broker_epochs):
            return False
        self._change(broker_id, self.assignment.isr)
        return True

    def alter_partition(self, sender: int, proposal: IsrProposal) -> AlterResult | ErrorCode:
        code = isr_change_error(self.assignment, leader_id=self.leader, sender=sender,
                                proposal=proposal, eligible=self._eligible)
        if code != ErrorCode.NONE:
            return code
        if proposal.isr != self.assignment.isr:
            self._change(self.leader, proposal.isr)
        current = self.assignment
        return AlterResult(current.leader_epoch, current.partition_epoch, current.isr)

    def _eligible(self, broker_id: int, broker_epoch: int) -> bool:
        registered = self.broker_epochs.get(broker_id)
        return registered is not None and broker_epoch in (-1, registered)

    def _change(self, leader: int, isr: tuple[int, ...]) -> None:
        current = self.assignment
        new_leader = leader != self.leader
        self.assignment = replace(
            current, isr=isr, partition_epoch=current.partition_epoch + 1,
            leader_epoch=current.leader_epoch + (1 if new_leader else 0))
        self.leader = leader
        if new_leader and leader != NO_LEADER:
            self.leader_changes += 1
        self._publish()

    def _publish(self) -> None:
        self.metadata_offset += 1
        self._on_change()
