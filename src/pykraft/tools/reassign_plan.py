"""The pure half of ``pykraft reassign-partitions`` (Kafka's ReassignPartitionsCommand): its
JSON files, its checks, the throttles a move needs and the lines it prints.

Interface::

    parts, dirs = parse_reassignment(text)      # [(tp, replicas)], {(topic, p, broker): dir}
    proposed, dirs = parse_execute(text)        # the same, checked as --execute checks it
    topics = parse_topics(text)                 # --topics-to-move-json-file
    reassignment_json({tp: replicas}, dirs)     # {"version":1,"partitions":[...]}
    moves = proposed_moves(ongoing, proposed, current)   # {topic: {p: Move}}
    leader_throttles(moves) / follower_throttles(moves) / reassigning_brokers(moves)
    status_lines(states) / ongoing_lines(ongoing)

A partition's throttles are Kafka's: its leader-side list names every source replica (the
replicas it has, or had when a reassignment began), the follower-side list every destination
that is not a source; every broker of either gets both rates. The JSON is Jackson's compact
form, partitions by topic then partition.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pykraft.errors import UsageError
from pykraft.ids import TopicPartition
from pykraft.tools.broker_clients import tp_name

ANY_LOG_DIR = "any"
#: (topic, partition, broker): Kafka's TopicPartitionReplica.
Replica = tuple[str, int, int]
Parsed = tuple[list[tuple[TopicPartition, list[int]]], dict[Replica, str]]


class ReassignError(UsageError):
    """A refusal Kafka's tool prints as ``Error: <message>`` (an exception it does not
    expect), after the ``output`` printed before it."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


class TerseError(ReassignError):
    """Kafka's TerseException: printed as the message alone."""


@dataclass(frozen=True, slots=True)
class Move:
    """A partition's move: where its data comes from and the replicas it goes to."""

    sources: frozenset[int]
    destinations: frozenset[int]


@dataclass(frozen=True, slots=True)
class Ongoing:
    """A reassignment the controller lists: all replicas, those added, those removed."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PartitionState:
    """Kafka's PartitionReassignmentState: where a partition is, where it should be and
    whether its reassignment is over."""

    current: tuple[int, ...]
    target: tuple[int, ...]
    done: bool


def _document(text: str) -> dict[str, Any]:
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ReassignError(f"The input string is not a valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ReassignError(f"Expected JSON object, received {json.dumps(document)}")
    version = document.get("version", 1)
    if version != 1:
        raise ReassignError(f"Not supported version field value {version}")
    return document


def _field(entry: Any, name: str) -> Any:
    if not isinstance(entry, dict):
        raise ReassignError(f"Expected JSON object, received {json.dumps(entry)}")
    if name not in entry:
        raise ReassignError(f"No such field exists: `{name}`")
    return entry[name]


def _typed(value: Any, kind: type, what: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ReassignError(f"Expected `{what}` value, received {json.dumps(value)}")
    return value


def _entries(document: dict[str, Any], key: str) -> list[Any]:
    entries = document.get(key, [])
    if not isinstance(entries, list):
        raise ReassignError(f"Expected JSON array, received {json.dumps(entries)}")
    return entries


def parse_topics(text: str) -> list[str]:
    """The topics of a ``--topics-to-move-json-file``: ``{"topics": [{"topic": "a"}]}``."""
    return [_typed(_field(entry, "topic"), str, "String")
            for entry in _entries(_document(text), "topics")]


def parse_reassignment(text: str) -> Parsed:
    """The partitions of a ``--reassignment-json-file`` with their replicas (duplicates
    kept, for :func:`parse_execute` to refuse), and the log dirs named other than
    ``any``."""
    parts: list[tuple[TopicPartition, list[int]]] = []
    dirs: dict[Replica, str] = {}
    for entry in _entries(_document(text), "partitions"):
        topic = _typed(_field(entry, "topic"), str, "String")
        partition = _typed(_field(entry, "partition"), int, "Int")
        replicas = [_typed(r, int, "Int") for r in _typed(_field(entry, "replicas"), list,
                                                          "Array")]
        log_dirs = entry.get("log_dirs")
        if log_dirs is None:
            log_dirs = [ANY_LOG_DIR] * len(replicas)
        log_dirs = [_typed(d, str, "String") for d in _typed(log_dirs, list, "Array")]
        if len(replicas) != len(log_dirs):
            raise ReassignError(
                f"Size of replicas list {_java_list(replicas)} is different from size of log "
                f"dirs list {_java_list(log_dirs)} for partition {topic}-{partition}")
        parts.append((TopicPartition(topic, partition), replicas))
        dirs.update(((topic, partition, replica), log_dir)
                    for replica, log_dir in zip(replicas, log_dirs, strict=True)
                    if log_dir != ANY_LOG_DIR)
    return parts, dirs


def parse_execute(text: str) -> tuple[dict[TopicPartition, list[int]], dict[Replica, str]]:
    """The reassignment ``--execute`` starts, with Kafka's refusals."""
    parts, dirs = parse_reassignment(text)
    if not parts:
        raise ReassignError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in parts):
        raise ReassignError("Partition replica list cannot be empty")
    named = [tp for tp, _ in parts]
    twice = sorted({tp for tp in named if named.count(tp) > 1})
    if twice:
        raise ReassignError("Partition reassignment contains duplicate topic partitions: "
                            + ",".join(tp_name(tp) for tp in twice))
    repeated = [(tp, sorted({r for r in replicas if replicas.count(r) > 1}))
                for tp, replicas in parts]
    messages = [f"{tp_name(tp)} contains multiple entries for {','.join(map(str, rs))}"
                for tp, rs in repeated if rs]
    if messages:
        raise ReassignError("Partition replica lists may not contain duplicate entries: "
                            + ". ".join(messages))
    return dict(parts), dirs


