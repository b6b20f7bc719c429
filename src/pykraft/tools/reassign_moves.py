"""Replica moves between a broker's log directories for ``pykraft reassign-partitions``
(the ``log_dirs`` of a reassignment other than ``any``): Kafka 4.4's
``ReassignPartitionsCommand`` ``executeMoves``, ``findLogDirMoveStates`` and
``replicaMoveStatesToString`` over AlterReplicaLogDirs and DescribeLogDirs.

Interface::

    where = await replica_dirs(clients, replicas, live)   # Replica -> LogDirs
    lines = await execute_moves(clients, {replica: dir}, timeout_ms=10_000)
    lines, ongoing = move_lines(targets, where)            # --verify's report

A replica on a live broker is described by that broker's DescribeLogDirs: its current log
dir and its future one (AlterReplicaLogDirs copying it), either None (Kafka's admin client
``describeReplicaLogDirs``); a replica on a broker not live is left out. ``execute_moves``
sends AlterReplicaLogDirs to each replica's broker until every replica's move started,
REPLICA_NOT_AVAILABLE (the replica is not there yet: the partition reassignment is still
adding it) asked again every 100 ms up to ``timeout_ms``; another error fails the tool.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pykraft.ids import TopicPartition
from pykraft.messages.kafka.alter_replica_log_dirs_request import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirTopic,
)
from pykraft.messages.kafka.alter_replica_log_dirs_response import AlterReplicaLogDirsResponse
from pykraft.messages.kafka.describe_log_dirs_request import (
    DescribableLogDirTopic,
    DescribeLogDirsRequest,
)
from pykraft.messages.kafka.describe_log_dirs_response import DescribeLogDirsResponse
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.broker_clients import BrokerClients
from pykraft.tools.reassign_plan import ReassignError, Replica, TerseError, plural

#: Kafka's tool asks again this often while a replica is not available yet.
RETRY_MS = 100


@dataclass(frozen=True, slots=True)
class LogDirs:
    """Where a replica's logs are: its current log dir and its future one."""

    current: str | None = None
    future: str | None = None


def _name(replica: Replica) -> str:
    """Kafka's ``TopicPartitionReplica.toString``."""
    topic, index, broker = replica
    return f"{topic}-{index}-{broker}"


def _order(replica: Replica) -> tuple[int, str, int]:
    """Kafka's ``compareTopicPartitionReplicas``: broker, topic, partition."""
    return replica[2], replica[0], replica[1]


async def replica_dirs(clients: BrokerClients,
                       replicas: Mapping[TopicPartition, Sequence[int]],
                       live: Sequence[int]) -> dict[Replica, LogDirs]:
    """Each replica on a live broker with its log dirs (offline dirs are skipped)."""
    found: dict[Replica, LogDirs] = {}
    for broker in sorted({b for rs in replicas.values() for b in rs if b in live}):
        by_topic: dict[str, list[int]] = {}
        for topic, index in sorted(tp for tp, rs in replicas.items() if broker in rs):
            by_topic.setdefault(topic, []).append(index)
            found[(topic, index, broker)] = LogDirs()
        answer = await clients.request_to(broker, DescribeLogDirsRequest(topics=tuple(
            DescribableLogDirTopic(topic=t, partitions=tuple(i)) for t, i in by_topic.items())))
        assert isinstance(answer, DescribeLogDirsResponse)
        for result in answer.results:
            if result.error_code != ErrorCode.NONE:
                continue
            for t in result.topics:
                for p in t.partitions:
                    replica = (t.name, p.partition_index, broker)
                    before = found.get(replica, LogDirs())
                    found[replica] = (LogDirs(before.current, result.log_dir) if p.is_future_key
                                      else LogDirs(result.log_dir, before.future))
    return found


