"""Bytes on the wire per idle fetch, without and with fetch sessions (KIP-227, issue 31),
Apache Kafka and pykraft side by side: for each system a fresh cluster of real processes
(1 controller + 1 broker, Kafka's from ``.cache/kafka`` or ``--kafka-home``) with a topic of
P empty partitions, fetched by a raw Fetch v17 client (topics by id, ``max_wait_ms`` 0):

* before: a sessionless full fetch (session 0, epoch -1) of every partition, as pykraft's
  replica fetcher sent each time before sessions (and as every fetch is without them);
* after: a fetch session opened by a full fetch (epoch 0), then incremental fetches with
  nothing new (no partition sent, none answered): what an idle follower or consumer sends.

Each figure is the request frame plus the response frame, size prefixes included, as sent
and received on the socket (the median of ``--fetches`` fetches; idle fetches are the same
size each time). A follower's fetch carries its ``replica_state`` too (a few bytes more
either way); the bench fetches as a consumer, which either broker serves.

    .venv/bin/python bench/fetch_sessions.py [--partitions 1,100,1000] [--fetches 5]
        [--systems kafka,pykraft] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from pykraft.messages.kafka.fetch_request import FetchPartition, FetchRequest, FetchTopic
from pykraft.messages.kafka.fetch_response import FetchResponse
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.messages.kafka.metadata_response import MetadataResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.frame import encode_frame
from pykraft.protocol.header import RequestHeader
from pykraft.tools.kafka_runtime import SERVER_START_JVM_OPTIONS, KafkaRuntime
from pykraft.tools.local_cluster import LocalCluster
from rdkafka_load import create_topic, wait_brokers
from vs_kafka import default_kafka_home, kafka_version

FETCH_VERSION = 17  # what Kafka's and pykraft's replica fetchers send
METADATA_VERSION = 12
LISTEN_TIMEOUT_S = 120.0
SOCKET_TIMEOUT_S = 30.0
READY_TIMEOUT_S = 60.0  # until the new topic's partitions all answer without an error
POLL_S = 0.2
TOPIC = "idle"  # with its partition count: idle-1, idle-100, ...


class Wire:
    """One connection to a broker; each exchange returns the bytes it moved both ways."""

    def __init__(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        self._socket = socket.create_connection((host, int(port)), SOCKET_TIMEOUT_S)
        self._correlation = 0

    def exchange(self, api_key: ApiKey, version: int, body: object) -> tuple[int, Any]:
        self._correlation += 1
        frame = encode_frame(encode_request(
            RequestHeader(api_key, version, self._correlation, "fetch-sessions-bench"), body))
        self._socket.sendall(frame)
        size = int.from_bytes(self._read(4), "big")
        answer = decode_response(api_key, version, self._read(size))
        return len(frame) + 4 + size, answer.body

    def _read(self, count: int) -> bytes:
        data = bytearray()
        while len(data) < count:
            chunk = self._socket.recv(count - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return bytes(data)

    def close(self) -> None:
        self._socket.close()


def fetch(topic_id: uuid.UUID, partitions: int, session_id: int, epoch: int) -> FetchRequest:
    """A consumer's Fetch v17: every partition from offset 0 (none when ``partitions`` is
    0, as an incremental fetch with nothing to change)."""
    parts = tuple(FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1 << 20)
                  for p in range(partitions))
    return FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_id=session_id,
                        session_epoch=epoch,
                        topics=(FetchTopic(topic_id=topic_id, partitions=parts),)
                        if parts else ())


def topic_id(wire: Wire, name: str) -> uuid.UUID:
    _, answer = wire.exchange(ApiKey.METADATA, METADATA_VERSION, MetadataRequest(
        topics=(MetadataRequestTopic(name=name),), allow_auto_topic_creation=False))
    assert isinstance(answer, MetadataResponse)
    return answer.topics[0].topic_id


def measure(address: str, name: str, partitions: int, fetches: int) -> dict[str, float]:
    """Bytes per fetch of topic ``name``: sessionless full (before) and incremental idle
    (after)."""
    wire = Wire(address)
    try:
        ident = topic_id(wire, name)

        def sent(request: FetchRequest) -> tuple[int, FetchResponse]:
            size, answer = wire.exchange(ApiKey.FETCH, FETCH_VERSION, request)
            assert isinstance(answer, FetchResponse) and answer.error_code == ErrorCode.NONE
            return size, answer

        deadline = time.monotonic() + READY_TIMEOUT_S
        while any(p.error_code != ErrorCode.NONE for t in sent(
                fetch(ident, partitions, 0, -1))[1].responses for p in t.partitions):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{address}: {name} is not led everywhere yet")
            time.sleep(POLL_S)  # another process's state: polling is the only way to see it
        full = [sent(fetch(ident, partitions, 0, -1))[0] for _ in range(fetches)]
        opened, answer = sent(fetch(ident, partitions, 0, 0))
        if answer.session_id == 0:
            raise RuntimeError(f"{address}: no fetch session was opened")
        idle = []
        for epoch in range(1, fetches + 1):
            size, answer = sent(fetch(ident, 0, answer.session_id, epoch))
            if answer.responses:
                raise RuntimeError(f"{address}: an idle incremental fetch answered partitions")
            idle.append(size)
    finally:
        wire.close()
    return {"full_sessionless": statistics.median(full), "session_opening": opened,
            "incremental_idle": statistics.median(idle)}


@contextmanager
def running(system: str, base: Path, kafka: KafkaRuntime | None) -> Iterator[LocalCluster]:
    """A fresh 1 controller + 1 broker cluster of ``system``, stopped by PID afterwards."""
    if system == "kafka":
        cluster = LocalCluster.create(base, 0, {}, 0, kafka_controllers=1, kafka_brokers=1,
                                      kafka=kafka)
    else:
        cluster = LocalCluster.create(base, 1, {}, 1)
    try:
        cluster.start_all()
        cluster.wait_listening(list(cluster.nodes), LISTEN_TIMEOUT_S)
        wait_brokers(cluster.bootstrap_servers, 1)
        yield cluster
    finally:
        cluster.stop_all()


def run_system(system: str, counts: list[int], fetches: int,
               kafka: KafkaRuntime | None) -> dict[int, dict[str, float]]:
    base = Path(tempfile.mkdtemp(prefix=f"fetch-sessions-{system}-"))
    try:
        with running(system, base, kafka) as cluster:
            results = {}
            for count in counts:
                name = f"{TOPIC}-{count}"
                create_topic(cluster.bootstrap_servers, name, count, 1)
                results[count] = measure(cluster.bootstrap_servers, name, count, fetches)
            return results
    finally:
        shutil.rmtree(base, ignore_errors=True)


def table(results: dict[str, dict[int, dict[str, float]]],
          line: Callable[[str], None]) -> None:
    line(f"{'system':<8} {'partitions':>10} {'full sessionless':>17} {'incremental idle':>17}"
         f" {'before/after':>13}")
    for system, rows in results.items():
        for count, row in rows.items():
            before, after = row["full_sessionless"], row["incremental_idle"]
            line(f"{system:<8} {count:>10} {before:>15,.0f} B {after:>15,.0f} B"
                 f" {before / after:>12.1f}x")
    if {"kafka", "pykraft"} <= results.keys():
        line("")
        line("pykraft / Kafka, bytes per fetch:")
        for count in results["pykraft"]:
            ours, theirs = results["pykraft"][count], results["kafka"][count]
            line(f"  {count:>5} partitions: full sessionless "
                 f"{ours['full_sessionless'] / theirs['full_sessionless']:.2f}, "
                 f"incremental idle {ours['incremental_idle'] / theirs['incremental_idle']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", default="1,100,1000")
    parser.add_argument("--fetches", type=int, default=5)
    parser.add_argument("--systems", default="kafka,pykraft")
    parser.add_argument("--kafka-home", type=Path, default=default_kafka_home())
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    systems = args.systems.split(",")
    kafka = (KafkaRuntime.locate(args.kafka_home, SERVER_START_JVM_OPTIONS)
             if "kafka" in systems else None)
    counts = [int(p) for p in args.partitions.split(",")]
    results = {system: run_system(system, counts, args.fetches, kafka) for system in systems}
    out = sys.stderr if args.json else sys.stdout
    if kafka is not None:
        print(f"Apache Kafka {kafka_version(kafka)}; Fetch v{FETCH_VERSION}", file=out)
    table(results, lambda text: print(text, file=out))
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
