"""Which ``__consumer_offsets`` partition, and so which coordinator, owns a group.

Kafka picks ``Utils.abs(groupId.hashCode()) % partitions`` with Java's ``String.hashCode``
over UTF-16 code units and int32 wrap-around. Any other hash sends clients to the wrong
coordinator, which answers NOT_COORDINATOR forever.
"""

from __future__ import annotations

from pykraft.java import java_abs, java_string_hash


def partition_for(group_id: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` among ``partitions``."""
    if partitions <= 0:
        raise ValueError(f"the offsets topic needs at least one partition, got {partitions}")
    return java_abs(java_string_hash(group_id)) % partitions
