"""The brokers' CPU-seconds per GB of a fixed produce load (issue 29's produce path): a
fresh pykraft cluster of 1 controller + 3 brokers, a topic of 3 partitions at RF=3 (one led
by each broker), and to each leader the same Produce request again and again, acks=all,
``--depth`` in flight per connection, until ``--mb`` MB were produced.

Why not librdkafka's rows (``bench/vs_kafka.py``): a saturating client's batches grow and
shrink with the rate it reaches, so on a loaded 2-core machine CPU per byte moves with the
load (+-20 % between runs of the same commit). Here every request is the same bytes (one
batch of ``--records`` records of 1000 B), so the per-request and per-byte work is too; the
followers' fetches still follow the timing. CPU is read from ``/proc``
(:mod:`server_usage`), bytes count once per replica written, as ``bench/vs_kafka.py`` counts.

    .venv/bin/python bench/produce_cpu.py [--mb 600] [--records 128] [--depth 2] [--json]

An older commit: ``PYTHONPATH=<its tree>/src``, this script as it is.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from pykraft.messages.kafka.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from pykraft.messages.kafka.produce_response import ProduceResponse
from pykraft.protocol.api_versions import listener_ranges, offsets_by_name
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.records.batch import encode_batch
from pykraft.runtime.kafka_client import open_with_timeout
from pykraft.tools.local_cluster import HOST, LocalCluster
from rdkafka_load import create_topic, leader_of, wait_brokers
from server_usage import measured

TOPIC = "produce-cpu"
BROKERS = REPLICAS = PARTITIONS = 3
VALUE_BYTES = 1000
#: v12 names topics (v13 needs their ids, which this client does not look up)
PRODUCE_VERSIONS = (3, 12)
GB = 1e9


async def produce(ports: list[int], batch: bytes, requests: int, depth: int) -> None:
    """``requests`` Produce requests of ``batch`` to partition i's leader at ``ports[i]``."""
    ours = {**offsets_by_name(listener_ranges(Listener.BROKER)),
            ApiKey.PRODUCE: PRODUCE_VERSIONS}

    async def to_leader(partition: int, port: int) -> None:
        connection = await open_with_timeout(HOST, port, client_id="produce-cpu", ours=ours,
                                             timeout_s=10.0)
        body = ProduceRequest(acks=-1, timeout_ms=30_000, topic_data=(TopicProduceData(
            name=TOPIC, partition_data=(PartitionProduceData(index=partition,
                                                             records=batch),)),))
        slots = asyncio.Semaphore(depth)

        async def one() -> None:
            async with slots:
                answer = await connection.request(body)
            assert isinstance(answer, ProduceResponse)
            code = answer.responses[0].partition_responses[0].error_code
            if code:
                raise RuntimeError(f"{TOPIC}-{partition}: produce answered error {code}")

        try:
            await asyncio.gather(*(one() for _ in range(requests)))
        finally:
            connection.close()

    await asyncio.gather(*(to_leader(p, port) for p, port in enumerate(ports)))


@dataclass(frozen=True)
class Result:
    produced_bytes: int
    request_bytes: int
    seconds: float
    broker_cpu_s: float
    load_before: tuple[float, ...]
    load_after: tuple[float, ...]

    @property
    def cpu_s_per_gb(self) -> float:
        return self.broker_cpu_s / (self.produced_bytes * REPLICAS / GB)

    def summary(self) -> dict[str, object]:
        return {"produced_bytes": self.produced_bytes, "request_bytes": self.request_bytes,
                "seconds": round(self.seconds, 2),
                "mb_s": round(self.produced_bytes / self.seconds / 1e6, 2),
                "broker_cpu_s": round(self.broker_cpu_s, 2),
                "cpu_s_per_gb": round(self.cpu_s_per_gb, 3),
                "load_before": [round(x, 2) for x in self.load_before],
                "load_after": [round(x, 2) for x in self.load_after]}


def run(args: argparse.Namespace) -> Result:
    batch = encode_batch(0, [(None, os.urandom(VALUE_BYTES))] * args.records,
                         partition_leader_epoch=-1, timestamp=int(time.time() * 1000))
    requests = max(1, int(args.mb * 1e6) // PARTITIONS // len(batch))
    base = Path(args.dir)
    shutil.rmtree(base, ignore_errors=True)
    cluster = LocalCluster.create(base, 1, {}, BROKERS)
    try:
        cluster.start_all()
        cluster.wait_listening(list(cluster.nodes), 120.0)
        wait_brokers(cluster.bootstrap_servers, BROKERS)
        create_topic(cluster.bootstrap_servers, TOPIC, PARTITIONS, REPLICAS)
        ports = [cluster.nodes[leader_of(cluster.bootstrap_servers, TOPIC, p)].port
                 for p in range(PARTITIONS)]
        brokers = set(cluster.brokers)
        load_before = os.getloadavg()
        started = time.monotonic()
        with measured(lambda: {n: pid for n, pid in cluster.pids.items() if n in brokers}
                      ) as usage:
            asyncio.run(produce(ports, batch, requests, args.depth))
        seconds = time.monotonic() - started
    finally:
        cluster.stop_all()
        shutil.rmtree(base, ignore_errors=True)
    return Result(requests * PARTITIONS * len(batch), len(batch), seconds, usage.total_cpu_s,
                  load_before, os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=600.0, help="MB produced in all")
    parser.add_argument("--records", type=int, default=128, help="records of 1000 B a batch")
    parser.add_argument("--depth", type=int, default=2, help="requests in flight a leader")
    parser.add_argument("--dir", default="/tmp/pykraft-bench-produce-cpu")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args)
    if args.json:
        print(json.dumps(result.summary()))
        return
    print(f"{result.produced_bytes / 1e6:.0f} MB in {result.seconds:.1f} s: brokers "
          f"{result.broker_cpu_s:.2f} CPU-s, {result.cpu_s_per_gb:.3f} CPU-s/GB (x{REPLICAS} "
          f"replicas), load {result.load_before[0]:.2f} -> {result.load_after[0]:.2f}")


if __name__ == "__main__":
    main()
