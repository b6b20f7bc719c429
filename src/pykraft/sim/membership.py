"""Snapshot and membership scenarios (KIP-630, KIP-853), and lossy-link leadership.

Voter changes go through :meth:`Cluster.admin` to whoever leads, and are retried on the
answers that mean "not now" (another change pending, not the leader, no answer) until the
change is committed or the phase bound runs out.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.reconfig import Refusal
from pykraft.raft.voter_set import ReplicaKey, VoterSet
from pykraft.sim.invariants import StableLeadership
from pykraft.sim.network import LinkProfile
from pykraft.sim.phases import PHASE_MS, elect, new_leader, progress
from pykraft.sim.simulated_cluster import Cluster, endpoints_of
from pykraft.sim.violations import InvariantViolation

_NOT_NOW = {ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_LEADER_OR_FOLLOWER,
            ErrorCode.BROKER_NOT_AVAILABLE}
_REPLY_WAIT_MS = 8_000
_ADD_TIMEOUT_MS = 5_000


def _committed_set(cluster: Cluster) -> VoterSet | None:
    leader = cluster.leader()
    if leader is None or leader.high_watermark is None:
        return None
    return leader.control_state.voter_set_at(leader.high_watermark - 1)


def _committed_voters(cluster: Cluster) -> frozenset[ReplicaKey]:
    voters = _committed_set(cluster)
    return frozenset() if voters is None else voters.keys


def _await_voters(cluster: Cluster, done: Callable[[VoterSet], bool], what: str) -> None:
    """The replicas change the voter set on their own: wait for the committed result."""
    def reached() -> bool:
        voters = _committed_set(cluster)
        return voters is not None and done(voters)
    cluster.run_until(reached, PHASE_MS, what=what)


def _change(cluster: Cluster, make: Callable[[], rpc.RaftRequest],
            done: Callable[[frozenset[ReplicaKey]], bool], what: str) -> None:
    """Ask the leader for a voter change until ``done`` holds for the committed voters."""
    deadline = cluster.queue.now_ms + PHASE_MS
    while not done(_committed_voters(cluster)):
        leader = cluster.leader_id()
        if leader is not None:
            reply = _ask(cluster, leader, make())
            error = None if reply is None else reply.error_code
            if error is not None and error != ErrorCode.NONE and error not in _NOT_NOW and (
                    not done(_committed_voters(cluster))):
                raise InvariantViolation("Reconfiguration",
                                         f"{what}: refused with {ErrorCode(error).name}")
        if cluster.queue.now_ms > deadline:
            raise InvariantViolation("Liveness", f"{what} not committed within {PHASE_MS} ms")
        cluster.run_for(200)


def _ask(cluster: Cluster, target: int, request: rpc.RaftRequest) -> rpc.RaftResponse | None:
    correlation = cluster.admin(target, request)
    cluster.run_until(lambda: correlation in cluster.admin_replies, _REPLY_WAIT_MS,
                      require=False)
    return cluster.admin_replies.get(correlation)


def add_voter(cluster: Cluster, node_id: int) -> None:
    key = cluster.key_of(node_id)
    listeners = [(e.name, e.host, e.port) for e in endpoints_of(node_id)]
    _change(cluster,
            lambda: rpc.add_voter_request(None, node_id, key.directory_id, listeners,
                                          timeout_ms=_ADD_TIMEOUT_MS),
            lambda voters: key in voters, f"add voter {key}")


def remove_voter_key(cluster: Cluster, key: ReplicaKey) -> None:
    _change(cluster, lambda: rpc.remove_voter_request(None, key.id, key.directory_id),
            lambda voters: key not in voters, f"remove voter {key}")


def _voter_key(cluster: Cluster, node_id: int) -> ReplicaKey:
    leader = cluster.leader()
    node = None if leader is None else leader.voters.node(node_id)
    return cluster.key_of(node_id) if node is None else node.key


def _follower_voter(cluster: Cluster, rng: random.Random, leader: int) -> int:
    leader_client = cluster.leader()
    voters = sorted(leader_client.voters.ids if leader_client else cluster.voter_ids)
    return rng.choice([v for v in voters if v != leader])


# -- scenarios ---------------------------------------------------------------------------

def lossy_link_leadership(cluster: Cluster, rng: random.Random) -> None:
    """A follower's link to the leader loses 30% of messages both ways: leadership stays."""
    leader = elect(cluster)
    follower = _follower_voter(cluster, rng, leader)
    for a, b in ((leader, follower), (follower, leader)):
        cluster.network.set_link(a, b, LinkProfile(1, 10, 0.3))
    leader_client = cluster.leader()
    assert leader_client is not None
    cluster.invariants.append(StableLeadership(leader, leader_client.epoch))
    progress(cluster, what="commits through a lossy leader link")
    cluster.run_for(4 * cluster.config.fetch_timeout_ms)


