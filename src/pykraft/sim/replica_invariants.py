"""The replication simulation's safety invariants, checked after every event.

* CommittedPrefixesEqual: below its high watermark, every replica's log equals the
  committed history (which the first replica to show an offset committed writes).
* AckedWritesKept: every live ISR member holds the committed history up to the last
  acknowledged acks=all write or consumed record (none is lost while the ISR keeps a live
  member, which :meth:`~pykraft.sim.replica_cluster.ReplicaCluster.kill` guarantees).
* HighWatermarkWithinIsr: the leader's high watermark is never above the log end of a
  live member of the ISR.
* MonotonicLeaderHighWatermark: a leader's high watermark never goes back within its epoch.
* ElrLeaderHadCommitted: a replica elected from the eligible leader replicas (KIP-966: the
  ISR was empty) holds every committed record.
* NoFalseFencing: the controller's fast failover never fences a broker, on the evidence of
  refused connections, while the incarnation it fenced still runs (paused or not).

A consumer served a record not (yet) committed breaks NoReadPastHighWatermark, and an
acknowledged acks=all write missing from the history AckedWriteCommitted, where they happen
(:mod:`pykraft.sim.replica_cluster`).
"""

from __future__ import annotations

from collections.abc import Callable

from pykraft.sim.replica_cluster import ReplicaCluster
from pykraft.sim.violations import InvariantViolation

ReplicaInvariant = Callable[[ReplicaCluster], None]


class ReplicaLogs:
    """CommittedPrefixesEqual and AckedWritesKept, over the prefix of each replica's log
    already known to equal the history (only what was truncated is checked again)."""

    def __init__(self) -> None:
        self._agreed: dict[int, int] = {}

    def __call__(self, cluster: ReplicaCluster) -> None:
        history = cluster.history
        isr = cluster.controller.assignment.isr
        for broker_id, broker in cluster.brokers.items():
            log = broker.log
            agreed = min(self._agreed.get(broker_id, 0), log.take_dirty(), log.end_offset)
            while agreed < log.high_watermark:
                record = log.records[agreed]
                if agreed == len(history):
                    history.append(record)
                elif history[agreed] != record:
                    raise InvariantViolation(
                        "CommittedPrefixesEqual",
                        f"broker {broker_id} has {record} at offset {agreed} below its high "
                        f"watermark {log.high_watermark}; committed history has "
                        f"{history[agreed]}")
                agreed += 1
            if broker.alive and broker_id in isr:
                agreed = self._holds_protected(cluster, broker_id, agreed)
            self._agreed[broker_id] = agreed

    @staticmethod
    def _holds_protected(cluster: ReplicaCluster, broker_id: int, agreed: int) -> int:
        log, end = cluster.brokers[broker_id].log, cluster.protected_end
        while agreed < end:
            if agreed >= log.end_offset or log.records[agreed] != cluster.history[agreed]:
                found = log.records[agreed] if agreed < log.end_offset else "nothing"
                raise InvariantViolation(
                    "AckedWritesKept",
                    f"ISR member {broker_id} has {found} at offset {agreed}, committed "
                    f"{cluster.history[agreed]} (acknowledged or consumed up to {end})")
            agreed += 1
        return agreed


def high_watermark_within_isr(cluster: ReplicaCluster) -> None:
    leader = cluster.leader()
    if leader is None:
        return
    hw = leader.log.high_watermark
    for member in cluster.controller.assignment.isr:
        broker = cluster.brokers[member]
        if broker.alive and broker.log.end_offset < hw:
            raise InvariantViolation(
                "HighWatermarkWithinIsr",
                f"leader {leader.broker_id} has high watermark {hw}; ISR member {member} "
                f"ends at {broker.log.end_offset}")


class MonotonicLeaderHighWatermark:
    def __init__(self) -> None:
        self._seen: dict[tuple[int, int, int], int] = {}

    def __call__(self, cluster: ReplicaCluster) -> None:
        for broker in cluster.brokers.values():
            rep = broker.replication
            if rep is None:
                continue
            key = (broker.broker_id, broker.incarnation, rep.leader_epoch)
            hw = broker.log.high_watermark
            if hw < self._seen.get(key, 0):
                raise InvariantViolation(
                    "MonotonicLeaderHighWatermark",
                    f"leader {broker.broker_id} of epoch {rep.leader_epoch}: high watermark "
                    f"{hw} after {self._seen[key]}")
            self._seen[key] = hw


class NoFalseFencing:
    def __init__(self) -> None:
        self._checked = 0

    def __call__(self, cluster: ReplicaCluster) -> None:
        fences = cluster.controller.refusal_fences
        for broker_id, epoch in fences[self._checked:]:
            broker = cluster.brokers[broker_id]
            if broker.alive and broker.broker_epoch == epoch:
                state = "paused" if broker_id in cluster.paused else "running"
                raise InvariantViolation(
                    "NoFalseFencing",
                    f"broker {broker_id} fenced at epoch {epoch} on refused connections "
                    f"while that incarnation is {state}")
        self._checked = len(fences)


class ElrLeaderHadCommitted:
    def __init__(self) -> None:
        self._checked = 0

    def __call__(self, cluster: ReplicaCluster) -> None:
        elected = cluster.controller.elr_elections
        for broker_id in elected[self._checked:]:
            log, history = cluster.brokers[broker_id].log, cluster.history
            held = next((offset for offset, record in enumerate(history)
                         if offset >= log.end_offset or log.records[offset] != record),
                        len(history))
            if held < len(history):
                raise InvariantViolation(
                    "ElrLeaderHadCommitted",
                    f"broker {broker_id}, elected from the ELR, holds the committed history "
                    f"only up to offset {held} of {len(history)}")
        self._checked = len(elected)


def replica_invariants() -> list[ReplicaInvariant]:
    return [ElrLeaderHadCommitted(), ReplicaLogs(), high_watermark_within_isr,
            MonotonicLeaderHighWatermark(), NoFalseFencing()]