async def _alter(clients: BrokerClients, pending: Mapping[Replica, str]) -> list[Replica]:
    """One AlterReplicaLogDirs per broker; the replicas whose move started."""
    started = []
    for broker in sorted({b for _, _, b in pending}):
        by_dir: dict[str, dict[str, list[int]]] = {}
        for (topic, index, owner), path in sorted(pending.items()):
            if owner == broker:
                by_dir.setdefault(path, {}).setdefault(topic, []).append(index)
        answer = await clients.request_to(broker, AlterReplicaLogDirsRequest(dirs=tuple(
            AlterReplicaLogDir(path=path, topics=tuple(
                AlterReplicaLogDirTopic(name=t, partitions=tuple(i)) for t, i in topics.items()))
            for path, topics in by_dir.items())))
        assert isinstance(answer, AlterReplicaLogDirsResponse)
        codes = {(t.topic_name, p.partition_index): p.error_code
                 for t in answer.results for p in t.partitions}
        for replica in sorted(r for r in pending if r[2] == broker):
            code = codes.get(replica[:2], ErrorCode.UNKNOWN_SERVER_ERROR)
            if code == ErrorCode.NONE:
                started.append(replica)
            elif code != ErrorCode.REPLICA_NOT_AVAILABLE:
                raise ReassignError(f"Failed to alter dir for {_name(replica)}")
    return started


async def execute_moves(clients: BrokerClients, moves: Mapping[Replica, str], *,
                        timeout_ms: int, printed: str = "") -> list[str]:
    """Kafka's ``executeMoves``: the lines printed as each replica's move starts; a failure
    carries them after ``printed`` (what the tool printed before)."""
    deadline = time.monotonic() + timeout_ms / 1000
    pending = dict(moves)
    lines: list[str] = []
    try:
        while pending:
            for replica in sorted(await _alter(clients, pending), key=_order):
                topic, index, broker = replica
                lines.append(f"Successfully started moving log directory to "
                             f"{pending.pop(replica)} for replica {topic}-{index} with broker "
                             f"{broker} ")
            if pending and time.monotonic() >= deadline:
                raise TerseError(f"Timed out before log directory move{plural(pending)} could "
                                 "be started for: " + ",".join(
                                     _name(r) for r in sorted(pending, key=_order)))
            if pending:
                await asyncio.sleep(RETRY_MS / 1000)  # the replica may not be there yet
    except ReassignError as exc:
        raise type(exc)(str(exc), printed + "".join(f"{line}\n" for line in lines)) from None
    return lines


def active_moves(targets: Mapping[Replica, str], where: Mapping[Replica, LogDirs]
                 ) -> dict[Replica, str]:
    """The named replicas being moved now, with their current log dirs (what a cancel
    moves them back to)."""
    return {replica: dirs.current for replica in targets
            if (dirs := where.get(replica)) is not None and dirs.current is not None
            and dirs.future is not None}


def move_lines(targets: Mapping[Replica, str], where: Mapping[Replica, LogDirs]
               ) -> tuple[list[str], bool]:
    """Kafka's ``replicaMoveStatesToString``, and whether a move is still going on."""
    lines = []
    ongoing = False
    for replica in sorted(targets, key=_order):
        topic, index, broker = replica
        target, dirs = targets[replica], where.get(replica)
        if dirs is None:
            lines.append(f"Partition {topic}-{index} cannot be found in any live log "
                         f"directory on broker {broker}.")
        elif dirs.current is None:
            lines.append(f"Partition {topic}-{index} is not found in any live log dir on "
                         f"broker {broker}. There is likely an offline log directory on the "
                         "broker.")
        elif dirs.future is not None:
            ongoing = True
            lines.append(f"Reassignment of replica {_name(replica)} is still in progress."
                         if dirs.future == target else
                         f"Partition {topic}-{index} on broker {broker} is being moved to log "
                         f"dir {dirs.future} instead of {target}.")
        elif dirs.current == target:
            lines.append(f"Reassignment of replica {_name(replica)} completed successfully.")
        else:
            lines.append(f"Partition {topic}-{index} on broker {broker} is not being moved "
                         f"from log dir {dirs.current} to {target}.")
    return lines, ongoing
