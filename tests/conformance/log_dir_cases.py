"""Conformance rows for AlterReplicaLogDirs (API 34) on the broker listener. The suite's
broker has one log dir, so the rows cover what needs no second one: a path not in
``log.dirs``, a partition the broker does not know, the replica's own dir (a no-op), a
partition named under two dirs (the last wins) and a topic name too long for the future
dir; the moves themselves are tests/broker/test_log_dir_moves.py and the acceptance
test."""

from __future__ import annotations

from typing import Any

from conformance.cases import ABSENT, NO_SUCH_TOPIC, Case, Meaning, code
from conformance.harness import Run
from pykraft.messages.kafka.alter_replica_log_dirs_request import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirTopic,
)
from pykraft.messages.kafka.describe_log_dirs_request import DescribeLogDirsRequest
from pykraft.protocol.apis import ApiKey

NO_SUCH_DIR = "/no/such/log/dir"
#: 214 characters: "<topic>-0.<32 hex>-future" is 256, one more than Kafka allows.
LONG_TOPIC = "x" * 214


def own_dir(run: Run) -> str:
    """The broker's log dir as it names it (Kafka and pykraft keep theirs in different
    places): DescribeLogDirs' first directory."""
    body = run.generated(ApiKey.DESCRIBE_LOG_DIRS, DescribeLogDirsRequest(topics=()))
    return str(body.results[0].log_dir)


def alter(run: Run, *moves: tuple[str, str, int]) -> Any:
    """AlterReplicaLogDirs of ``(path, topic, partition)``, a directory entry each."""
    return run.generated(ApiKey.ALTER_REPLICA_LOG_DIRS, AlterReplicaLogDirsRequest(dirs=tuple(
        AlterReplicaLogDir(path=path, topics=(AlterReplicaLogDirTopic(name=topic,
                                                                      partitions=(index,)),))
        for path, topic, index in moves)))


def altered(body: Any, run: Run) -> Meaning:
    names = {run.cluster.topic: "shared", LONG_TOPIC: "long"}
    return sorted((names.get(t.topic_name, t.topic_name), p.partition_index, code(p.error_code))
                  for t in body.results for p in t.partitions)


LOG_DIR_MOVES = [
    Case("AlterReplicaLogDirs", 34, "dir_not_in_log_dirs",
         lambda r: alter(r, (NO_SUCH_DIR, r.cluster.topic, 0)), altered,
         lambda _r: [("shared", 0, "LOG_DIR_NOT_FOUND")]),
    Case("AlterReplicaLogDirs", 34, "unknown_partition",
         lambda r: alter(r, (own_dir(r), NO_SUCH_TOPIC, 0), (own_dir(r), r.cluster.topic, 99)),
         altered, lambda _r: [(NO_SUCH_TOPIC, 0, ABSENT), ("shared", 99, ABSENT)]),
    Case("AlterReplicaLogDirs", 34, "the_dir_it_is_in",
         lambda r: alter(r, (own_dir(r), r.cluster.topic, 0)), altered,
         lambda _r: [("shared", 0, "NONE")]),
    Case("AlterReplicaLogDirs", 34, "named_twice_the_last_dir_wins",
         lambda r: alter(r, (NO_SUCH_DIR, r.cluster.topic, 1), (own_dir(r), r.cluster.topic, 1)),
         altered, lambda _r: [("shared", 1, "NONE")]),
    Case("AlterReplicaLogDirs", 34, "topic_name_too_long_for_the_future_dir",
         lambda r: alter(r, (NO_SUCH_DIR, LONG_TOPIC, 0)), altered,
         lambda _r: [("long", 0, "INVALID_TOPIC_EXCEPTION")]),
]
