"""A replica's log read from disk for the checker: values by offset, the producer session of
each record, the checkpointed high watermark, and a torn tail read up to the damage."""

from __future__ import annotations

from pathlib import Path

from pykraft.chaos.replica_logs import read_replica
from pykraft.ids import TopicPartition
from pykraft.records.batch import Record, assemble_batch, encode_records
from pykraft.storage.offset_checkpoints import (
    REPLICATION_OFFSET_CHECKPOINT,
    write_offset_checkpoint,
)


def batch(base: int, values: list[bytes], producer: tuple[int, int] | None) -> bytes:
    records = [Record(base + i, 0, None, v) for i, v in enumerate(values)]
    pid, epoch = producer or (-1, -1)
    return assemble_batch(encode_records(records, base, 0), base_offset=base,
                          partition_leader_epoch=0, attributes=0,
                          last_offset_delta=len(values) - 1, base_timestamp=0, max_timestamp=0,
                          records_count=len(values), producer_id=pid, producer_epoch=epoch,
                          base_sequence=0 if producer else -1)


def test_values_sessions_and_high_watermark_up_to_a_torn_tail(tmp_path: Path) -> None:
    directory = tmp_path / "chaos-1"
    directory.mkdir()
    torn = batch(3, [b"lost"], (5, 2))
    (directory / "00000000000000000000.log").write_bytes(
        batch(0, [b"a", b"b"], (5, 1)) + batch(2, [b"c"], None) + torn[:-3])
    write_offset_checkpoint(tmp_path / REPLICATION_OFFSET_CHECKPOINT,
                            {TopicPartition("chaos", 1): 2})
    replica = read_replica(tmp_path, "chaos", 1, 1001)
    assert (replica.partition, replica.replica, replica.start) == (1, 1001, 0)
    assert replica.values == ["a", "b", "c"]
    assert replica.sessions == ["5.1", "5.1", None]
    assert replica.hw == 2


def test_a_replica_without_the_partition_is_empty(tmp_path: Path) -> None:
    replica = read_replica(tmp_path, "chaos", 0, 1000)
    assert (replica.values, replica.sessions, replica.hw) == ([], [], -1)
