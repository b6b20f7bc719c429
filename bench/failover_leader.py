"""Data-plane unavailability after a SIGKILL of a partition leader (issue 29, deliverable 3).

    .venv/bin/python bench/failover_leader.py [--kills 5] [--no-fast-fence] [--json]

pykraft (``LocalCluster``: 1 controller, 3 brokers) with Kafka's heartbeat interval and
session timeout (2 s, 9 s unless ``--session-timeout-ms``); one topic of one partition,
RF=3, min.insync.replicas=2; an idempotent acks=all confluent-kafka producer sends a record
every 10 ms. Each kill: find the partition's leader, SIGKILL it, and time from the kill to
the first acknowledgement of a record sent after it; the controller's log says when it
fenced the broker. The broker is then started again and the next kill waits for the ISR to
be whole. ``--no-fast-fence`` sets ``pykraft.broker.fence.on.refused.connection.enable``
false (Kafka's behaviour: the broker is fenced when its session expires).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import confluent_kafka
from confluent_kafka.admin import AdminClient

from peers.base import BenchError
from peers.kafka_stream import PykraftStream
from pykraft.chaos.fences import logged_fences

TOPIC = "failover"
SEND_INTERVAL_S = 0.01
#: A kill whose first acknowledgement takes longer than this fails the run.
KILL_TIMEOUT_S = 120.0
FAST_FENCE = "pykraft.broker.fence.on.refused.connection.enable"


@dataclass(frozen=True, slots=True)
class Kill:
    broker: int
    unavailable_ms: float
    fenced_after_ms: float | None
    """From the kill to the controller's fence on refused listeners (None: not logged)."""


class Producer:
    """An idempotent acks=all producer sending on its own thread; :meth:`first_ack_after`
    waits for the first acknowledged record sent at or after a moment."""

    def __init__(self, bootstrap: str) -> None:
        self._producer = confluent_kafka.Producer({
            "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
        self._acked = threading.Condition()
        self._latest_acked_send = 0.0
        self._ack_time: dict[float, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            sent = time.monotonic()
            self._producer.produce(TOPIC, b"x" * 100,
                                   on_delivery=functools.partial(self._delivered, sent))
            self._producer.poll(SEND_INTERVAL_S)
        self._producer.flush(10)

    def _delivered(self, sent: float, err: confluent_kafka.KafkaError | None,
                   _msg: object) -> None:
        if err is not None:
            return
        with self._acked:
            if sent > self._latest_acked_send:
                self._latest_acked_send = sent
                self._ack_time[sent] = time.monotonic()
            self._acked.notify_all()

    def first_ack_after(self, moment: float, timeout_s: float) -> float:
        """Seconds from ``moment`` to the acknowledgement of the first record sent after it."""
        with self._acked:
            if not self._acked.wait_for(lambda: self._latest_acked_send >= moment, timeout_s):
                raise BenchError(f"no acknowledgement within {timeout_s:.0f} s of the kill")
            first = min(sent for sent in self._ack_time if sent >= moment)
            elapsed = self._ack_time[first] - moment
            self._ack_time.clear()
            return elapsed

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)


def leader(bootstrap: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    found: int = admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0].leader
    if found < 0:
        raise BenchError(f"{TOPIC} has no leader")
    return found


def fenced_at(log: Path, broker: int, after: float) -> float | None:
    """Wall-clock time of the controller's fence of ``broker`` on refused listeners after
    ``after`` (from its log), or None."""
    return next((fence.at.timestamp() for fence in logged_fences(log)
                 if fence.broker == broker and fence.at.timestamp() >= after), None)


def measure(args: argparse.Namespace, base: Path) -> list[Kill]:
    properties = {"broker.heartbeat.interval.ms": "2000",
                  "broker.session.timeout.ms": str(args.session_timeout_ms),
                  "pykraft.shutdown.timeout.ms": "3000",
                  FAST_FENCE: "false" if args.no_fast_fence else "true"}
    stream = PykraftStream(3, properties)
    asyncio.run(stream.start(base))
    cluster = stream.cluster
    controller_log = cluster.nodes[cluster.controllers[0]].log
    kills: list[Kill] = []
    try:
        stream.create_topic(TOPIC)
        producer = Producer(stream.bootstrap)
        try:
            producer.first_ack_after(time.monotonic(), KILL_TIMEOUT_S)
            for _ in range(args.kills):
                victim = leader(stream.bootstrap)
                wall, moment = time.time(), time.monotonic()
                cluster.kill(victim)
                unavailable = producer.first_ack_after(moment, KILL_TIMEOUT_S)
                fenced = fenced_at(controller_log, victim, wall - 0.001)
                kills.append(Kill(victim, unavailable * 1000,
                                  None if fenced is None else (fenced - wall) * 1000))
                print(f"killed broker {victim}: first ack after {unavailable * 1000:.0f} ms",
                      file=sys.stderr)
                cluster.start(victim)
                stream.create_topic(TOPIC)  # waits until the ISR is whole again
        finally:
            producer.close()
    finally:
        asyncio.run(stream.stop())
    return kills


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--session-timeout-ms", type=int, default=9000)
    parser.add_argument("--no-fast-fence", action="store_true")
    parser.add_argument("--dir", type=Path, help="cluster directory (default: a temporary one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.kills < 1:
        parser.error("--kills must be at least 1")
    with tempfile.TemporaryDirectory(prefix="failover-") as scratch:
        kills = measure(args, (args.dir or Path(scratch)) / "cluster")
    median = statistics.median(k.unavailable_ms for k in kills)
    if args.json:
        print(json.dumps({"fast_fence": not args.no_fast_fence, "median_ms": median,
                          "kills": [asdict(k) for k in kills]}))
    else:
        for kill in kills:
            fenced = ("" if kill.fenced_after_ms is None
                      else f" (fenced after {kill.fenced_after_ms:.0f} ms)")
            print(f"broker {kill.broker}: {kill.unavailable_ms:.0f} ms{fenced}")
        print(f"median {median:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
