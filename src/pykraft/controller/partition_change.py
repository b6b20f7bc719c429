"""PartitionChangeRecords for leader election and ISR changes (Kafka's
PartitionChangeBuilder, with reassignment and eligible leader replicas).

Rules of the ordinary election: the leader stays if it may still lead; otherwise the first
replica (in replica order) that may leads. A replica may lead if it is usable and in the
ISR or, when the ISR is empty, in the eligible leader replicas (ELR). With none, and ELR on,
the last known leader leads if it is the only member of the last known ELR and usable
(Kafka's "balanced recovery", always on in 4.4: it is unclean). A replica whose log
directory is offline in its broker's registration is never usable (``Election.dir_online``,
Kafka's ``LeaderAcceptor``). Otherwise a topic that
allows unclean elections (``unclean.leader.election.enable``) takes the first usable
replica outside the ISR. An unclean election makes that leader the ISR alone, its leader
recovery state RECOVERING (KIP-704; from metadata.version 3.2-IV0), which its first
AlterPartition turns RECOVERED, and empties the ELR. Otherwise the partition has no leader
(-1). With ELR off, a change that would empty the ISR keeps it as it was instead, so the
partition can recover when its last member comes back.

Eligible leader replicas (KIP-966, ``eligible.leader.replicas.version`` 1): while the ISR
is below the topic's effective min ISR, the replicas that left it since it was at least
that (the old ELR and the old ISR, less the new ISR and any broker that came back from an
unclean shutdown) stay eligible: each held every committed record, since the high
watermark does not move while the ISR is below the min ISR. A replica elected from the ELR
becomes the ISR alone and leaves the ELR. An ISR at or above the min ISR empties the ELR.
The last known ELR only keeps the last known leader: set when the partition loses its
leader, emptied when it has one again.

A preferred election (ElectLeaders, the automatic rebalance) asks first for the preferred
replica (the first one) if it may lead, then keeps a leader that may, then takes the next
replica that may; then the last known leader; never another unclean one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pykraft.image.image import MetadataImage
from pykraft.image.topics import NO_LEADER, NO_LEADER_CHANGE, PartitionRegistration, TopicImage
from pykraft.records.metadata import PartitionChangeRecord
from pykraft.replica.leader import RECOVERING, effective_min_isr

Usable = Callable[[int], bool]


def _never(_topic: str) -> bool:
    return False


def _one(_topic: str) -> int:
    return 1


def _anywhere(_partition: PartitionRegistration, _replica: int) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Election:
    """Who may lead, and which topics allow a leader from outside the ISR."""

    usable: Usable
    unclean: Callable[[str], bool] = _never
    """Topic name -> ``unclean.leader.election.enable`` in effect for it."""
    leader_recovery: bool = True
    """The metadata.version records KIP-704's leader recovery state."""
    elr: bool = False
    """``eligible.leader.replicas.version`` is finalized at 1 or more (KIP-966)."""
    min_isr: Callable[[str], int] = _one
    """Topic name -> ``min.insync.replicas`` in effect for it."""
    dir_online: Callable[[PartitionRegistration, int], bool] = _anywhere
    """Whether the replica's log directory is online in its broker's registration: a
    replica in an offline directory may not lead (Kafka's ``LeaderAcceptor``)."""

    def acceptor(self, partition: PartitionRegistration) -> Usable:
        """Who may lead ``partition`` (Kafka's ``LeaderAcceptor``): usable, its replica's
        directory online."""
        return lambda replica: self.usable(replica) and self.dir_online(partition, replica)


@dataclass(frozen=True, slots=True)
class Assignment:
    """A partition's replicas as a change targets them (Kafka's targetReplicas,
    targetRemoving, targetAdding): while a reassignment is under way, ``replicas`` lists
    the target replicas then those being removed."""

    replicas: tuple[int, ...]
    removing: tuple[int, ...] = ()
    adding: tuple[int, ...] = ()

    @classmethod
    def of(cls, partition: PartitionRegistration) -> Assignment:
        return cls(partition.replicas, partition.removing_replicas, partition.adding_replicas)

    @property
    def reassigning(self) -> bool:
        return bool(self.removing or self.adding)

    def completed(self, isr: tuple[int, ...]) -> tuple[Assignment, tuple[int, ...]] | None:
        """The assignment and ISR once the reassignment completes, if ``isr`` lets it:
        every target replica in sync (Kafka's ``maybeCompleteReassignment``)."""
        if not self.reassigning:
            return None
        replicas = self.replicas
        if self.removing:
            isr = tuple(r for r in isr if r not in self.removing)
            replicas = tuple(r for r in self.replicas if r not in self.removing)
            if not isr or not replicas:
                return None
        if not set(replicas) <= set(isr):
            return None
        return Assignment(replicas), isr