def snapshot_catch_up(cluster: Cluster, rng: random.Random) -> None:
    """A follower down while the log start moves past its log end loads a snapshot."""
    leader = elect(cluster)
    follower = _follower_voter(cluster, rng, leader)
    cluster.kill(follower)
    behind = cluster.nodes[follower].log.log_end_offset
    cluster.run_until(
        lambda: all(cluster.nodes[i].log.log_start_offset > behind
                    for i in cluster.nodes if cluster.is_alive(i)),
        PHASE_MS, what=f"log start passes the end of node {follower}'s log ({behind})")
    cluster.start(follower)
    progress(cluster, what=f"node {follower} catches up through a snapshot")
    machine = cluster.nodes[follower].machine
    if machine is None or machine.loads == 0:
        raise InvariantViolation("SnapshotCatchUp", f"node {follower} never loaded a snapshot")


def add_voter_partitioned(cluster: Cluster, rng: random.Random) -> None:
    leader = elect(cluster)
    observer = max(cluster.nodes)
    cut_off = _follower_voter(cluster, rng, leader)
    cluster.network.isolate(cut_off, cluster.nodes)
    add_voter(cluster, observer)
    progress(cluster, [i for i in cluster.nodes if i != cut_off], what="after the add")
    cluster.network.heal()
    progress(cluster, what="everyone after healing")


def remove_voter(cluster: Cluster, rng: random.Random) -> None:
    leader = elect(cluster)
    victim = leader if rng.random() < 0.5 else _follower_voter(cluster, rng, leader)
    remove_voter_key(cluster, _voter_key(cluster, victim))
    if victim == leader:
        new_leader(cluster, victim, "leader after the old one removed itself")
    progress(cluster, what=f"after removing voter {victim}")


def swap_partitioned_voter(cluster: Cluster, rng: random.Random) -> None:
    leader = elect(cluster)
    observer = max(cluster.nodes)
    cut_off = _follower_voter(cluster, rng, leader)
    cluster.network.isolate(cut_off, cluster.nodes)
    remove_voter_key(cluster, _voter_key(cluster, cut_off))
    add_voter(cluster, observer)
    progress(cluster, [i for i in cluster.nodes if i != cut_off], what="after the swap")
    cluster.network.heal()
    progress(cluster, what="everyone after healing")


def disk_failure(cluster: Cluster, rng: random.Random) -> None:
    """The voter comes back as a new replica (same id, new directory id): the old key is
    removed, then the new one added (one voter id appears once in a voter set)."""
    leader = elect(cluster)
    victim = _follower_voter(cluster, rng, leader)
    old_key = _voter_key(cluster, victim)
    cluster.kill(victim)
    cluster.wipe(victim)
    cluster.start(victim)
    progress(cluster, what=f"node {victim} with a new disk catches up as an observer")
    remove_voter_key(cluster, old_key)
    add_voter(cluster, victim)
    progress(cluster, what=f"after replacing {old_key} by {cluster.key_of(victim)}")


def node_failure(cluster: Cluster, rng: random.Random) -> None:
    """A voter dies for good; a brand-new node, found through bootstrap servers, replaces it."""
    leader = elect(cluster)
    dead = _follower_voter(cluster, rng, leader)
    fresh = cluster.add_node()
    cluster.start(fresh)
    cluster.kill(dead)
    progress(cluster, what=f"new node {fresh} catches up")
    add_voter(cluster, fresh)
    remove_voter_key(cluster, _voter_key(cluster, dead))
    progress(cluster, what=f"after replacing {dead} by {fresh}")


def membership_churn(cluster: Cluster, rng: random.Random) -> None:
    """Voter changes fired without waiting (the leader must refuse all but one at a time)
    while nodes crash and restart."""
    elect(cluster)
    for _ in range(8):
        leader = cluster.leader()
        action = rng.choice(("crash", "add", "remove", "both"))
        if action == "crash":
            victim = rng.choice(sorted(cluster.nodes))
            cluster.kill(victim)
            cluster.run_for(rng.randint(0, 2000))
            cluster.start(victim)
        elif leader is not None:
            voters = leader.voters
            outsiders = [i for i in cluster.nodes if not voters.is_voter(cluster.key_of(i))]
            requests: list[rpc.RaftRequest] = []
            if action in ("add", "both") and outsiders:
                node_id = rng.choice(outsiders)
                requests.append(rpc.add_voter_request(
                    None, node_id, cluster.key_of(node_id).directory_id,
                    [(e.name, e.host, e.port) for e in endpoints_of(node_id)],
                    timeout_ms=_ADD_TIMEOUT_MS))
            if action in ("remove", "both") and len(voters) > 1:
                key = rng.choice(sorted(voters.keys))
                requests.append(rpc.remove_voter_request(None, key.id, key.directory_id))
            rng.shuffle(requests)
            for request in requests:
                cluster.admin(leader.node_id, request)
        cluster.run_for(rng.randint(500, 3000))
    for node_id in cluster.nodes:
        if not cluster.is_alive(node_id):
            cluster.start(node_id)
    progress(cluster, what="everyone after the churn")


