"""The simulated scenarios: Kafka's RaftEventSimulationTest cases, pre-vote stability, and
the snapshot and membership-change scenarios of :mod:`pykraft.sim.membership`.

Each scenario draws its shape (voter and observer counts, who fails) from its own seeded
Random and drives the cluster through phases; a phase that does not finish within its
simulated-time bound is a Liveness violation.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.raft.rpc import RaftResponse
from pykraft.sim import membership
from pykraft.sim.hostile import RESPONSE_HEADER_FIELDS, random_malformation, request_templates
from pykraft.sim.invariants import (
    Invariant,
    MonotonicHighWatermark,
    SingleLeader,
    StableLeadership,
    default_invariants,
    majority_reached_high_watermark,
)
from pykraft.sim.phases import PHASE_MS, PROGRESS, elect, new_leader, progress
from pykraft.sim.simulated_cluster import Cluster
from pykraft.sim.violations import InvariantViolation


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    shape: Callable[[random.Random], tuple[int, int]]  # (voters, observers)
    drive: Callable[[Cluster, random.Random], None]
    invariants: Callable[[], list[Invariant]] = default_invariants
    lossy_network: bool = True
    kip853: bool | None = None  # None: each seed draws static or dynamic voters


def initial_election(cluster: Cluster, rng: random.Random) -> None:
    elect(cluster)


def leader_failure(cluster: Cluster, rng: random.Random) -> None:
    leader = elect(cluster)
    if rng.random() < 0.5:
        cluster.graceful_stop(leader)
    else:
        cluster.kill(leader)
    new_leader(cluster, leader, "leader after the old one stopped")
    progress(cluster, what="progress without the old leader")
    cluster.start(leader)
    progress(cluster, what="restarted leader catches up")


def all_killed(cluster: Cluster, rng: random.Random) -> None:
    elect(cluster)
    for node_id in cluster.nodes:
        cluster.kill(node_id)
    voters = sorted(cluster.voter_ids)
    majority = rng.sample(voters, len(voters) // 2 + 1)
    for node_id in sorted(majority):
        cluster.start(node_id)
    progress(cluster, what="a restarted majority commits")


def leader_partitioned(cluster: Cluster, rng: random.Random) -> None:
    leader = elect(cluster)
    cluster.network.isolate(leader, cluster.nodes)
    successor = new_leader(cluster, leader, "leader on the majority side")
    others = [i for i in cluster.nodes if i != leader]
    progress(cluster, others, what=f"majority side of new leader {successor}")
    cluster.network.heal()
    progress(cluster, what="everyone after healing")


def majority_split(cluster: Cluster, rng: random.Random) -> None:
    elect(cluster)
    voters = sorted(cluster.voter_ids)
    rng.shuffle(voters)
    minority, majority = voters[:2], voters[2:]
    cluster.network.partition(minority, majority)
    progress(cluster, majority, what="majority side of a 2|3 split")
    if max(cluster.committed(i) for i in minority) >= min(cluster.committed(i) for i in majority):
        raise InvariantViolation("MajorityProgress", "the minority side committed as much")
    cluster.network.heal()
    progress(cluster, what="everyone after healing")


def back_to_back_failures(cluster: Cluster, rng: random.Random) -> None:
    first = elect(cluster)
    cluster.network.isolate(first, cluster.nodes)
    second = new_leader(cluster, first, "leader after the first is isolated")
    cluster.network.heal()
    cluster.network.isolate(second, cluster.nodes)
    new_leader(cluster, second, "leader after the second is isolated")
    cluster.network.heal()
    progress(cluster, what="everyone after two leader failures")


def committed_data_loss(cluster: Cluster, rng: random.Random) -> None:
    """Safe only while the other voters hold the committed data: a reliable network and a
    fully caught-up cluster before the wipe, as in Kafka's test."""
    elect(cluster)
    cluster.run_until(lambda: cluster.all_committed(cluster.max_log_end() - 2), PHASE_MS,
                      what="everyone caught up before the wipe")
    victim = rng.choice(sorted(cluster.voter_ids))
    cluster.kill(victim)
    cluster.wipe(victim)
    cluster.start(victim)
    progress(cluster, what=f"node {victim} recovers its lost committed data")


PING_PONG_EDGES = ((0, 2), (1, 3), (2, 3), (2, 4), (3, 4))


def stable_leadership(cluster: Cluster, rng: random.Random) -> None:
    """KIP-996's topology: without pre-vote, nodes 1 and 3 would steal leadership in turn."""
    leader = elect(cluster)
    others = [i for i in sorted(cluster.voter_ids) if i != leader]
    rng.shuffle(others)
    roles = {2: leader, 0: others[0], 1: others[1], 3: others[2], 4: others[3]}
    cluster.network.allow_only(cluster.voter_ids,
                               [(roles[a], roles[b]) for a, b in PING_PONG_EDGES])
    leader_client = cluster.leader()
    assert leader_client is not None
    cluster.invariants.append(StableLeadership(leader, leader_client.epoch))
    target = cluster.committed(leader) + 3 * PROGRESS
    cluster.run_until(lambda: cluster.committed(leader) >= target, PHASE_MS,
                      what="leader keeps committing through the ping-pong topology")
    cluster.run_for(2 * cluster.config.fetch_timeout_ms)


HOSTILE_EVERY_MS = 20


