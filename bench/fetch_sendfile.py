"""CPU a broker spends per GB of Fetch answers: records sent from the segment files with
``sendfile`` (a listener without TLS) against the buffered path (read, encoded, written
through the transport: what a TLS listener does before encrypting, and what every
listener did before issue 29).

Usage: ``.venv/bin/python bench/fetch_sendfile.py [--mib 64] [--rounds 8] [--repeat 3]
[--json]``

One process, no client library: a broker's dispatcher over a real replica manager holding
``--mib`` MiB of 1 KiB records in one partition answers 1 MiB Fetch requests read from the
start, ``--rounds`` times over, to a loopback socket whose reader thread discards the bytes.
Per path it prints MB/s (wall) and the serving thread's CPU seconds per GB
(``time.thread_time``: the event loop's thread, its system time in ``sendfile`` and
``send`` included, the reader thread excluded): on a shared machine the CPU figure is the
one to compare. The paths alternate ``--repeat`` times in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import tempfile
import threading
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import uvloop

from pykraft.broker.dispatch import BrokerDispatcher
from pykraft.broker.replica_manager import ReplicaManager
from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.log.log_manager import LogManager
from pykraft.messages.kafka.fetch_request import FetchPartition, FetchRequest, FetchTopic
from pykraft.messages.splice import SplicedPayload
from pykraft.protocol.codec import encode_request
from pykraft.protocol.header import RequestHeader
from pykraft.records.batch import encode_batch
from pykraft.records.metadata import (
    BrokerEndpoint,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from pykraft.runtime.streams import FrameStream
from pykraft.security.session import KafkaPrincipal, SecurityProtocol, Session
from pykraft.storage.log_config import LogConfig

TOPIC_ID = uuid.UUID(int=1)
RECORDS_PER_BATCH = 1000  # of 1 KiB: about 1 MiB a batch, one batch a Fetch
ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")
PATHS = {"buffered": Session(ANONYMOUS, "127.0.0.1:1", "SSL", SecurityProtocol.SSL),
         "sendfile": Session(ANONYMOUS, "127.0.0.1:1")}


def leader(directory: Path, mib: int) -> ReplicaManager:
    """Broker 1 leading t-0, filled with ``mib`` MiB of random 1 KiB records."""
    delta = MetadataDelta(MetadataImage())
    for record in (
            RegisterBrokerRecord(broker_id=1, incarnation_id=uuid.UUID(int=1), broker_epoch=10,
                                 end_points=(BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1",
                                                            port=9092, security_protocol=0),)),
            TopicRecord(name="t", topic_id=TOPIC_ID),
            PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=(1,), isr=(1,),
                            leader=1, leader_epoch=0, partition_epoch=0)):
        delta.replay(record)
    logs = LogManager([directory], LogConfig())
    logs.startup(1_000)
    replicas = ReplicaManager(1, logs, {})
    replicas.apply_image(delta.apply(), 1_000)
    part = replicas.partition_for("t", 0)
    for _ in range(mib):
        batch = encode_batch(0, [(None, os.urandom(1024))] * RECORDS_PER_BATCH,
                             partition_leader_epoch=-1, timestamp=2_000)
        replicas.append_records(part, batch, acks=1, api_version=12, now_ms=2_000)
    return replicas


def fetches(replicas: ReplicaManager) -> list[bytes]:
    """One 1 MiB Fetch request frame per batch of the partition, from its start."""
    end = replicas.partition_for("t", 0).log_end_offset
    return [encode_request(RequestHeader(1, 16, 7, "bench"), FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
        topics=(FetchTopic(topic="t", topic_id=TOPIC_ID, partitions=(FetchPartition(
            partition=0, fetch_offset=offset, partition_max_bytes=1 << 20),)),)))
        for offset in range(0, end, RECORDS_PER_BATCH)]


def discard(sock: socket.socket) -> None:
    buffer = bytearray(1 << 20)
    try:
        while sock.recv_into(buffer):
            pass
    except OSError:
        pass  # the server closed first


async def serve(dispatcher: BrokerDispatcher, frames: list[bytes], session: Session,
                rounds: int) -> tuple[int, float, float]:
    """(bytes answered, wall seconds, serving thread CPU seconds)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setblocking(False)
        client = socket.create_connection(listener.getsockname())
        reader = threading.Thread(target=discard, args=(client,))
        reader.start()
        accepted, _ = await asyncio.get_running_loop().sock_accept(listener)
    stream = await FrameStream.accept(accepted, 1 << 30)
    sent = 0
    wall, cpu = time.perf_counter(), time.thread_time()
    for _ in range(rounds):
        for frame in frames:
            payload = await dispatcher.respond(frame, session)
            await stream.write_frame(payload)
            sent += payload.size if isinstance(payload, SplicedPayload) else len(payload)
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    stream.close()
    await asyncio.sleep(0)  # the transport closes
    client.shutdown(socket.SHUT_RDWR)
    reader.join()
    client.close()
    return sent, wall, cpu


def main(args: argparse.Namespace) -> int:
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as directory:
        replicas = leader(Path(directory), args.mib)
        node = SimpleNamespace(settings=SimpleNamespace(
            node_id=1, controller=SimpleNamespace(properties={})))
        dispatcher = BrokerDispatcher(node, SimpleNamespace(image=replicas.image), None,  # type: ignore[arg-type]
                                      cluster_id="bench", listener_name="PLAINTEXT",
                                      replicas=replicas)
        frames = fetches(replicas)
        try:
            for run in range(args.repeat):
                for path, session in PATHS.items():
                    sent, wall, cpu = uvloop.run(serve(dispatcher, frames, session,
                                                       args.rounds))
                    results.append({"run": run, "path": path, "gb": sent / 1e9,
                                    "mb_s": sent / wall / 1e6, "cpu_s_per_gb": cpu / sent * 1e9})
        finally:
            replicas.shutdown()
    load = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"load_average": load, "results": results}, indent=2))
        return 0
    print(f"load average {load:.2f}")
    for row in results:
        print(f"run {row['run']} {row['path']:>8}: {row['gb']:.2f} GB, {row['mb_s']:.0f} MB/s, "
              f"{row['cpu_s_per_gb']:.3f} CPU s/GB")
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mib", type=int, default=64, help="MiB of records in the log")
    parser.add_argument("--rounds", type=int, default=8, help="reads of the whole log a path")
    parser.add_argument("--repeat", type=int, default=3, help="alternations of the paths")
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


if __name__ == "__main__":
    raise SystemExit(main(parse_args()))
