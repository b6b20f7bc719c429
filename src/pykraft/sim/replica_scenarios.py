"""The replication scenarios: one partition on 3-5 brokers (min.insync.replicas 1 or 2)
under crashes, partitions, leader changes and hostile requests. Each phase must finish
within PHASE_MS of simulated time (else Liveness); the invariants of
:mod:`pykraft.sim.replica_invariants` hold after every event.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.sim.replica_cluster import ReplicaCluster

PHASE_MS = 20_000
PROGRESS = 10  # acks=all acknowledgements each progress phase must add
CHURN_STEPS = 12
CHURN_STEP_MS = 300


@dataclass(frozen=True, slots=True)
class ReplicaScenario:
    name: str
    description: str
    drive: Callable[[ReplicaCluster, random.Random], None]


def shape(rng: random.Random) -> tuple[int, int]:
    """(brokers, min.insync.replicas) of a run: a min ISR below the replication factor,
    so one replica out of the ISR still takes acks=all writes."""
    brokers = rng.randint(3, 5)
    return brokers, rng.choice((1, 2, 2))


def progress(cluster: ReplicaCluster, what: str) -> None:
    target = cluster.acked_all + PROGRESS
    cluster.run_until(lambda: cluster.acked_all >= target, PHASE_MS,
                      what=f"{what}: {PROGRESS} more acks=all writes acknowledged")


def full_isr(cluster: ReplicaCluster, what: str) -> None:
    cluster.run_until(cluster.full_isr, PHASE_MS, what=f"{what}: every replica back in the ISR")


def begin(cluster: ReplicaCluster) -> int:
    cluster.start_all()
    progress(cluster, "initial writes")
    return cluster.controller.leader


def new_leader(cluster: ReplicaCluster, old: int, what: str) -> None:
    cluster.run_until(lambda: cluster.leader() is not None and cluster.controller.leader != old,
                      PHASE_MS, what=what)


def steady(cluster: ReplicaCluster, rng: random.Random) -> None:
    begin(cluster)
    cluster.run_for(1000)
    progress(cluster, "steady state")


def leader_crash(cluster: ReplicaCluster, rng: random.Random) -> None:
    leader = begin(cluster)
    full_isr(cluster, "before the crash")
    cluster.kill(leader)
    new_leader(cluster, leader, "a new leader after the crash")
    progress(cluster, "writes without the old leader")
    cluster.restart(leader)
    full_isr(cluster, "the old leader catches up")
    progress(cluster, "writes after the restart")


def follower_crashes(cluster: ReplicaCluster, rng: random.Random) -> None:
    leader = begin(cluster)
    for _ in range(3):
        follower = rng.choice([b for b in cluster.live_brokers() if b != leader])
        cluster.kill(follower)
        progress(cluster, f"writes while follower {follower} is down")
        cluster.restart(follower)
        full_isr(cluster, f"follower {follower} catches up")


def follower_partitioned(cluster: ReplicaCluster, rng: random.Random) -> None:
    leader = begin(cluster)
    follower = rng.choice([b for b in cluster.brokers if b != leader])
    cluster.network.isolate(follower, cluster.brokers)
    cluster.run_until(lambda: follower not in cluster.controller.assignment.isr, PHASE_MS,
                      what=f"isolated follower {follower} leaves the ISR")
    progress(cluster, "writes without the isolated follower")
    cluster.network.heal()
    full_isr(cluster, f"follower {follower} rejoins")
    progress(cluster, "writes after healing")


def leader_isolated(cluster: ReplicaCluster, rng: random.Random) -> None:
    """The leader loses its followers but not the controller: it keeps taking acks=1
    writes in its epoch while the controller moves leadership (if an ISR member is left),
    so it must truncate its divergent suffix when the network heals."""
    leader = begin(cluster)
    cluster.network.isolate(leader, cluster.brokers)
    cluster.run_for(rng.randint(0, 400))
    others = [b for b in cluster.controller.assignment.isr if b != leader]
    if others and cluster.controller.elect(rng.choice(others)):
        new_leader(cluster, leader, "a leader on the majority side")
        progress(cluster, "writes on the majority side")
    cluster.network.heal()
    full_isr(cluster, "everyone after healing")
    progress(cluster, "writes after healing")


def churn(cluster: ReplicaCluster, rng: random.Random) -> None:
    """Random crashes, restarts, isolations, heals and elections, then recovery."""
    begin(cluster)
    brokers = sorted(cluster.brokers)
    for _ in range(CHURN_STEPS):
        broker = rng.choice(brokers)
        action = rng.choice(("kill", "restart", "isolate", "heal", "elect"))
        if action == "kill":
            cluster.kill(broker)
        elif action == "restart":
            cluster.restart(broker)
        elif action == "isolate":
            cluster.network.isolate(broker, brokers)
        elif action == "heal":
            cluster.network.heal()
        else:
            cluster.controller.elect(broker)
        cluster.log(f"churn: {action} {broker}")
        cluster.run_for(rng.randint(1, CHURN_STEP_MS))
    cluster.network.heal()
    for broker in brokers:
        cluster.restart(broker)
    full_isr(cluster, "everyone after the churn")
    progress(cluster, "writes after the churn")


def hostile(cluster: ReplicaCluster, rng: random.Random) -> None:
    leader = begin(cluster)
    cluster.hostile()
    progress(cluster, "writes under malformed requests")
    full_isr(cluster, "before the crash, under malformed requests")
    cluster.kill(leader)
    new_leader(cluster, leader, "a new leader under malformed requests")
    cluster.restart(leader)
    full_isr(cluster, "the old leader rejoins under malformed requests")
    progress(cluster, "writes after the restart, under malformed requests")


REPLICA_SCENARIOS: dict[str, ReplicaScenario] = {s.name: s for s in (
    ReplicaScenario("replica-steady", "one partition replicates and commits", steady),
    ReplicaScenario("replica-leader-crash", "the leader crashes, a new one is elected, the "
                    "old one truncates and rejoins", leader_crash),
    ReplicaScenario("replica-follower-crashes", "followers crash (losing their unflushed "
                    "suffix) and rejoin the ISR", follower_crashes),
    ReplicaScenario("replica-follower-partitioned", "an isolated follower leaves the ISR and "
                    "rejoins after healing", follower_partitioned),
    ReplicaScenario("replica-leader-isolated", "the isolated leader is replaced and truncates "
                    "its divergent writes", leader_isolated),
    ReplicaScenario("replica-churn", "random crashes, partitions and elections",
                    churn),
    ReplicaScenario("replica-hostile", "malformed fetches and forged AlterPartition "
                    "requests, with a leader crash", hostile),
)}
