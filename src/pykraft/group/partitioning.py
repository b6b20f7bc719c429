"""Which ``__consumer_offsets`` partition, and so which coordinator, owns a group.

Kafka picks ``Utils.abs(groupId.hashCode()) % partitions`` with Java's ``String.hashCode``
over UTF-16 code units and int32 wrap-around. Any other hash sends clients to the wrong
coordinator, which answers NOT_COORDINATOR forever.
"""

from __future__ import annotations

_INT32_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``h = 31*h + c`` over UTF-16 code units, as an int32."""
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_abs(value: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs`` except that ``Integer.MIN_VALUE`` maps to 0."""
    return 0 if value == _INT32_MIN else abs(value)


def partition_for(group_id: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` among ``partitions``."""
    if partitions <= 0:
        raise ValueError(f"the offsets topic needs at least one partition, got {partitions}")
    return java_abs(java_string_hash(group_id)) % partitions
