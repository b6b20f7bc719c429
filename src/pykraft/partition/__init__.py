"""The partition leader's ISR protocol as pure logic (:mod:`.replication`: follower states,
high watermark, ISR expansion and shrink, pending AlterPartition changes); the partition
log's rules are :mod:`pykraft.log`.

No I/O, clocks or threads: time comes in as ``now_ms``.
"""
