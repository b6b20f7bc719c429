"""Waiting for acks=all: Kafka's DelayedProduce, shared by Produce and the transaction
markers WriteTxnMarkers appends.

Each appended partition waits until its high watermark passes its batch, in the broker's
Produce purgatory (:mod:`pykraft.broker.purgatory`), checked on each change of the
partition; it settles with Kafka's answer (:func:`pykraft.replica.acks.acks_all_outcome`:
NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank under min.insync.replicas,
NOT_LEADER_OR_FOLLOWER when leadership moved) or REQUEST_TIMED_OUT at the deadline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pykraft.broker.purgatory import DelayedOperation
from pykraft.broker.replica_manager import HostedPartition, ReplicaManager
from pykraft.protocol.errors import ErrorCode
from pykraft.replica.acks import acks_all_outcome


class Waiting(Protocol):
    """One partition's answer under construction: ``waiting`` (partition, offset its
    high watermark must reach) until settled, then ``error`` (and ``leader``, the hint a
    NOT_LEADER_OR_FOLLOWER answer carries)."""

    error: ErrorCode
    waiting: tuple[HostedPartition, int] | None
    leader: tuple[int, int] | None


class _DelayedAcks(DelayedOperation):
    """Complete when every waiting partition is settled, or answer REQUEST_TIMED_OUT for
    those still waiting at the deadline."""

    def __init__(self, waiting: list[Waiting], deadline_ms: int) -> None:
        super().__init__(deadline_ms)
        self._waiting = waiting

    def try_complete(self) -> bool:
        self._waiting[:] = [o for o in self._waiting if not settle(o)]
        return False if self._waiting else self.force_complete()

    def on_complete(self, expired: bool) -> None:
        if expired:
            for outcome in self._waiting:
                outcome.error = ErrorCode.REQUEST_TIMED_OUT


async def await_acks_all(replicas: ReplicaManager, outcomes: Sequence[Waiting],
                         timeout_ms: int) -> None:
    """Wait, keyed by the waiting partitions, until every one is settled or the timeout
    passes."""
    waiting = [o for o in outcomes if o.waiting is not None]
    if not waiting:
        return
    delayed = replicas.delayed
    keys = dict.fromkeys(o.waiting[0].tp for o in waiting if o.waiting is not None)
    await delayed.wait(delayed.purgatories.produce,
                       _DelayedAcks(waiting, delayed.deadline_ms(timeout_ms)), keys)


def settle(outcome: Waiting) -> bool:
    """Whether an acks=all partition is done (its final error set when it is)."""
    assert outcome.waiting is not None
    hosted, required = outcome.waiting
    code = acks_all_outcome(
        is_leader=hosted.is_leader, high_watermark=hosted.high_watermark,
        required_offset=required, isr_size=len(hosted.maximal_isr),
        min_isr=hosted.min_isr,
        replication_factor=len(hosted.replicas))
    if code is None:
        return False
    outcome.error = code
    if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        outcome.leader = (hosted.leader_id, hosted.leader_epoch)
    return True