@dataclass(frozen=True, slots=True)
class _Candidates:
    """Who may lead after the change: the target ISR, else (empty ISR) the target ELR."""

    isr: tuple[int, ...]
    elr: tuple[int, ...]
    usable: Usable

    def valid(self, replica: int) -> bool:
        """Kafka's ``isValidNewLeader``."""
        return (replica in self.isr or (not self.isr and replica in self.elr)) \
            and self.usable(replica)


def _last_known_leader(partition: PartitionRegistration, candidates: _Candidates,
                       election: Election) -> int | None:
    """Kafka's ``canElectLastKnownLeader``: with ELR on and both the ISR and the ELR empty,
    the single member of the last known ELR (the last leader), if it is usable."""
    known = partition.last_known_elr or ()
    if (not election.elr or candidates.isr or candidates.elr or len(known) != 1
            or not candidates.usable(known[0])):
        return None
    return known[0]


def _elect(partition: PartitionRegistration, candidates: _Candidates, election: Election,
           order: tuple[int, ...], *, preferred: bool, unclean: bool) -> tuple[int, bool]:
    """The leader among ``order`` (the target replicas) and whether the election was
    unclean (Kafka's ``electPreferredLeader`` and ``electAnyLeader``)."""
    if preferred and order and candidates.valid(order[0]):
        return order[0], False
    if candidates.valid(partition.leader):
        return partition.leader, False
    clean = next((r for r in order[1 if preferred else 0:] if candidates.valid(r)), None)
    if clean is not None:
        return clean, False
    last_known = _last_known_leader(partition, candidates, election)
    if last_known is not None:
        return last_known, True
    if unclean and not preferred:
        outside = next((r for r in order if candidates.usable(r)), None)
        if outside is not None:
            return outside, True
    return NO_LEADER, False


def _target_elr(partition: PartitionRegistration, isr: tuple[int, ...], min_isr: int,
                unclean_shutdown: tuple[int, ...]) -> tuple[int, ...]:
    """Kafka's ``maybePopulateTargetElr``: below the min ISR, the old ELR and ISR members
    not in the new ISR nor back from an unclean shutdown (in a stable order: Kafka's is its
    hash set's, ascending for broker ids); none at or above it."""
    if len(isr) >= min_isr:
        return ()
    old = set(partition.eligible_leader_replicas or ()) | set(partition.isr)
    return tuple(sorted(r for r in old if r not in isr and r not in unclean_shutdown))


def topic_min_isr(topic: TopicImage, configured: int) -> int:
    """Kafka's ``getTopicEffectiveMinIsr``: the configured value, at most the replication
    factor (of partition 0)."""
    first = topic.partitions.get(0)
    return effective_min_isr(configured, len(first.replicas)) if first else configured


def preferred_change(topic: TopicImage, partition_id: int, partition: PartitionRegistration,
                     election: Election) -> PartitionChangeRecord | None:
    """The record of a preferred election, if anything changes."""
    return partition_change(topic, partition_id, partition, isr=partition.isr,
                            election=election, preferred=True)


def partition_change(
    topic: TopicImage, partition_id: int, partition: PartitionRegistration,
    *, isr: tuple[int, ...], election: Election, assignment: Assignment | None = None,
    recovery: int = -1, default_dir: Callable[[int], uuid.UUID] | None = None,
    preferred: bool = False, unclean_shutdown: tuple[int, ...] = (),
) -> PartitionChangeRecord | None:
    """The record moving ``partition`` to ``isr`` (and ``assignment``, the leader recovery
    state ``recovery`` if not -1) with the leader the rules pick, if any change (Kafka's
    PartitionChangeBuilder.build). A reassignment whose target replicas are all in the ISR
    completes in the same record; a change dropping replicas bumps the leader epoch.
    ``default_dir`` (from metadata.version 3.7-IV2) gives a new replica's directory;
    ``unclean_shutdown`` names brokers back from an unclean shutdown: never eligible."""
    target = Assignment.of(partition) if assignment is None else assignment
    completed = target.completed(isr)
    if completed is not None:
        target, isr = completed
    old_elr = partition.eligible_leader_replicas or ()
    elr = old_elr
    if election.elr:
        elr = _target_elr(partition, isr, topic_min_isr(topic, election.min_isr(topic.name)),
                          unclean_shutdown)
    leader, unclean = _elect(partition, _Candidates(isr, elr, election.acceptor(partition)),
                             election,
                             target.replicas, preferred=preferred,
                             unclean=election.unclean(topic.name))
    record_isr: tuple[int, ...] | None = None
    if leader != partition.leader:
        if leader in elr:  # elected from the ELR: it alone is in sync now
            isr, elr = (leader,), tuple(r for r in elr if r != leader)
        if unclean:  # data the old ISR held may be lost: only the new leader is in sync
            record_isr = (leader,)
            if partition.leader_recovery_state != RECOVERING and election.leader_recovery:
                recovery = RECOVERING
    if leader == partition.leader and not set(partition.replicas) <= set(target.replicas):
        leader_field = partition.leader  # a replica leaves: its epoch must not serve again
    else:
        leader_field = NO_LEADER_CHANGE if leader == partition.leader else leader
    if record_isr is not None or not election.elr:
        elr = ()  # Kafka's maybeUpdateRecordElr
    if record_isr is None and (isr or election.elr) and isr != partition.isr:
        record_isr = isr
    if recovery == partition.leader_recovery_state:
        recovery = -1
    current = Assignment.of(partition)
    record = PartitionChangeRecord(
        partition_id=partition_id, topic_id=topic.topic_id,
        isr=record_isr, leader=leader_field, leader_recovery_state=recovery,
        replicas=None if target.replicas == current.replicas else target.replicas,
        removing_replicas=None if target.removing == current.removing else target.removing,
        adding_replicas=None if target.adding == current.adding else target.adding,
        directories=_directories(partition, target.replicas, default_dir),
        eligible_leader_replicas=None if elr == old_elr else elr,
        last_known_elr=_last_known_elr(partition, leader_field, election),
    )
    return None if record == PartitionChangeRecord(
        partition_id=partition_id, topic_id=topic.topic_id) else record


