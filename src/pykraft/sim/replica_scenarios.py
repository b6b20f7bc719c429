"""The replication scenarios: one partition on 3-5 brokers (min.insync.replicas 1 or 2)
under crashes, partitions, leader changes and hostile requests. Each phase must finish
within PHASE_MS of simulated time (else Liveness); the invariants of
:mod:`pykraft.sim.replica_invariants` hold after every event.

The ``replica-failover-*`` scenarios aim at the controller's fast failover
(:mod:`pykraft.sim.replica_liveness`): a crashed leader is fenced on its refused listeners,
before its session expires (FastFailover); a paused broker, a lossy or blocked link to the
controller and a slow disk fence nobody (NoFalseFencing, and PausedBrokerKept: the pause
is shorter than a session); a crash and a quick restart race the evidence about the old
incarnation against the new one's registration.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.sim.network import LinkProfile
from pykraft.sim.replica_cluster import SESSION_TIMEOUT_MS, ReplicaCluster
from pykraft.sim.replica_liveness import CONTROLLER, OVERDUE_MS
from pykraft.sim.violations import InvariantViolation

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


def failover_leader_crash(cluster: ReplicaCluster, rng: random.Random) -> None:
    """The leader is SIGKILLed: its refused listeners fence it, not its session."""
    leader = begin(cluster)
    full_isr(cluster, "before the crash")
    epoch = cluster.brokers[leader].broker_epoch
    cluster.kill(leader)
    new_leader(cluster, leader, "a new leader after the crash")
    if (leader, epoch) not in cluster.controller.refusal_fences:
        raise InvariantViolation(
            "FastFailover", f"crashed leader {leader} (epoch {epoch}) was replaced without "
            f"being fenced on its refused listeners")
    progress(cluster, "writes without the old leader")
    cluster.restart(leader)
    full_isr(cluster, "the old leader catches up")


def failover_paused(cluster: ReplicaCluster, rng: random.Random) -> None:
    """A broker (the leader or not) is paused past its overdue heartbeats, three times."""
    begin(cluster)
    broker = rng.choice(sorted(cluster.brokers))
    epoch = cluster.brokers[broker].broker_epoch
    for _ in range(3):
        cluster.pause(broker, rng.randint(OVERDUE_MS + 20, SESSION_TIMEOUT_MS - 10))
        cluster.run_until(lambda: broker not in cluster.paused, PHASE_MS,
                          what=f"broker {broker} resumes")
        progress(cluster, f"writes after broker {broker} resumed")
    if cluster.controller.broker_epochs.get(broker) != epoch:
        raise InvariantViolation(
            "PausedBrokerKept", f"broker {broker}, paused for less than a session, lost its "
            f"registration (epoch {epoch})")
    full_isr(cluster, "after the pauses")


def failover_lossy_link(cluster: ReplicaCluster, rng: random.Random) -> None:
    """One broker's link to the controller loses messages, then is blocked for a while."""
    begin(cluster)
    broker = rng.choice(sorted(cluster.brokers))
    lossy = LinkProfile(1, rng.choice((10, 30)), rng.choice((0.1, 0.3, 0.6)))
    for source, destination in ((broker, CONTROLLER), (CONTROLLER, broker)):
        cluster.network.set_link(source, destination, lossy)
    cluster.run_for(rng.randint(200, 1000))
    progress(cluster, f"writes while broker {broker}'s controller link is lossy")
    cluster.network.isolate(broker, (CONTROLLER,))
    cluster.run_for(rng.randint(OVERDUE_MS, 4 * OVERDUE_MS))
    cluster.network.heal()
    for source, destination in ((broker, CONTROLLER), (CONTROLLER, broker)):
        cluster.network.set_link(source, destination, LinkProfile())
    full_isr(cluster, "after the link heals")
    progress(cluster, "writes after the link heals")


def failover_slow_disk(cluster: ReplicaCluster, rng: random.Random) -> None:
    """Some brokers' disks turn slow: everything they do is late, their network is fine."""
    begin(cluster)
    brokers = sorted(cluster.brokers)
    for broker in rng.sample(brokers, rng.randint(1, len(brokers))):
        cluster.slow_disk_ms[broker] = rng.randint(5, 20)
    cluster.run_for(rng.randint(200, 1000))
    progress(cluster, "writes on slow disks")
    cluster.slow_disk_ms.clear()
    full_isr(cluster, "after the disks recover")


def failover_quick_restart(cluster: ReplicaCluster, rng: random.Random) -> None:
    """Brokers crash and restart within a probe's round trip or a few: evidence about the
    old incarnation must not fence the new one."""
    begin(cluster)
    for _ in range(3):
        full_isr(cluster, "before the crash")
        broker = rng.choice(sorted(cluster.brokers))
        if cluster.kill(broker):
            cluster.run_for(rng.randint(0, 15))
            cluster.restart(broker)
    full_isr(cluster, "after the restarts")
    progress(cluster, "writes after the restarts")


def elr_recovery(cluster: ReplicaCluster, rng: random.Random) -> None:
    """KIP-966's promise: followers stop cleanly until the ISR is the leader alone (the
    last one to leave is eligible: the high watermark stops), the leader crashes, comes
    back uncleanly (no longer eligible), and the clean ones come back: an eligible one
    leads, holding every committed record. Without eligible leader replicas the leader is
    never left alone in the ISR to crash."""
    leader = begin(cluster)
    full_isr(cluster, "before the stops")
    for follower in [b for b in cluster.controller.assignment.replicas if b != leader]:
        cluster.stop(follower)
        cluster.run_for(rng.randint(0, 200))
    if cluster.kill(leader):
        cluster.run_for(SESSION_TIMEOUT_MS + 100)
        cluster.restart(leader)
    for broker_id in sorted(cluster.stopped_cleanly):
        cluster.run_for(rng.randint(0, 100))
        cluster.restart(broker_id)
    full_isr(cluster, "after the restarts")
    progress(cluster, "writes after the recovery")


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
    ReplicaScenario("replica-failover-leader-crash", "a crashed leader is fenced on its refused "
                    "listeners, before its session expires", failover_leader_crash),
    ReplicaScenario("replica-failover-paused", "a paused broker is probed and not fenced",
                    failover_paused),
    ReplicaScenario("replica-failover-lossy-link", "a lossy, then blocked, link to the controller "
                    "fences nobody", failover_lossy_link),
    ReplicaScenario("replica-failover-slow-disk", "slow disks fence nobody", failover_slow_disk),
    ReplicaScenario("replica-failover-quick-restart", "crashes and quick restarts: stale evidence "
                    "does not fence the new incarnation", failover_quick_restart),
    ReplicaScenario("replica-elr-recovery", "clean stops leave the leader alone in the ISR, "
                    "it crashes: an eligible leader replica takes over", elr_recovery),
)}
#: A replication scenario's name with this suffix runs with eligible leader replicas on.
ELR_SUFFIX = "+elr"
