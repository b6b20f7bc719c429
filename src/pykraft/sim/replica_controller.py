"""The controller stand-in of the replication simulation: one partition's registration,
the brokers' registrations (broker epochs) and fencing, leader elections from the ISR, and
AlterPartition judged by :func:`pykraft.replica.isr_change.isr_change_error`, the rule the
real controller applies. Every change is published (``on_change``) with a growing metadata
offset, as a record of the metadata log would be.

Elections and ISR changes are the real controller's
(:func:`pykraft.controller.partition_change.partition_change`, Kafka's
PartitionChangeBuilder), without unclean election: a fenced broker leaves the ISR (unless
it is its last member and eligible leader replicas are off); a fenced leader is replaced by
the first usable replica (in assignment order) of the ISR, or by none; a leaderless
partition takes the first usable one once one registers again. With eligible leader
replicas on (``elr``), the ISR may empty and the members that left it below the min ISR
lead it back, unless they come back from an unclean shutdown (a crash: the registration
names no previous epoch). Any change of leader bumps the leader epoch, any change at all
the partition epoch.

Fast failover's evidence (every listener of a broker refused a connection) fences the
incarnation it is about only while it is the registered one, by the real controller's rule
(:func:`pykraft.controller.broker_liveness.evidence_is_current`); ``refusal_fences`` keeps
which incarnations it fenced (the registered one, whatever the evidence named), for the
invariant that none was alive.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from pykraft.controller.broker_liveness import evidence_is_current
from pykraft.controller.partition_change import Election, partition_change
from pykraft.image.topics import NO_LEADER, PartitionRegistration, TopicImage
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import PartitionChangeRecord
from pykraft.replica.isr_change import isr_change_error
from pykraft.replica.leader import AlterResult, Brokers, IsrProposal, PartitionAssignment

FIRST_BROKER_EPOCH = 100
_TOPIC_ID = uuid.UUID(int=1)


class SimController:
    def __init__(self, replicas: tuple[int, ...], on_change: Callable[[], None], *,
                 elr: bool = False, min_insync_replicas: int = 1) -> None:
        self.partition = PartitionRegistration(replicas=replicas, isr=replicas,
                                               leader=replicas[0], leader_epoch=0,
                                               partition_epoch=0)
        self.broker_epochs: dict[int, int] = {}
        self.metadata_offset = 0
        self.leader_changes = 1
        self._next_epoch = FIRST_BROKER_EPOCH
        self._on_change = on_change
        self._elr = elr
        self._min_isr = min_insync_replicas
        self.refusal_fences: list[tuple[int, int]] = []
        """(broker, broker epoch) fenced on the evidence of refused connections."""
        self.stale_refusals = 0
        """Evidence that came after its broker re-registered (or was fenced): ignored."""
        self.elr_elections: list[int] = []
        """Brokers elected from the eligible leader replicas (the ISR was empty), in order."""

    @property
    def assignment(self) -> PartitionAssignment:
        p = self.partition
        return PartitionAssignment(p.leader_epoch, p.partition_epoch, p.replicas, p.isr,
                                   p.leader_recovery_state)

    @property
    def leader(self) -> int:
        return self.partition.leader

    @property
    def elr(self) -> tuple[int, ...]:
        return self.partition.eligible_leader_replicas or ()

    @property
    def brokers(self) -> Brokers:
        return Brokers(dict(self.broker_epochs))

    def register(self, broker_id: int, *, clean: bool = False) -> int:
        """A broker (re)starts: its old registration is fenced first (an unclean shutdown,
        with eligible leader replicas on, also takes it out of the ELR), then it is
        unfenced with a new broker epoch, which it returns."""
        self.fence(broker_id)
        if self._elr and not clean:
            self._build(tuple(r for r in self.partition.isr if r != broker_id),
                        lambda b: b in self.broker_epochs and b != broker_id,
                        unclean_shutdown=(broker_id,))
        self._next_epoch += 1
        self.broker_epochs[broker_id] = self._next_epoch
        if not self._build(self.partition.isr, lambda b: b in self.broker_epochs):
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
        if not self._build(tuple(r for r in self.partition.isr if r != broker_id),
                           lambda b: b in self.broker_epochs):
            self._publish()

    def elect(self, broker_id: int) -> bool:
        """Move leadership to an unfenced ISR member (a preferred or admin election)."""
        if (broker_id == self.leader or broker_id not in self.partition.isr
                or broker_id not in self.broker_epochs):
            return False
        self._apply(PartitionChangeRecord(partition_id=0, topic_id=_TOPIC_ID,
                                          leader=broker_id))
        return True

    def alter_partition(self, sender: int, proposal: IsrProposal) -> AlterResult | ErrorCode:
        code = isr_change_error(self.assignment, leader_id=self.leader, sender=sender,
                                proposal=proposal, eligible=self._eligible)
        if code != ErrorCode.NONE:
            return code
        if proposal.isr != self.partition.isr:
            self._build(proposal.isr, lambda b: b in self.broker_epochs)
        current = self.assignment
        return AlterResult(current.leader_epoch, current.partition_epoch, current.isr)

    def _eligible(self, broker_id: int, broker_epoch: int) -> bool:
        registered = self.broker_epochs.get(broker_id)
        return registered is not None and broker_epoch in (-1, registered)

    def _build(self, isr: tuple[int, ...], usable: Callable[[int], bool], *,
               unclean_shutdown: tuple[int, ...] = ()) -> bool:
        """The real controller's change to ``isr``; False if nothing changes."""
        topic = TopicImage(name="sim", topic_id=_TOPIC_ID, partitions={0: self.partition})
        election = Election(usable, elr=self._elr, min_isr=lambda _topic: self._min_isr)
        change = partition_change(topic, 0, self.partition, isr=isr, election=election,
                                  unclean_shutdown=unclean_shutdown)
        if change is None:
            return False
        if change.leader in self.elr and not self.partition.isr:
            self.elr_elections.append(change.leader)
        self._apply(change)
        return True

    def _apply(self, change: PartitionChangeRecord) -> None:
        before = self.partition.leader
        self.partition = self.partition.merge(change)
        if self.partition.leader not in (before, NO_LEADER):
            self.leader_changes += 1
        self._publish()

    def _publish(self) -> None:
        self.metadata_offset += 1
        self._on_change()
