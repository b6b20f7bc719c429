"""Conformance rows for partition reassignment (KIP-455) on both listeners: a broker
forwards AlterPartitionReassignments and ListPartitionReassignments to the controller. The
suite's cluster has one broker, so the rows cover the refusals and the reassignments that
complete at once (the shared topic's partitions already on that broker); the moves between
brokers are tests/controller/test_controller_reassignment.py and the acceptance test."""

from __future__ import annotations

from typing import Any

from conformance.cases import BOTH, Case, Meaning, code
from conformance.harness import Run
from pykraft.messages.kafka.alter_partition_reassignments_request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from pykraft.messages.kafka.list_partition_reassignments_request import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)
from pykraft.protocol.apis import ApiKey

UNKNOWN_BROKER = 999


def absent(run: Run) -> str:
    return f"{run.fresh_topic}-absent"


def alter(run: Run, topic: str, *targets: tuple[int, tuple[int, ...] | None]) -> Any:
    return run.generated(ApiKey.ALTER_PARTITION_REASSIGNMENTS, AlterPartitionReassignmentsRequest(
        topics=(ReassignableTopic(name=topic, partitions=tuple(
            ReassignablePartition(partition_index=i, replicas=r) for i, r in targets)),)))


def altered(body: Any, run: Run) -> Meaning:
    names = {run.cluster.topic: "shared", absent(run): "absent"}
    return (code(body.error_code), body.error_message, [
        (names.get(t.name, t.name), p.partition_index, code(p.error_code), p.error_message)
        for t in body.responses for p in t.partitions])


def on_shared(*targets: tuple[int, tuple[int, ...] | None]) -> Any:
    return lambda run: alter(run, run.cluster.topic, *targets)


def own_broker(run: Run) -> tuple[int, ...]:
    return (run.cluster.broker_id,)


def refused(*parts: tuple[int, str, str | None]) -> Any:
    return lambda _run: ("NONE", None, [("shared", *part) for part in parts])


def unknown_broker(run: Run) -> Any:
    return alter(run, run.cluster.topic, (0, (run.cluster.broker_id, UNKNOWN_BROKER)))


def twice(run: Run) -> Any:
    return alter(run, run.cluster.topic, (0, own_broker(run) * 2))


def in_place(run: Run) -> Any:
    """Both partitions of the shared topic to the broker they are on: complete at once."""
    return alter(run, run.cluster.topic, (0, own_broker(run)), (1, own_broker(run)))


def listing(run: Run, topics: dict[str, list[int]] | None) -> Any:
    return run.generated(ApiKey.LIST_PARTITION_REASSIGNMENTS, ListPartitionReassignmentsRequest(
        topics=None if topics is None else tuple(
            ListPartitionReassignmentsTopics(name=n, partition_indexes=tuple(ids))
            for n, ids in topics.items())))


def listed(body: Any, run: Run) -> Meaning:
    """The reassignments of the run's topics (other rows' topics left out)."""
    mine = {run.cluster.topic, absent(run)}
    return (code(body.error_code), body.error_message,
            [(p.partition_index, p.replicas) for t in body.topics if t.name in mine
             for p in t.partitions])


def none_listed(_run: Run) -> Meaning:
    return ("NONE", None, [])


ALTER = "AlterPartitionReassignments"
LIST = "ListPartitionReassignments"
REASSIGNMENTS = [
    Case(ALTER, ApiKey.ALTER_PARTITION_REASSIGNMENTS, "unknown_topic",
         lambda run: alter(run, absent(run), (0, own_broker(run))), altered,
         lambda run: ("NONE", None, [("absent", 0, "UNKNOWN_TOPIC_OR_PARTITION",
                                      f"Unable to find a topic named {absent(run)}.")]),
         listeners=BOTH),
    Case(ALTER, ApiKey.ALTER_PARTITION_REASSIGNMENTS, "unknown_partition",
         lambda run: alter(run, run.cluster.topic, (9, own_broker(run))), altered,
         lambda run: ("NONE", None, [("shared", 9, "UNKNOWN_TOPIC_OR_PARTITION",
                                      f"Unable to find partition {run.cluster.topic}:9.")]),
         listeners=BOTH),
    Case(ALTER, ApiKey.ALTER_PARTITION_REASSIGNMENTS, "unknown_broker", unknown_broker, altered,
         refused((0, "INVALID_REPLICA_ASSIGNMENT",
                  f"The manual partition assignment includes broker {UNKNOWN_BROKER}, but no "
                  "such broker is registered.")), listeners=BOTH),
    Case(ALTER, ApiKey.ALTER_PARTITION_REASSIGNMENTS, "broker_twice", twice, altered,
         lambda run: ("NONE", None, [("shared", 0, "INVALID_REPLICA_ASSIGNMENT",
                                      "The manual partition assignment includes the broker "
                                      f"{run.cluster.broker_id} more than once.")]),
         listeners=BOTH),
    Case(ALTER, ApiKey.ALTER_PARTITION_REASSIGNMENTS, "no_replicas", on_shared((0, ())), altered,
         refused((0, "INVALID_REPLICA_ASSIGNMENT",
                  "The manual partition assignment includes an empty replica list.")),
         listeners=BOTH),
    Case(ALTER, ApiKey.ALTER_PARTITION_REASSIGNMENTS, "cancel_none_in_progress",
         on_shared((0, None)), altered,
         refused((0, "NO_REASSIGNMENT_IN_PROGRESS", None)),
         listeners=BOTH),
    Case(ALTER, ApiKey.ALTER_PARTITION_REASSIGNMENTS, "in_place", in_place, altered,
         refused((0, "NONE", None), (1, "NONE", None)), listeners=BOTH),
    Case(LIST, ApiKey.LIST_PARTITION_REASSIGNMENTS, "all", lambda run: listing(run, None),
         listed, none_listed, listeners=BOTH),
    Case(LIST, ApiKey.LIST_PARTITION_REASSIGNMENTS, "named",
         lambda run: listing(run, {run.cluster.topic: [0, 1, 7], absent(run): [0]}), listed,
         none_listed, listeners=BOTH),
]