def parse_broker_list(text: str) -> list[int]:
    """``--broker-list 1,2,3``, refusing duplicates."""
    try:
        brokers = [int(b) for b in text.split(",")]
    except ValueError as exc:
        raise ReassignError(str(exc)) from None
    twice = sorted({b for b in brokers if brokers.count(b) > 1})
    if twice:
        raise ReassignError(f"Broker list contains duplicate entries: {_java_list(twice)}")
    return brokers


def reassignment_json(assignment: Mapping[TopicPartition, Sequence[int]],
                      dirs: Mapping[Replica, str]) -> str:
    """Kafka's ``formatAsReassignmentJson``."""
    return json.dumps({"version": 1, "partitions": [
        {"topic": tp[0], "partition": tp[1], "replicas": list(assignment[tp]),
         "log_dirs": [dirs.get((tp[0], tp[1], r), ANY_LOG_DIR) for r in assignment[tp]]}
        for tp in sorted(assignment)]}, separators=(",", ":"))


def proposed_moves(ongoing: Mapping[TopicPartition, Ongoing],
                   proposed: Mapping[TopicPartition, Sequence[int]],
                   current: Mapping[TopicPartition, Sequence[int]]
                   ) -> dict[str, dict[int, Move]]:
    """Kafka's ``calculateProposedMoveMap``: the ongoing reassignments' moves (their
    sources: the replicas not being added), then each proposed partition's, from the
    sources of its ongoing move or else its current replicas."""
    moves: dict[str, dict[int, Move]] = {}
    for (topic, partition), now in ongoing.items():
        moves.setdefault(topic, {})[partition] = Move(
            frozenset(now.replicas) - frozenset(now.adding), frozenset(now.adding))
    for (topic, partition), replicas in proposed.items():
        by_partition = moves.setdefault(topic, {})
        if partition in by_partition:
            sources = by_partition[partition].sources
        else:
            sources = frozenset(current[TopicPartition(topic, partition)])
        by_partition[partition] = Move(sources, frozenset(replicas) - sources)
    return moves


def leader_throttles(moves: Mapping[str, Mapping[int, Move]]) -> dict[str, str]:
    """``leader.replication.throttled.replicas`` per topic: ``partition:source``, sorted
    as strings (Kafka's TreeSet)."""
    return {topic: ",".join(sorted(f"{p}:{s}" for p, move in parts.items()
                                   for s in move.sources))
            for topic, parts in moves.items()}


def follower_throttles(moves: Mapping[str, Mapping[int, Move]]) -> dict[str, str]:
    """``follower.replication.throttled.replicas`` per topic: ``partition:destination``."""
    return {topic: ",".join(sorted(f"{p}:{d}" for p, move in parts.items()
                                   for d in move.destinations if d not in move.sources))
            for topic, parts in moves.items()}


def reassigning_brokers(moves: Mapping[str, Mapping[int, Move]]) -> list[int]:
    return sorted({b for parts in moves.values() for move in parts.values()
                   for b in move.sources | move.destinations})


def status_lines(states: Mapping[TopicPartition, PartitionState]) -> list[str]:
    """Kafka's ``partitionReassignmentStatesToString``."""
    lines = ["Status of partition reassignment:"]
    for tp in sorted(states):
        state = states[tp]
        if not state.done:
            lines.append(f"Reassignment of partition {tp_name(tp)} is still in progress.")
        elif state.current == state.target:
            lines.append(f"Reassignment of partition {tp_name(tp)} is completed.")
        else:
            lines.append(f"There is no active reassignment of partition {tp_name(tp)}, but "
                         f"replica set is {_joined(state.current)} rather than "
                         f"{_joined(state.target)}.")
    return lines


def ongoing_lines(ongoing: Mapping[TopicPartition, Ongoing]) -> list[str]:
    """Kafka's ``curReassignmentsToString``."""
    if not ongoing:
        return ["No partition reassignments found."]
    lines = ["Current partition reassignments:"]
    for tp in sorted(ongoing):
        now = ongoing[tp]
        line = f"{tp_name(tp)}: replicas: {_joined(now.replicas)}."
        if now.adding:
            line += f" adding: {_joined(now.adding)}."
        if now.removing:
            line += f" removing: {_joined(now.removing)}."
        lines.append(line)
    return lines


def plural(items: Iterable[object]) -> str:
    """Kafka's ``size == 1 ? "" : "s"``."""
    return "" if len(list(items)) == 1 else "s"


def _joined(ids: Iterable[int]) -> str:
    return ",".join(map(str, ids))


def _java_list(items: Sequence[object]) -> str:
    return "[" + ", ".join(map(str, items)) + "]"
