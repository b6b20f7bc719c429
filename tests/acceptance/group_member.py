"""One member of a classic consumer group in a process of its own, for the group matrix
(tests/acceptance/test_group_matrix.py): a SIGKILL is then a real crash the coordinator only
sees as a session timeout. java/GroupMemberProbe.java speaks the same lines for Kafka's
Java consumer.

``group_member.py <client> <bootstrap> <topic> <group> <session.timeout.ms>`` with client
``confluent-kafka``, ``kafka-python`` or ``aiokafka``. It polls, and after each poll commits
synchronously the next offsets of the records it printed and has not committed yet; it prints,
tab-separated:

- ``assigned <partitions, comma-separated>`` whenever its assignment changes,
- ``record <partition> <offset> <value>`` for each record, before its commit,
- ``committed <partition> <offset>`` for each offset committed, ``commit-failed <error>``,
- ``closed`` once the consumer closed (it left the group).

A ``close`` line on stdin (or its end) closes the consumer and exits 0.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from typing import Any, Protocol

HEARTBEAT_MS = 500
MAX_POLL_INTERVAL_MS = 30_000  # the rebalance timeout: a rejoin that never comes ends soon
POLL_MS = 100
Record = tuple[int, int, bytes]


class Client(Protocol):
    def poll(self) -> list[Record]: ...
    def assignment(self) -> set[int]: ...
    def commit(self, offsets: dict[int, int]) -> str | None:
        """None once committed, else the client's error."""
    def close(self) -> None: ...


class Confluent:
    def __init__(self, bootstrap: str, topic: str, group: str, session_ms: int) -> None:
        import confluent_kafka

        self._topic = topic
        self._consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "session.timeout.ms": session_ms,
            "heartbeat.interval.ms": HEARTBEAT_MS, "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
            "fetch.wait.max.ms": POLL_MS})
        self._consumer.subscribe([topic])

    def poll(self) -> list[Record]:
        found: list[Record] = []
        for message in self._consumer.consume(100, POLL_MS / 1000):
            partition, offset, value = message.partition(), message.offset(), message.value()
            if (message.error() is None and partition is not None and offset is not None
                    and value is not None):
                found.append((partition, offset, value))
        return found

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self._consumer.assignment()}

    def commit(self, offsets: dict[int, int]) -> str | None:
        from confluent_kafka import KafkaException, TopicPartition

        try:
            self._consumer.commit(offsets=[TopicPartition(self._topic, p, o)
                                           for p, o in offsets.items()], asynchronous=False)
        except KafkaException as error:
            return str(error)
        return None

    def close(self) -> None:
        self._consumer.close()


def subscribe_with_metadata(consumer: Any, topic: str) -> None:
    """Subscribe a kafka-python consumer to ``topic`` and fetch the topic's metadata before
    its first JoinGroup.

    A leader that joins without the metadata rejoins once it arrives, and kafka-python
    3.0.12 loses that rejoin's assignment when the SyncGroup answer lands after a poll's
    timeout: the leader's assignment snapshot already matches the metadata, so no later
    poll completes the join, and the member reads nothing until the coordinator expires it.
    (Fetching the metadata before subscribing is not enough: the snapshot only counts
    subscribed topics.)"""
    consumer.subscribe([topic])
    assert consumer.partitions_for_topic(topic)


class KafkaPython:
    def __init__(self, bootstrap: str, topic: str, group: str, session_ms: int) -> None:
        from kafka import KafkaConsumer

        self._topic = topic
        self._consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
            enable_auto_commit=False, session_timeout_ms=session_ms,
            heartbeat_interval_ms=HEARTBEAT_MS, max_poll_interval_ms=MAX_POLL_INTERVAL_MS,
            fetch_max_wait_ms=POLL_MS)
        subscribe_with_metadata(self._consumer, topic)

    def poll(self) -> list[Record]:
        batches = self._consumer.poll(timeout_ms=POLL_MS)
        return [(m.partition, m.offset, m.value) for ms in batches.values() for m in ms]

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self._consumer.assignment()}

    def commit(self, offsets: dict[int, int]) -> str | None:
        from kafka import OffsetAndMetadata, TopicPartition
        from kafka.errors import KafkaError

        try:
            self._consumer.commit({TopicPartition(self._topic, p): OffsetAndMetadata(o, "", -1)
                                   for p, o in offsets.items()})
        except KafkaError as error:
            return repr(error)
        return None

    def close(self) -> None:
        self._consumer.close()