def _last_known_elr(partition: PartitionRegistration, leader_field: int,
                    election: Election) -> tuple[int, ...] | None:
    """Kafka's ``maybeUpdateLastKnownLeader``: the leader the partition loses, the first
    time it becomes leaderless; emptied once it has a leader again."""
    known = partition.last_known_elr or ()
    if not election.elr:
        return None
    if leader_field == NO_LEADER and not known:
        return (partition.leader,)
    if leader_field >= 0 and known:
        return ()
    return None


def _directories(partition: PartitionRegistration, replicas: tuple[int, ...],
                 default_dir: Callable[[int], uuid.UUID] | None
                 ) -> tuple[uuid.UUID, ...] | None:
    """The directories of ``replicas`` when they differ from the partition's: a kept
    replica keeps its directory, a new one gets ``default_dir``'s."""
    if default_dir is None or replicas == partition.replicas:
        return None
    known = dict(zip(partition.replicas, partition.directories, strict=False))
    directories = tuple(known.get(r) or default_dir(r) for r in replicas)
    return None if directories == partition.directories else directories


def _partitions(image: MetadataImage) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
    for name in sorted(image.topics.by_name):
        topic = image.topics.by_name[name]
        for partition_id in sorted(topic.partitions):
            yield topic, partition_id, topic.partitions[partition_id]


def remove_from_isrs(image: MetadataImage, broker_id: int, election: Election, *,
                     from_elr: bool = False, unclean_shutdown: bool = False) -> list[object]:
    """Changes taking ``broker_id`` out of every ISR and leadership (fencing, controlled
    shutdown, unregistration; ``election.usable`` already excludes the broker). With
    ``from_elr`` the partitions whose ELR holds it change too (unregistration, an unclean
    shutdown: Kafka's ``generateLeaderAndIsrUpdates`` over both indexes); with
    ``unclean_shutdown`` it leaves their ELRs as well."""
    records: list[object] = []
    shut = (broker_id,) if unclean_shutdown else ()
    for topic, partition_id, partition in _partitions(image):
        if (broker_id not in partition.isr and partition.leader != broker_id
                and not (from_elr and broker_id in (partition.eligible_leader_replicas or ()))):
            continue
        isr = tuple(r for r in partition.isr if r != broker_id)
        change = partition_change(topic, partition_id, partition, isr=isr, election=election,
                                  unclean_shutdown=shut)
        if change is not None:
            records.append(change)
    return records


def _every_topic(_topic: str) -> bool:
    return True


def elect_leaderless(image: MetadataImage, election: Election,
                     topics: Callable[[str], bool] = _every_topic) -> list[object]:
    """Leaders for partitions that have none, in the ``topics`` chosen (unfencing, the
    periodic unclean election)."""
    records: list[object] = []
    for topic, partition_id, partition in _partitions(image):
        if partition.leader == NO_LEADER and topics(topic.name):
            change = partition_change(topic, partition_id, partition, isr=partition.isr,
                                      election=election)
            if change is not None:
                records.append(change)
    return records


def leads_any(image: MetadataImage, broker_id: int) -> bool:
    return any(p.leader == broker_id for _, _, p in _partitions(image))
