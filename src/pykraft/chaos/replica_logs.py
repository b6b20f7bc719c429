"""Each replica's log of the workload's topic, read from its broker's disk after the run.

Read-only and tolerant: the segments are walked batch by batch and the walk stops at the
first batch that does not decode (a torn write the broker would truncate at start-up), so a
damaged replica shows as shorter or different, never as a crash of the checker.
"""

from __future__ import annotations

from pathlib import Path

from pykraft.chaos.history import ReplicaLog
from pykraft.errors import PyKraftError
from pykraft.ids import TopicPartition
from pykraft.log.batch_records import batch_records
from pykraft.records.batch import NO_PRODUCER_ID, iter_batches
from pykraft.storage.offset_checkpoints import REPLICATION_OFFSET_CHECKPOINT, read_offset_checkpoint
from pykraft.storage.partition_log import partition_dir_name


def text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "replace")


def read_replica(log_dir: Path, topic: str, partition: int, replica: int) -> ReplicaLog:
    """The values of ``topic``-``partition`` in ``log_dir`` by offset (None in gaps), with
    the high watermark of the directory's replication-offset-checkpoint (-1 if absent)."""
    tp = TopicPartition(topic, partition)
    directory = log_dir / partition_dir_name(tp)
    records: dict[int, tuple[str | None, str | None]] = {}
    try:
        for segment in sorted(directory.glob("*.log")):
            for batch in iter_batches(segment.read_bytes()):
                if batch.is_control:
                    continue
                header = batch.header
                session = (None if header.producer_id == NO_PRODUCER_ID
                           else f"{header.producer_id}.{header.producer_epoch}")
                records.update((r.offset, (text(r.value), session))
                               for r in batch_records(batch))
    except PyKraftError:
        pass  # a torn or damaged tail: what came before it stands
    try:
        hw = read_offset_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT).get(tp, -1)
    except PyKraftError:
        hw = -1
    if not records:
        return ReplicaLog(partition, replica, 0, [], hw)
    start = min(records)
    found = [records.get(o, (None, None)) for o in range(start, max(records) + 1)]
    return ReplicaLog(partition, replica, start, [value for value, _ in found], hw,
                      [session for _, session in found])
