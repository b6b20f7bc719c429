"""When an acks=all produce is answered (Kafka's ``Partition.checkEnoughReplicasReachOffset``)."""

from __future__ import annotations

from pykraft.protocol.errors import ErrorCode
from pykraft.replica.leader import effective_min_isr


def acks_all_outcome(*, is_leader: bool, high_watermark: int, required_offset: int,
                     isr_size: int, min_isr: int, replication_factor: int
                     ) -> ErrorCode | None:
    """An acks=all partition waits until the high watermark reaches ``required_offset``
    (its last offset + 1): None while it waits; NOT_LEADER_OR_FOLLOWER once leadership
    moved; NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR (``isr_size``: the
    maximal ISR, with a pending expansion's member) shrank under the min ISR meanwhile."""
    if not is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if high_watermark < required_offset:
        return None
    if isr_size < effective_min_isr(min_isr, replication_factor):
        return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    return ErrorCode.NONE
