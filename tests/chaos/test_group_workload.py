"""A chaos group member against a scripted stand-in for confluent-kafka's Consumer: it records
what it reads, its assignments and each commit's outcome per partition, and a member whose
client failed fatally is replaced by the next generation of its name."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition

from pykraft.chaos import group_workload
from pykraft.chaos.group_workload import GroupMember, Membership
from pykraft.chaos.history import GroupRead, OffsetCommit, Rebalance
from pykraft.chaos.recorder import Recorder, read_history
from pykraft.chaos.workload import Target

TOPIC = "chaos"


class Message:
    def __init__(self, partition: int, offset: int, error: KafkaError | None = None) -> None:
        self._partition, self._offset, self._error = partition, offset, error

    def error(self) -> KafkaError | None:
        return self._error

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes:
        return f"v{self._partition}-{self._offset}".encode()


class Script:
    """What each generation's consumer hands out, and what it was asked to commit."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.made = 0
        self.commits: list[list[tuple[int, int]]] = []

    def consumer(self, settings: dict[str, Any]) -> FakeConsumer:
        self.made += 1
        return FakeConsumer(self, self.made, settings)


class FakeConsumer:
    """Generation 1 reads two records of partition 0, has its first commit refused, then
    fails fatally; generation 2 reads one record of partition 1, then the run stops."""

    def __init__(self, script: Script, number: int, settings: dict[str, Any]) -> None:
        self._script = script
        self._number = number
        self._on_commit: Callable[[Any, list[TopicPartition]], None] = settings["on_commit"]
        self._answers: list[tuple[KafkaError | None, list[TopicPartition]]] = []
        self._queue: list[Message] = ([Message(0, 0), Message(0, 1)] if number == 1
                                      else [Message(1, 7)])
        self._polls = 0

    def subscribe(self, topics: list[str], on_assign: Callable[..., None],
                  on_revoke: Callable[..., None], on_lost: Callable[..., None]) -> None:
        self._on_revoke = on_revoke
        on_assign(self, [TopicPartition(TOPIC, 0 if self._number == 1 else 1)])

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> None:
        assert asynchronous
        self._script.commits.append([(tp.partition, tp.offset) for tp in offsets])
        refused = len(self._script.commits) == 1
        self._answers.append((KafkaError(KafkaError.REQUEST_TIMED_OUT) if refused else None,
                              [TopicPartition(TOPIC, tp.partition, tp.offset)
                               for tp in offsets]))

    def poll(self, timeout: float) -> Message | None:
        self._polls += 1
        while self._answers:
            self._on_commit(*self._answers.pop(0))
        if self._queue:
            return self._queue.pop(0)
        if self._number == 1 and len(self._script.commits) >= 2:
            return Message(0, -1, KafkaError(KafkaError._FATAL, fatal=True))
        if self._number == 2 and self._polls > 3:
            self._script.stop.set()
        return None

    def close(self) -> None:
        self._on_revoke(self, [TopicPartition(TOPIC, 0 if self._number == 1 else 1)])
        while self._answers:
            self._on_commit(*self._answers.pop(0))


def test_a_member_records_reads_and_commits_and_is_replaced_after_a_fatal_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import confluent_kafka

    stop = threading.Event()
    script = Script(stop)
    monkeypatch.setattr(confluent_kafka, "Consumer", script.consumer)
    monkeypatch.setattr(group_workload, "COMMIT_INTERVAL_S", 0.0)
    recorder = Recorder(tmp_path / "history.jsonl")
    member = GroupMember("g0", Membership(Target("x:1", TOPIC, 2), "chaos-1", "classic",
                                          recorder, stop))
    member.start()
    member.join(10)
    recorder.close()
    assert not member.is_alive()
    history = read_history(tmp_path / "history.jsonl")
    assert [(e.member, e.partition, e.offset, e.value) for e in history
            if isinstance(e, GroupRead)] == [
        ("g0.0", 0, 0, "v0-0"), ("g0.0", 0, 1, "v0-1"), ("g0.1", 1, 7, "v1-7")]
    assert [(e.member, e.partition, e.offset, e.error) for e in history
            if isinstance(e, OffsetCommit)] == [
        ("g0.0", 0, 1, "REQUEST_TIMED_OUT"), ("g0.0", 0, 2, None), ("g0.1", 1, 8, None)]
    assert script.made == 2
    assert [(e.member, e.kind, e.partitions) for e in history if isinstance(e, Rebalance)] == [
        ("g0.0", "assigned", [0]), ("g0.0", "revoked", [0]),
        ("g0.1", "assigned", [1]), ("g0.1", "revoked", [1])]
