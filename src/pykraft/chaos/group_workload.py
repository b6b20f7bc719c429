"""The consumer group of a chaos run: members, their commits, and the group's offsets.

Each member is a confluent-kafka consumer of one group (``group.protocol`` classic or
KIP-848's ``consumer``), subscribed to the chaos topic from the earliest offset without
auto-commit. It records every record it reads, and commits what it read asynchronously
every :data:`COMMIT_INTERVAL_S` and when partitions are revoked, recording each partition's
outcome when the answer comes. A member whose client fails fatally is closed and replaced
by a new one (the next generation of its name) in the group. :class:`GroupObserving`
samples the group's committed offsets (OffsetFetch through kafka-python's admin client) about once a
second, and :func:`drain` waits after the faults for them to reach every partition's end.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykraft.chaos.history import GroupOffsets, GroupRead, OffsetCommit, Rebalance
from pykraft.chaos.recorder import Recorder
from pykraft.chaos.replica_logs import text
from pykraft.chaos.workload import CLIENT_LOGGING, Target

CLASSIC = "classic"
COMMIT_INTERVAL_S = 0.3
POLL_S = 0.2
#: librdkafka's close never returns once a fatal error stopped the consumer.
CLOSE_S = 20.0
SAMPLE_INTERVAL_S = 1.0
FETCH_TIMEOUT_MS = 2000
#: A classic member's session: short, so a dead coordinator's successor is found quickly.
CLASSIC_CONFIG = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}


def group_id(seed: int) -> str:
    return f"chaos-{seed}"


@dataclass(frozen=True, slots=True)
class Membership:
    """What every member shares: the topic, the group, its protocol and the history."""

    target: Target
    group: str
    protocol: str
    recorder: Recorder
    stop: threading.Event


class GroupMember(threading.Thread):
    def __init__(self, name: str, membership: Membership) -> None:
        super().__init__(name=f"chaos-member-{name}", daemon=True)
        self._base = name
        self._membership = membership

    def run(self) -> None:
        generation = 0
        while not self._membership.stop.is_set():
            _Generation(self._membership, f"{self._base}.{generation}").run()
            generation += 1


class _Generation:
    """One consumer's life in the group: from its join to its fatal error or the stop."""

    def __init__(self, membership: Membership, name: str) -> None:
        self._member = membership
        self._name = name
        self._recorder = membership.recorder
        self._fatal = threading.Event()
        self._positions: dict[int, int] = {}  # partition -> next offset to read
        self._sent: dict[int, int] = {}  # partition -> offset last sent for commit
        self._consumer: Any = None

    def run(self) -> None:
        from confluent_kafka import Consumer

        settings: dict[str, Any] = {
            "bootstrap.servers": self._member.target.bootstrap, "group.id": self._member.group,
            "group.protocol": self._member.protocol, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "fetch.wait.max.ms": 100,
            "error_cb": self._on_error, "on_commit": self._on_commit, **CLIENT_LOGGING}
        if self._member.protocol == CLASSIC:
            settings.update(CLASSIC_CONFIG)
        self._consumer = Consumer(settings)
        self._consumer.subscribe([self._member.target.topic], on_assign=self._on_assign,
                                 on_revoke=self._on_revoke, on_lost=self._on_lost)
        try:
            self._consume()
        finally:
            close_within(self._consumer.close, CLOSE_S)

    def _consume(self) -> None:
        stop = self._member.stop
        last_commit = time.monotonic()
        while not stop.is_set() and not self._fatal.is_set():
            message = self._consumer.poll(POLL_S)
            if message is not None:
                error = message.error()
                if error is None:
                    partition, offset = message.partition(), message.offset()
                    self._recorder.write(GroupRead(self._recorder.now(), self._name,
                                                   partition, offset, text(message.value())))
                    self._positions[partition] = offset + 1
                elif error.fatal():
                    self._fatal.set()
            if time.monotonic() - last_commit >= COMMIT_INTERVAL_S:
                self._commit(list(self._positions))
                last_commit = time.monotonic()

    def _commit(self, partitions: list[int]) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        offsets = {p: self._positions[p] for p in partitions
                   if p in self._positions and self._sent.get(p) != self._positions[p]}
        if not offsets:
            return
        self._sent.update(offsets)
        try:
            self._consumer.commit(offsets=[TopicPartition(self._member.target.topic, p, o)
                                           for p, o in sorted(offsets.items())],
                                  asynchronous=True)
        except KafkaException as exc:  # refused before sending
            self._committed(exc.args[0], {p: (o, None) for p, o in offsets.items()})

    def _on_commit(self, error: Any, partitions: list[Any]) -> None:
        self._committed(error, {tp.partition: (tp.offset, tp.error) for tp in partitions})

    def _committed(self, error: Any, outcomes: dict[int, tuple[int, Any]]) -> None:
        now = self._recorder.now()
        for partition, (offset, own) in sorted(outcomes.items()):
            failed = own or error
            self._recorder.write(OffsetCommit(now, self._name, partition, offset,
                                              None if failed is None else failed.name()))
            if failed is not None and self._sent.get(partition) == offset:
                del self._sent[partition]  # to be sent again

    def _on_error(self, error: Any) -> None:
        if error.fatal():
            self._fatal.set()

    def _rebalanced(self, kind: str, partitions: list[Any]) -> None:
        self._recorder.write(Rebalance(self._recorder.now(), self._name, kind,
                                       sorted(tp.partition for tp in partitions)))

    def _on_assign(self, _consumer: Any, partitions: list[Any]) -> None:
        self._rebalanced("assigned", partitions)

    def _on_revoke(self, _consumer: Any, partitions: list[Any]) -> None:
        """Commit what was read of the revoked partitions, then forget them: a partition
        assigned again starts from the group's committed offset."""
        revoked = [tp.partition for tp in partitions]
        self._commit(revoked)
        self._forget(revoked)
        self._rebalanced("revoked", partitions)

    def _on_lost(self, _consumer: Any, partitions: list[Any]) -> None:
        self._forget([tp.partition for tp in partitions])
        self._rebalanced("lost", partitions)

    def _forget(self, partitions: list[int]) -> None:
        for partition in partitions:
            self._positions.pop(partition, None)
            self._sent.pop(partition, None)