class AioKafka:
    """aiokafka's consumer driven from this synchronous loop: one event loop kept across
    calls, running whenever the member polls (so, nearly always)."""

    def __init__(self, bootstrap: str, topic: str, group: str, session_ms: int) -> None:
        import aiokafka

        self._topic = topic
        self._runner = asyncio.Runner()

        async def started() -> Any:  # aiokafka binds the consumer to the running loop
            consumer = aiokafka.AIOKafkaConsumer(
                topic, bootstrap_servers=bootstrap, group_id=group,
                auto_offset_reset="earliest", enable_auto_commit=False,
                session_timeout_ms=session_ms, heartbeat_interval_ms=HEARTBEAT_MS,
                max_poll_interval_ms=MAX_POLL_INTERVAL_MS, fetch_max_wait_ms=POLL_MS)
            await consumer.start()
            return consumer

        self._consumer: Any = self._runner.run(started())

    def poll(self) -> list[Record]:
        batches = self._runner.run(self._consumer.getmany(timeout_ms=POLL_MS))
        return [(m.partition, m.offset, m.value) for ms in batches.values() for m in ms]

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self._consumer.assignment()}

    def commit(self, offsets: dict[int, int]) -> str | None:
        from aiokafka import TopicPartition
        from aiokafka.errors import KafkaError

        try:
            self._runner.run(self._consumer.commit({
                TopicPartition(self._topic, p): o for p, o in offsets.items()}))
        except KafkaError as error:
            return repr(error)
        return None

    def close(self) -> None:
        self._runner.run(self._consumer.stop())
        self._runner.close()


CLIENTS: dict[str, type[Confluent | KafkaPython | AioKafka]] = {
    "confluent-kafka": Confluent, "kafka-python": KafkaPython, "aiokafka": AioKafka}


def say(*words: object) -> None:
    print("\t".join(map(str, words)), flush=True)


def run(client: Client, stop: threading.Event) -> None:
    """Poll, print and commit until ``stop`` is set. An offset whose commit failed (the group
    rebalanced) is committed again after the next poll if the member still owns its
    partition; else the new owner reads its records again."""
    shown: set[int] | None = None
    pending: dict[int, int] = {}  # partition -> next offset to commit
    while not stop.is_set():
        records = client.poll()
        for partition, offset, value in records:
            say("record", partition, offset, value.decode())
            pending[partition] = max(pending.get(partition, 0), offset + 1)
        owned = client.assignment()
        if owned != shown:
            shown = owned
            say("assigned", ",".join(map(str, sorted(owned))))
        pending = {p: o for p, o in pending.items() if p in owned}
        if not pending:
            continue
        error = client.commit(pending)
        if error is not None:
            say("commit-failed", error)
            continue
        for partition, offset in sorted(pending.items()):
            say("committed", partition, offset)
        pending = {}


def main(argv: list[str]) -> None:
    name, bootstrap, topic, group, session_ms = argv
    # the Python clients' own account of joins, syncs and heartbeats, in the member's log
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    client = CLIENTS[name](bootstrap, topic, group, int(session_ms))
    stop = threading.Event()

    def wait_for_close() -> None:
        for line in sys.stdin:
            if line.strip() == "close":
                break
        stop.set()

    threading.Thread(target=wait_for_close, daemon=True).start()
    run(client, stop)
    client.close()
    say("closed")


if __name__ == "__main__":
    main(sys.argv[1:])