def auto_join(cluster: Cluster, rng: random.Random) -> None:
    """Observers started with auto-join become voters on their own, one change at a time,
    even when one of them crashes on the way."""
    joining = sorted(i for i in cluster.nodes if i not in cluster.voter_ids)
    cluster.auto_join.update(joining)
    elect(cluster)
    if rng.random() < 0.5:
        victim = rng.choice(joining)
        cluster.run_for(rng.randint(0, 2000))
        cluster.kill(victim)
        cluster.run_for(rng.randint(0, 2000))
        cluster.start(victim)
    wanted = {cluster.key_of(i) for i in cluster.nodes}
    _await_voters(cluster, lambda voters: wanted <= voters.keys,
                  f"observers {joining} auto-join")
    progress(cluster, what="after the auto-joins")


def disk_failure_auto_join(cluster: Cluster, rng: random.Random) -> None:
    """A voter back with a new disk and auto-join removes its old key, then adds itself."""
    leader = elect(cluster)
    victim = _follower_voter(cluster, rng, leader)
    old_key = _voter_key(cluster, victim)
    cluster.kill(victim)
    cluster.wipe(victim)
    cluster.auto_join.add(victim)
    cluster.start(victim)
    new_key = cluster.key_of(victim)
    _await_voters(cluster, lambda voters: new_key in voters.keys and old_key not in voters.keys,
                  f"node {victim} replaces {old_key} by {new_key} on its own")
    progress(cluster, what=f"after node {victim} rejoined")


def static_upgrade(cluster: Cluster, rng: random.Random) -> None:
    """A static quorum finalizes kraft.version 1 (its voters told the leader their
    directories), survives a full restart half of the time, then changes voters."""
    cluster.give_directories()
    elect(cluster)
    deadline = cluster.queue.now_ms + PHASE_MS
    while True:
        current = cluster.leader()
        if current is not None and current.kraft_version == 1:
            break
        leader = cluster.leader_id()
        if leader is not None:
            result = cluster.call(leader, lambda client, now: client.upgrade_kraft_version(now, 1))
            if isinstance(result, Refusal) and result.error != ErrorCode.REQUEST_TIMED_OUT:
                raise InvariantViolation("Reconfiguration", f"upgrade refused: {result.message}")
        if cluster.queue.now_ms > deadline:
            raise InvariantViolation("Liveness", f"no kraft.version upgrade in {PHASE_MS} ms")
        cluster.run_for(200)
    _await_voters(cluster, lambda voters: all(k.directory_id is not None for k in voters.keys),
                  "the first VotersRecord commits")
    if rng.random() < 0.5:
        for node_id in cluster.nodes:
            cluster.kill(node_id)
        cluster.run_for(rng.randint(0, 2000))
        cluster.start_all()
    progress(cluster, what="after the upgrade")
    observers = sorted(i for i in cluster.nodes if i not in cluster.voter_ids)
    if observers:
        add_voter(cluster, observers[0])
    else:
        leader = cluster.leader_id()
        remove_voter_key(cluster, _voter_key(cluster, _follower_voter(
            cluster, rng, -1 if leader is None else leader)))
    progress(cluster, what="after a voter change on the upgraded quorum")
    stale = [c.node_id for c in cluster.live_clients() if c.kraft_version != 1]
    if stale:
        raise InvariantViolation("KRaftVersionUpgrade", f"nodes {stale} still at version 0")


def voter_moves(cluster: Cluster, rng: random.Random) -> None:
    """A voter (the leader half of the time) restarts on another port: its UpdateRaftVoter
    (or, as leader, its own rewrite) puts the new endpoint in the committed voter set."""
    leader = elect(cluster)
    mover = leader if rng.random() < 0.5 else _follower_voter(cluster, rng, leader)
    cluster.kill(mover)
    cluster.moved[mover] = 19093
    cluster.start(mover)
    expected = set(cluster.listeners_of(mover))

    def moved(voters: VoterSet) -> bool:
        node = voters.node(mover)
        return node is not None and set(node.endpoints) == expected
    _await_voters(cluster, moved, f"voter {mover}'s new endpoint commits")
    progress(cluster, what=f"after voter {mover} moved")