def close_within(close: Callable[[], object], timeout_s: float) -> None:
    closer = threading.Thread(target=close, name="chaos-close", daemon=True)
    closer.start()
    closer.join(timeout_s)


class GroupView:
    """The group's committed offsets through one thread's own kafka-python admin client
    (librdkafka's crashes when an OffsetFetch answers NOT_COORDINATOR: librdkafka issue
    5040, hit when a chaos fault moves the coordinator)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, group: str) -> None:
        self._bootstrap = bootstrap
        self._topic = topic
        self._count = partitions
        self._group = group
        self._admin: Any = None

    def offsets(self) -> list[int] | None:
        """Each partition's committed offset (-1: none), or None when no answer came (the
        client is then made afresh on the next call)."""
        from kafka import KafkaAdminClient, TopicPartition
        from kafka.errors import KafkaError

        asked = [TopicPartition(self._topic, p) for p in range(self._count)]
        try:
            if self._admin is None:
                self._admin = KafkaAdminClient(bootstrap_servers=self._bootstrap,
                                               request_timeout_ms=FETCH_TIMEOUT_MS)
            found = self._admin.list_group_offsets({self._group: asked})[self._group]
        except KafkaError:
            self.close()
            return None
        by_partition = {tp.partition: meta.offset for tp, meta in found.items()}
        return [max(-1, by_partition.get(p, -1)) for p in range(self._count)]

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None


class GroupObserving(threading.Thread):
    """Records a :class:`GroupOffsets` about once a second until stopped."""

    def __init__(self, view: GroupView, recorder: Recorder, stop: threading.Event) -> None:
        super().__init__(name="chaos-group-observer", daemon=True)
        self._view = view
        self._recorder = recorder
        self._stop_event = stop

    def run(self) -> None:
        try:
            while not self._stop_event.wait(SAMPLE_INTERVAL_S):
                t = self._recorder.now()
                found = self._view.offsets()
                if found is not None:
                    self._recorder.write(GroupOffsets(t, found))
        finally:
            self._view.close()


def drain(view: GroupView, ends: dict[int, tuple[int, int]], recorder: Recorder,
          timeout_s: float) -> bool:
    """Wait (bounded) until the group's committed offsets reach each partition's committed
    end (``ends``: partition -> (log start, end)); record the last fetch as the final one.
    False when the time ran out first."""
    deadline = time.monotonic() + timeout_s
    last: GroupOffsets | None = None
    try:
        while True:
            t = recorder.now()
            found = view.offsets()
            if found is not None:
                last = GroupOffsets(t, found, final=True)
                if all(max(found[p], start) >= end for p, (start, end) in ends.items()):
                    return True
            if time.monotonic() > deadline:
                return False
            time.sleep(SAMPLE_INTERVAL_S / 5)  # the members commit on their own time
    finally:
        if last is not None:
            recorder.write(last)
        view.close()