def hostile_voter(cluster: Cluster, rng: random.Random) -> None:
    """One voter's messages turn malformed: every HOSTILE_EVERY_MS each other live node
    gets a request forged in its name with a malformed value in one integer field, and a
    third of its answers carry one in their leader id or epoch. The quorum keeps committing,
    through the leader's failure too (a node stopping would raise out of the run)."""
    leader = elect(cluster)
    hostile = rng.choice(sorted(cluster.voter_ids))

    def garble(response: RaftResponse) -> RaftResponse:
        if rng.random() < 1 / 3:
            return random_malformation(response, rng, RESPONSE_HEADER_FIELDS)
        return response
    cluster.garblers[hostile] = garble

    def attack() -> None:
        for target in sorted(cluster.nodes):
            client = cluster.nodes[target].client
            if target != hostile and client is not None:
                template = rng.choice(request_templates(hostile, client))
                cluster.inject(target, random_malformation(template, rng))
        cluster.queue.schedule(cluster.queue.now_ms + HOSTILE_EVERY_MS, "hostile", attack)
    cluster.queue.schedule(cluster.queue.now_ms + HOSTILE_EVERY_MS, "hostile", attack)
    progress(cluster, what=f"progress while voter {hostile} is hostile")
    if leader != hostile:
        cluster.kill(leader)
        new_leader(cluster, leader, "leader after the old one was killed, under hostility")
        cluster.start(leader)
    progress(cluster, what="every node commits under hostility")


def _loss_invariants() -> list[Invariant]:
    return [SingleLeader(), MonotonicHighWatermark()]


def _disk_loss_invariants() -> list[Invariant]:
    """A lost disk may hold part of the majority behind the HWM: with KIP-853 that costs
    availability (the old replica key can no longer vote), not committed data."""
    return [i for i in default_invariants() if i is not majority_reached_high_watermark]


def _voters(low: int, high: int, max_observers: int) -> Callable[[random.Random], tuple[int, int]]:
    return lambda rng: (rng.randint(low, high), rng.randint(0, max_observers))


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("initial-election", "1-5 voters, 0-5 observers elect and commit",
             _voters(1, 5, 5), initial_election),
    Scenario("leader-failure", "leader killed or stopped; new leader; old one catches up",
             _voters(3, 5, 2), leader_failure),
    Scenario("all-killed", "every node killed, a majority restarted",
             _voters(3, 5, 2), all_killed),
    Scenario("leader-partitioned", "leader cut off; majority elects and commits; heal",
             _voters(3, 5, 2), leader_partitioned),
    Scenario("majority-split", "5 voters split 2|3; only the majority commits; heal",
             lambda rng: (5, rng.randint(0, 2)), majority_split),
    Scenario("back-to-back-failures", "two leaders isolated one after the other",
             _voters(3, 5, 2), back_to_back_failures),
    Scenario("committed-data-loss", "one node loses its whole disk and recovers",
             _voters(3, 5, 2), committed_data_loss, _loss_invariants, lossy_network=False),
    Scenario("stable-leadership", "pre-vote keeps the leader in the ping-pong topology",
             lambda rng: (5, 0), stable_leadership),
    Scenario("lossy-link-leadership", "one very lossy leader link never changes the leader",
             _voters(3, 5, 0), membership.lossy_link_leadership, lossy_network=False),
    Scenario("snapshot-catch-up", "a follower far behind the log start loads a snapshot",
             _voters(3, 5, 2), membership.snapshot_catch_up),
    Scenario("add-voter-partitioned", "add an observer while a voter is partitioned",
             lambda rng: (rng.randint(3, 4), 1), membership.add_voter_partitioned,
             kip853=True),
    Scenario("remove-voter", "remove a voter, the leader half of the time",
             _voters(3, 5, 1), membership.remove_voter, kip853=True),
    Scenario("swap-partitioned-voter", "replace a partitioned voter by an observer",
             lambda rng: (rng.randint(3, 4), 1), membership.swap_partitioned_voter,
             kip853=True),
    Scenario("disk-failure", "a voter loses its disk, comes back with a new directory id",
             _voters(3, 5, 1), membership.disk_failure, _disk_loss_invariants, kip853=True),
    Scenario("node-failure", "a new node found through bootstrap servers replaces a dead voter",
             _voters(3, 5, 1), membership.node_failure, kip853=True),
    Scenario("membership-churn", "concurrent voter changes under crashes and restarts",
             lambda rng: (3, 2), membership.membership_churn, kip853=True),
    Scenario("auto-join", "observers with auto-join become voters on their own",
             lambda rng: (rng.randint(1, 3), rng.randint(1, 2)), membership.auto_join,
             kip853=True),
    Scenario("disk-failure-auto-join", "a voter with a new disk replaces its old key itself",
             _voters(3, 5, 1), membership.disk_failure_auto_join, _disk_loss_invariants,
             kip853=True),
    Scenario("static-upgrade", "a static quorum upgrades to kraft.version 1, then changes",
             _voters(3, 5, 1), membership.static_upgrade, kip853=False),
    Scenario("voter-moves", "a voter restarts on a new port; the voter set follows",
             _voters(3, 5, 1), membership.voter_moves, kip853=True),
    Scenario("hostile-voter", "one voter sends malformed requests and garbled answers",
             _voters(3, 5, 1), hostile_voter),
)}
