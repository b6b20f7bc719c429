"""The leader's side of Kafka's ISR protocol for one partition (``Partition.scala`` and
``Replica.scala``), sans-I/O: time arrives as ``now_ms``, the metadata image's brokers as a
:class:`Brokers` value, and every ISR change comes back as an :class:`IsrProposal` for the
broker to send in AlterPartition.

Interface::

    rep = LeaderReplication(broker_id, PartitionAssignment(...), epoch_start_offset=leo,
                            now_ms=now, max_lag_ms=30_000)     # makeLeader (new leader)
    rep.assign(assignment, leader_end_offset=leo, now_ms=now)  # a newer image, still leader
    code = rep.check_follower(replica_id, current_leader_epoch)   # before reading
    code = rep.record_fetch(replica_id, fetch_offset=..., log_start_offset=...,
                            broker_epoch=..., now_ms=..., leader_end_offset=..., brokers=...)
    hw = rep.high_watermark(hw, leader_end_offset=..., now_ms=..., min_insync_replicas=...,
                            brokers=...)                      # never below ``hw``
    proposal = rep.propose_expand(replica_id, high_watermark=..., brokers=..., local_epoch=...)
    proposal = rep.propose_shrink(now_ms=..., leader_end_offset=..., local_epoch=...)
    retry = rep.complete(proposal, AlterResult(...) or ErrorCode)

At most one AlterPartition is in flight per partition (``PendingExpand`` / ``PendingShrink``);
while an expansion is pending the new member already counts for the high watermark (the
"maximal" ISR, KIP-497), while a shrink is pending the removed members still do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from pykraft.protocol.errors import ErrorCode

UNKNOWN_OFFSET = -1
NO_BROKER_EPOCH = -1  # a fetch (before v15) or an ISR entry without a broker epoch
RECOVERED = 0  # LeaderRecoveryState (KIP-704)
RECOVERING = 1

#: AlterPartition errors after which the leader drops its proposal and may propose again.
_RESET = frozenset({ErrorCode.OPERATION_NOT_ATTEMPTED, ErrorCode.INELIGIBLE_REPLICA})
#: Errors after which it stays pending until newer metadata arrives (no retry).
_AWAIT_METADATA = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION,
    ErrorCode.INVALID_REQUEST, ErrorCode.NEW_LEADER_ELECTED})


@dataclass(frozen=True, slots=True)
class FollowerState:
    """What the leader knows of one follower (Kafka's ``ReplicaState``)."""

    log_start_offset: int = UNKNOWN_OFFSET
    log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_leader_log_end_offset: int = 0
    last_fetch_time_ms: int = 0
    last_caught_up_time_ms: int = 0
    broker_epoch: int | None = None

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        """At the leader's log end, or there within the last ``max_lag_ms``."""
        return (leader_end_offset == self.log_end_offset
                or now_ms - self.last_caught_up_time_ms <= max_lag_ms)

    def fetched(self, *, fetch_offset: int, log_start_offset: int, now_ms: int,
                leader_end_offset: int, broker_epoch: int) -> FollowerState:
        """After a fetch at ``fetch_offset``: caught up now if it reached the leader's log
        end as of this read, or caught up at the previous fetch if it reached the log end
        the leader had then (``Replica.updateFetchStateOrThrow``)."""
        caught_up = self.last_caught_up_time_ms
        if fetch_offset >= leader_end_offset:
            caught_up = max(caught_up, now_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            caught_up = max(caught_up, self.last_fetch_time_ms)
        return FollowerState(
            log_start_offset=log_start_offset, log_end_offset=fetch_offset,
            last_fetch_leader_log_end_offset=max(leader_end_offset,
                                                 self.last_fetch_leader_log_end_offset),
            last_fetch_time_ms=now_ms, last_caught_up_time_ms=caught_up,
            broker_epoch=broker_epoch)

    def reset(self, *, now_ms: int, leader_end_offset: int, new_leader: bool,
              in_sync: bool) -> FollowerState:
        """A new leader epoch (``Replica.resetReplicaState``): ISR members count as caught
        up now; a new leader forgets every position it had."""
        caught_up = now_ms if in_sync else 0
        if new_leader:
            return FollowerState(last_fetch_leader_log_end_offset=UNKNOWN_OFFSET,
                                 last_caught_up_time_ms=caught_up)
        return replace(self, last_fetch_leader_log_end_offset=leader_end_offset,
                       last_fetch_time_ms=caught_up, last_caught_up_time_ms=caught_up)


@dataclass(frozen=True, slots=True)
class Brokers:
    """The image's view of the brokers: the epochs of the registered, unfenced ones, and
    those in controlled shutdown (Kafka's ``KRaftMetadataCache`` queries)."""

    alive_epochs: Mapping[int, int]
    shutting_down: frozenset[int] = frozenset()

    def isr_eligible(self, broker_id: int, fetch_epoch: int | None) -> bool:
        """``Partition.isReplicaIsrEligible``: unfenced, not shutting down, and fetching
        with the registered broker epoch (or without one)."""
        cached = self.alive_epochs.get(broker_id)
        return (cached is not None and broker_id not in self.shutting_down
                and fetch_epoch is not None and fetch_epoch in (NO_BROKER_EPOCH, cached))


@dataclass(frozen=True, slots=True)
class PartitionAssignment:
    """The registration fields the leader acts on (from the metadata image)."""

    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader_recovery_state: int = RECOVERED


@dataclass(frozen=True, slots=True)
class IsrProposal:
    """An AlterPartition partition entry (Kafka's ``LeaderAndIsr`` as sent): the new ISR
    with each member's broker epoch (-1 when the leader has none for it)."""

    leader_epoch: int
    partition_epoch: int
    isr_with_epochs: tuple[tuple[int, int], ...]
    leader_recovery_state: int = RECOVERED

    @property
    def isr(self) -> tuple[int, ...]:
        return tuple(broker for broker, _ in self.isr_with_epochs)


@dataclass(frozen=True, slots=True)
class AlterResult:
    """A successful AlterPartition partition answer."""

    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: int = RECOVERED


@dataclass(frozen=True, slots=True)
class Committed:
    """The ISR the controller committed; nothing in flight."""

    isr: tuple[int, ...]
    leader_recovery_state: int = RECOVERED

    @property
    def maximal_isr(self) -> frozenset[int]:
        return frozenset(self.isr)


@dataclass(frozen=True, slots=True)
class PendingExpand:
    """An expansion in flight: the new member already holds the high watermark."""

    replica_id: int
    proposal: IsrProposal
    committed: Committed

    @property
    def isr(self) -> tuple[int, ...]:
        return self.committed.isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        return frozenset(self.committed.isr) | {self.replica_id}


@dataclass(frozen=True, slots=True)
class PendingShrink:
    """A shrink in flight: the removed members count until it is committed."""

    out_of_sync: frozenset[int]
    proposal: IsrProposal
    committed: Committed

    @property
    def isr(self) -> tuple[int, ...]:
        return self.committed.isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        return frozenset(self.committed.isr)


IsrState = Committed | PendingExpand | PendingShrink


def effective_min_isr(min_insync_replicas: int, replication_factor: int) -> int:
    """Kafka's ``Partition.effectiveMinIsr``: min.insync.replicas capped by the RF."""
    return min(min_insync_replicas, replication_factor)


class LeaderReplication:
    """One led partition's ISR state and its followers' states (mutable, one owner).

    Created when this broker becomes the partition's leader (``makeLeader`` for a new
    leader): every follower's position is unknown and the ISR members count as caught
    up from ``now_ms``; the leader epoch starts at ``epoch_start_offset``.
    """

    def __init__(self, broker_id: int, assignment: PartitionAssignment, *,
                 epoch_start_offset: int, now_ms: int, max_lag_ms: int) -> None:
        self.broker_id = broker_id
        self.assignment = assignment
        self.epoch_start_offset = epoch_start_offset
        self.max_lag_ms = max_lag_ms
        self.state: IsrState = Committed(assignment.isr)  # makeLeader marks it RECOVERED
        self.followers: dict[int, FollowerState] = {}
        self._set_followers(assignment.replicas)
        self._reset_followers(now_ms, epoch_start_offset, new_leader=True)

    # ------------------------------------------------------------------ metadata

    @property
    def leader_epoch(self) -> int:
        return self.assignment.leader_epoch

    @property
    def partition_epoch(self) -> int:
        return self.assignment.partition_epoch

    @property
    def isr(self) -> tuple[int, ...]:
        return self.state.isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.state.maximal_isr

    @property
    def in_flight(self) -> bool:
        return not isinstance(self.state, Committed)

    def assign(self, assignment: PartitionAssignment, *, leader_end_offset: int,
               now_ms: int) -> bool:
        """A newer registration while still leader (``makeLeader`` again): ignored when
        its partition epoch is older than ours (an AlterPartition answer got here first);
        otherwise it replaces the ISR state, and a new leader epoch restarts the
        followers' catch-up clocks from ``leader_end_offset``. True if applied.

        The very registration we hold (both epochs equal: its answer got here first) leaves
        a change in flight pending. Kafka's ``makeLeader`` replaces it with the committed
        ISR, after which the high watermark may pass a member the controller has just
        added; the replication simulation found that race.
        """
        if assignment.partition_epoch < self.assignment.partition_epoch:
            return False
        if self.in_flight and (assignment.leader_epoch, assignment.partition_epoch) == (
                self.assignment.leader_epoch, self.assignment.partition_epoch):
            return False
        new_epoch = assignment.leader_epoch > self.assignment.leader_epoch
        self.assignment = assignment
        self.state = Committed(assignment.isr)
        self._set_followers(assignment.replicas)
        if new_epoch:
            self.epoch_start_offset = leader_end_offset
            self._reset_followers(now_ms, leader_end_offset, new_leader=False)
        return True

    def _set_followers(self, replicas: Iterable[int]) -> None:
        wanted = [r for r in replicas if r != self.broker_id]
        self.followers = {r: self.followers.get(r, FollowerState()) for r in wanted}

    def _reset_followers(self, now_ms: int, leader_end_offset: int, *, new_leader: bool) -> None:
        for replica, state in self.followers.items():
            self.followers[replica] = state.reset(
                now_ms=now_ms, leader_end_offset=leader_end_offset, new_leader=new_leader,
                in_sync=replica in self.assignment.isr)

    # ------------------------------------------------------------------ follower fetches

    def check_follower(self, replica_id: int, current_leader_epoch: int) -> ErrorCode:
        """A fetching replica must be one of the partition's (``followerReplicaOrThrow``):
        UNKNOWN_LEADER_EPOCH when the request names an epoch (it may be ahead of us),
        NOT_LEADER_OR_FOLLOWER when it names none."""
        if replica_id in self.followers:
            return ErrorCode.NONE
        if current_leader_epoch >= 0:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        return ErrorCode.NOT_LEADER_OR_FOLLOWER

    def record_fetch(self, replica_id: int, *, fetch_offset: int, log_start_offset: int,
                     broker_epoch: int, now_ms: int, leader_end_offset: int,
                     brokers: Brokers) -> ErrorCode:
        """Record a follower's fetch position; a fetch carrying an older broker epoch than
        the image's is NOT_LEADER_OR_FOLLOWER (a previous incarnation of that broker)."""
        current = self.followers.get(replica_id)
        if current is None:
            return self.check_follower(replica_id, -1)
        cached = brokers.alive_epochs.get(replica_id)
        if broker_epoch != NO_BROKER_EPOCH and cached is not None and cached > broker_epoch:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        self.followers[replica_id] = current.fetched(
            fetch_offset=fetch_offset, log_start_offset=log_start_offset, now_ms=now_ms,
            leader_end_offset=leader_end_offset, broker_epoch=broker_epoch)
        return ErrorCode.NONE

    # ------------------------------------------------------------------ high watermark

    def under_min_isr(self, min_insync_replicas: int) -> bool:
        return len(self.state.isr) < effective_min_isr(min_insync_replicas,
                                                       len(self.assignment.replicas))

    def high_watermark(self, current: int, *, leader_end_offset: int, now_ms: int,
                       min_insync_replicas: int, brokers: Brokers) -> int:
        """``maybeIncrementLeaderHW``: the smallest log end offset over the leader, the
        maximal ISR and the caught-up ISR-eligible followers about to join it; frozen
        while the committed ISR is under the effective min ISR; never moving back."""
        if self.under_min_isr(min_insync_replicas):
            return current
        new = leader_end_offset
        maximal = self.state.maximal_isr
        for replica, state in self.followers.items():
            if state.log_end_offset >= new:
                continue
            if replica in maximal or (
                    state.is_caught_up(leader_end_offset, now_ms, self.max_lag_ms)
                    and brokers.isr_eligible(replica, state.broker_epoch)):
                new = state.log_end_offset
        return max(current, new)

    # ------------------------------------------------------------------ ISR changes

    def propose_expand(self, replica_id: int, *, high_watermark: int, brokers: Brokers,
                       local_epoch: int) -> IsrProposal | None:
        """``maybeExpandIsr``: a follower outside the ISR that reached the high watermark
        and the start of this leader epoch joins it, if eligible and nothing is in flight."""
        state = self.followers.get(replica_id)
        if (state is None or self.in_flight or replica_id in self.state.isr
                or not brokers.isr_eligible(replica_id, state.broker_epoch)
                or state.log_end_offset < high_watermark
                or state.log_end_offset < self.epoch_start_offset):
            return None
        assert isinstance(self.state, Committed)
        proposal = self._proposal((*self.state.isr, replica_id), local_epoch)
        self.state = PendingExpand(replica_id, proposal, self.state)
        return proposal

    def out_of_sync(self, *, now_ms: int, leader_end_offset: int) -> frozenset[int]:
        """``getOutOfSyncReplicas``: ISR followers not caught up within ``max_lag_ms``
        (none while a change is in flight)."""
        if self.in_flight:
            return frozenset()
        return frozenset(
            replica for replica in self.state.isr if replica != self.broker_id
            and (replica not in self.followers or not self.followers[replica].is_caught_up(
                leader_end_offset, now_ms, self.max_lag_ms)))

    def propose_shrink(self, *, now_ms: int, leader_end_offset: int,
                       local_epoch: int) -> IsrProposal | None:
        """``maybeShrinkIsr``: drop the out-of-sync followers (never the leader)."""
        gone = self.out_of_sync(now_ms=now_ms, leader_end_offset=leader_end_offset)
        if not gone:
            return None
        assert isinstance(self.state, Committed)
        proposal = self._proposal(tuple(r for r in self.state.isr if r not in gone),
                                  local_epoch)
        self.state = PendingShrink(gone, proposal, self.state)
        return proposal

    def _proposal(self, isr: tuple[int, ...], local_epoch: int) -> IsrProposal:
        """The ISR with broker epochs: ours, and each follower's from its last fetch."""
        def epoch_of(replica: int) -> int:
            if replica == self.broker_id:
                return local_epoch
            state = self.followers.get(replica)
            known = None if state is None else state.broker_epoch
            return NO_BROKER_EPOCH if known is None else known
        return IsrProposal(self.assignment.leader_epoch, self.assignment.partition_epoch,
                           tuple((replica, epoch_of(replica)) for replica in isr), RECOVERED)

    def complete(self, proposal: IsrProposal, result: AlterResult | ErrorCode) -> bool:
        """The controller's answer to ``proposal``; True if it should be sent again.

        An answer to a proposal no longer pending (metadata replaced it) is ignored. A
        success for our leader epoch and a partition epoch not older than ours commits the
        returned ISR; INELIGIBLE_REPLICA / OPERATION_NOT_ATTEMPTED return to the last
        committed state; fencing and version errors wait for newer metadata; anything
        else (NOT_CONTROLLER, timeouts) is retried, as Kafka's ``submitAlterPartition``.
        """
        state = self.state
        if isinstance(state, Committed) or state.proposal != proposal:
            return False
        if isinstance(result, AlterResult):
            if (result.leader_epoch != self.assignment.leader_epoch
                    or result.partition_epoch < self.assignment.partition_epoch):
                return False
            self.state = Committed(result.isr, result.leader_recovery_state)
            self.assignment = replace(self.assignment, partition_epoch=result.partition_epoch,
                                      isr=result.isr)
            return False
        if result in _RESET:
            self.state = state.committed
            return False
        return result not in _AWAIT_METADATA
