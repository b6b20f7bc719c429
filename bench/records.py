"""Write and read throughput of metadata records through pykraft's record and storage layers.

Usage: ``.venv/bin/python bench/records.py [--records 1000000] [--batch-size 1000]``

Phases, each timed separately over the same records:
  write: metadata record encoding -> v2 batch encoding with CRC-32C -> segment append + fsync
  read:  segment read -> batch parsing with CRC check -> record decoding -> metadata decoding
The batch phases run side by side with kafka-python's pure-Python DefaultRecordBatchBuilder
and DefaultRecordBatch (same values, same batch sizes, CRC validated) and print the ratio.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from rich.console import Console
from rich.table import Table

from pykraft.records.batch import encode_batch, iter_batches
from pykraft.records.metadata import (
    ConfigRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    TopicRecord,
    decode_metadata_record,
    encode_metadata_record,
)
from pykraft.storage.metadata_log import MetadataLog

TIMESTAMP = 1_700_000_000_000


def make_records(count: int) -> list[Any]:
    """A controller-like mix: partition changes dominate, then partitions, no-ops, topics."""
    topic_ids = [uuid.UUID(int=(i + 1) << 64) for i in range(64)]
    records: list[Any] = []
    for i in range(count):
        topic = topic_ids[i % len(topic_ids)]
        kind = i % 10
        if kind < 4:
            records.append(PartitionChangeRecord(partition_id=i % 50, topic_id=topic,
                                                 isr=(1, 2, 3), leader=1 + i % 3))
        elif kind < 6:
            records.append(PartitionRecord(partition_id=i % 50, topic_id=topic,
                                           replicas=(1, 2, 3), isr=(1, 2, 3), leader=1,
                                           leader_epoch=i % 7, partition_epoch=i % 11))
        elif kind < 8:
            records.append(NoOpRecord())
        elif kind < 9:
            records.append(TopicRecord(name=f"topic-{i}", topic_id=topic))
        else:
            records.append(ConfigRecord(resource_type=2, resource_name=f"topic-{i % 64}",
                                        name="retention.ms", value=str(i)))
    return records


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def pykraft_batches(values: list[bytes], batch_size: int) -> list[bytes]:
    return [
        encode_batch(base, [(None, v) for v in values[base : base + batch_size]],
                     partition_leader_epoch=1, timestamp=TIMESTAMP)
        for base in range(0, len(values), batch_size)
    ]


def kafka_python_batches(values: list[bytes], batch_size: int) -> list[bytes]:
    out = []
    for base in range(0, len(values), batch_size):
        builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=0, is_transactional=0, producer_id=-1,
            producer_epoch=-1, base_sequence=-1, batch_size=1 << 30,
        )
        for delta, value in enumerate(values[base : base + batch_size]):
            builder.append(delta, TIMESTAMP, None, value, [])
        out.append(bytes(builder.build()))
    return out


def pykraft_read_values(data: bytes) -> list[bytes | None]:
    values: list[bytes | None] = []
    for batch in iter_batches(data, verify_crc=True):
        values.extend(r.value for r in batch.records())
    return values


def kafka_python_read_values(batches: list[bytes]) -> list[bytes | None]:
    values: list[bytes | None] = []
    for raw in batches:
        batch = DefaultRecordBatch(raw)
        if not batch.validate_crc():
            raise AssertionError("kafka-python rejected a CRC")
        values.extend(r.value for r in batch)
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--batch-size", type=int, default=1000)
    args = parser.parse_args()
    console = Console()
    records = make_records(args.records)
    n = len(records)

    values, t_encode = timed(lambda: [encode_metadata_record(r) for r in records])
    value_bytes = sum(len(v) for v in values)
    batches, t_batch = timed(lambda: pykraft_batches(values, args.batch_size))
    peer_batches, t_peer_batch = timed(lambda: kafka_python_batches(values, args.batch_size))
    batch_bytes = sum(len(b) for b in batches)

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "__cluster_metadata-0"

        def append_all() -> None:
            with MetadataLog.open(directory) as log:
                for batch in batches:
                    log.append(batch)
                log.flush()

        _, t_append = timed(append_all)

        def read_all() -> bytes:
            with MetadataLog.open(directory) as log:
                chunks, offset = [], 0
                while offset < log.log_end_offset:
                    chunk = log.read(offset, 8 << 20)
                    chunks.append(chunk)
                    offset = list(iter_batches(chunk, verify_crc=False))[-1].header.next_offset
                return b"".join(chunks)

        data, t_read_disk = timed(read_all)

    read_values, t_parse = timed(lambda: pykraft_read_values(data))
    peer_values, t_peer_parse = timed(lambda: kafka_python_read_values(peer_batches))
    decoded, t_decode = timed(
        lambda: [decode_metadata_record(v) for v in read_values if v is not None]
    )
    if read_values != values or peer_values != values or len(decoded) != n:
        raise AssertionError("round trip mismatch")

    table = Table(title=f"{n:,} metadata records, {args.batch_size} per batch, "
                        f"{batch_bytes / 1e6:.1f} MB of batches")
    for col in ("phase", "records/s", "MB/s", "kafka-python records/s", "pykraft / peer"):
        table.add_column(col, justify="right" if col != "phase" else "left")

    def row(name: str, seconds: float, size: int, peer: float | None = None) -> None:
        ratio = f"{peer / seconds:.2f}x" if peer else ""
        peer_rate = f"{n / peer:,.0f}" if peer else ""
        table.add_row(name, f"{n / seconds:,.0f}", f"{size / seconds / 1e6:.1f}", peer_rate, ratio)

    row("write: encode metadata records", t_encode, value_bytes)
    row("write: build batches + CRC", t_batch, batch_bytes, t_peer_batch)
    row("write: segment append + fsync", t_append, batch_bytes)
    write_total = t_encode + t_batch + t_append
    row("write: total", write_total, batch_bytes)
    row("read: segment read", t_read_disk, batch_bytes)
    row("read: parse batches + CRC", t_parse, batch_bytes, t_peer_parse)
    row("read: decode metadata records", t_decode, value_bytes)
    read_total = t_read_disk + t_parse + t_decode
    row("read: total", read_total, batch_bytes)
    console.print(table)


if __name__ == "__main__":
    main()
