"""Time of :func:`pykraft.log.validator.validate_produce` on producer-like batches.

Usage: ``.venv/bin/python bench/validate.py [--repeat 5] [--counts 100,1000]
[--sizes 100,1024] [--codecs none,gzip,snappy,lz4,zstd]``

Why: a leader validates every produced batch (Kafka's LogValidator rules) before the append;
in a broker under produce load this is most of its CPU (docs/bench.md, data plane). Each
batch is what librdkafka sends by default: null keys, no headers, values of one size,
timestamps a few milliseconds apart, topic ``compression.type=producer`` (so the batch is
kept, not rebuilt). Figures are the best of ``--repeat`` timeit runs of process CPU time
(the machine is usually shared: wall time would count the other jobs). Only public APIs are
used, so the same script times an older checkout with ``PYTHONPATH=<old checkout>/src``.
"""

from __future__ import annotations

import argparse
import os
import time
import timeit

from pykraft.log.validator import AppendConfig, validate_produce
from pykraft.records.batch import Record, assemble_batch, encode_records
from pykraft.records.compression import CODECS, NONE, compress

NOW_MS = 1_700_000_000_000
PRODUCER_ID = 4000
RECORDS_PER_MS = 50  # librdkafka stamps each message when produced: a few ms per batch


def producer_batch(count: int, size: int, codec: int) -> bytes:
    """One idempotent producer's batch of ``count`` values of ``size`` bytes."""
    stamp = os.urandom(8)
    records = [Record(i, NOW_MS - count // RECORDS_PER_MS + i // RECORDS_PER_MS, None,
                      stamp + i.to_bytes(4, "big") + b"x" * max(0, size - 12))
               for i in range(count)]
    body = encode_records(records, 0, records[0].timestamp)
    return assemble_batch(
        compress(codec, body) if codec != NONE else body, base_offset=0,
        partition_leader_epoch=-1, attributes=codec, last_offset_delta=count - 1,
        base_timestamp=records[0].timestamp, max_timestamp=records[-1].timestamp,
        records_count=count, producer_id=PRODUCER_ID, producer_epoch=0, base_sequence=0)


def seconds_per_batch(batch: bytes, repeat: int) -> float:
    """Best CPU time of one ``validate_produce`` call, as ``python -m timeit`` reports it."""
    config = AppendConfig()

    def run() -> None:
        validate_produce(batch, log_end_offset=1234, leader_epoch=3, now_ms=NOW_MS,
                         config=config, partition="bench-0")

    timer = timeit.Timer(run, timer=time.process_time)
    loops, _ = timer.autorange()
    return min(timer.repeat(repeat, loops)) / loops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--counts", default="100,1000")
    parser.add_argument("--sizes", default="100,1024")
    parser.add_argument("--codecs", default=",".join(CODECS))
    args = parser.parse_args()
    print(f"{'codec':<7}{'records':>8}{'size':>6}{'µs/batch':>11}{'ns/record':>11}"
          f"{'records/s':>12}{'MB/s':>9}")
    for codec_name in args.codecs.split(","):
        for count in map(int, args.counts.split(",")):
            for size in map(int, args.sizes.split(",")):
                batch = producer_batch(count, size, CODECS[codec_name])
                seconds = seconds_per_batch(batch, args.repeat)
                print(f"{codec_name:<7}{count:>8}{size:>6}{seconds * 1e6:>11.1f}"
                      f"{seconds / count * 1e9:>11.0f}{count / seconds:>12,.0f}"
                      f"{count * size / seconds / 1e6:>9.1f}")


if __name__ == "__main__":
    main()
