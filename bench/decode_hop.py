"""A Produce request's decode on the event loop against the same decode on the codec thread
(``pykraft.runtime.codec_thread.off_loop``): what sets ``RECORDS_OFF_LOOP_BYTES``.

Usage: ``.venv/bin/python bench/decode_hop.py [--repeat 50]``

Frames as a producer sends them (a few partitions of 1 KB records) cost little to decode
whatever their size, records being sliced, not parsed; a dense frame (thousands of
partitions of one tiny batch) costs per partition. Each row prints the frame's size, the
decode's time on the loop, and the wall and CPU time of the same decode sent to the codec
thread and awaited (an idle machine: under load the hop also waits for the GIL).
"""

from __future__ import annotations

import argparse
import os
import time
import uuid

import uvloop

from pykraft.messages.kafka.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from pykraft.protocol.codec import decode_request, encode_request
from pykraft.protocol.header import RequestHeader
from pykraft.records.batch import encode_batch
from pykraft.runtime.codec_thread import off_loop

PRODUCE = 0
VERSION = 12
#: (label, partitions, records per batch, value bytes)
FRAMES = (("4 partitions x 64 records of 1000 B", 4, 64, 1000),
          ("12 partitions x 16 records of 1000 B", 12, 16, 1000),
          ("1 partition x 1024 records of 1000 B", 1, 1024, 1000),
          ("dense: 650 partitions x 1 record of 20 B", 650, 1, 20),
          ("dense: 2,600 partitions x 1 record of 20 B", 2600, 1, 20),
          ("dense: 10,400 partitions x 1 record of 20 B", 10400, 1, 20))


def produce_frame(partitions: int, records: int, value_bytes: int) -> bytes:
    batch = encode_batch(0, [(None, os.urandom(value_bytes))] * records,
                         partition_leader_epoch=-1, timestamp=int(time.time() * 1000))
    body = ProduceRequest(acks=-1, timeout_ms=30_000, topic_data=(TopicProduceData(
        topic_id=uuid.uuid4(), partition_data=tuple(
            PartitionProduceData(index=p, records=batch) for p in range(partitions))),))
    return encode_request(RequestHeader(PRODUCE, VERSION, 1, "bench"), body)


async def timed(frame: bytes, repeat: int) -> tuple[float, float, float]:
    """Seconds per decode: on the loop, then off it (wall, this process's CPU)."""
    started = time.perf_counter()
    for _ in range(repeat):
        decode_request(frame)
    inline = (time.perf_counter() - started) / repeat
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(repeat):
        await off_loop(decode_request, frame)
    return (inline, (time.perf_counter() - started) / repeat,
            (time.process_time() - cpu) / repeat)


async def main(repeat: int) -> None:
    print(f"{'frame':46s} {'KiB':>6s} {'loop us':>8s} {'hop wall us':>12s} {'hop CPU us':>11s}")
    for label, partitions, records, value_bytes in FRAMES:
        frame = produce_frame(partitions, records, value_bytes)
        inline, wall, cpu = await timed(frame, repeat)
        print(f"{label:46s} {len(frame) / 1024:6.0f} {inline * 1e6:8.0f} {wall * 1e6:12.0f} "
              f"{cpu * 1e6:11.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50, help="decodes per row and way")
    uvloop.run(main(parser.parse_args().repeat))
