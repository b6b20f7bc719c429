"""A simulated quorum: nodes, network, disks and the event loop that drives their cores.

Each node's core is driven exactly as a runtime would drive it: inputs carry the virtual
clock, ``ready()`` outputs become scheduled deliveries, flushes and ticks, and its events go
to the node's state machines (the counter, plus ``applications[node]`` if a test adds one)
after the core's step returned. A crash drops
everything in flight for that node and the unflushed tail of its log.

A KIP-853 cluster gives every node a directory id and formats the initial voters with the
bootstrap 0-0 checkpoint (kraft.version 1); a replica without a leader finds it through
the bootstrap servers (every initial node). An administrator (``admin``) sends Add/Remove voter
requests over a reliable link. Every node's state machine snapshots itself every
``SNAPSHOT_EVERY`` committed records, and a small retention limit makes the log start move.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from pykraft.raft.api import OutboundRequest, OutboundResponse, RaftListener, deliver
from pykraft.raft.config import QuorumConfig
from pykraft.raft.core import RaftClient
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.quorum_state import MemoryQuorumStateStore
from pykraft.raft.rpc import RaftRequest, RaftResponse
from pykraft.raft.snapshots import BOOTSTRAP_SNAPSHOT_ID, snapshot_content
from pykraft.raft.states import Leader
from pykraft.raft.voter_set import SUPPORTED_KRAFT_VERSIONS, ReplicaKey, VoterNode, VoterSet
from pykraft.records.batch import RecordBatch, iter_batches
from pykraft.records.control import KRaftVersionRecord, VoterEndpoint
from pykraft.sim.committed_data import CommittedHistory
from pykraft.sim.event_loop import SimLoop
from pykraft.sim.network import LinkProfile, Network, lossy_network
from pykraft.sim.replicated_counter import CounterMachine
from pykraft.sim.trace import describe

ClientFactory = Callable[..., RaftClient]
ADMIN = -100  # routing token of the administrator sending voter changes
HOSTILE = -200  # routing token of injected hostile requests (their answers are dropped)
T = TypeVar("T")
SNAPSHOT_EVERY = 10  # committed data records between snapshots (Kafka's simulation: 10)
LISTENER = "CONTROLLER"


def sim_config(voters: frozenset[int], bootstrap_servers: tuple[int, ...] = ()) -> QuorumConfig:
    """The timings of Kafka's RaftEventSimulationTest (fetch max wait 100, linger small),
    with a snapshot retention small enough that log starts move within a run."""
    return QuorumConfig(
        voters=voters, bootstrap_servers=bootstrap_servers, election_timeout_ms=1000,
        fetch_timeout_ms=3000, election_backoff_max_ms=100, append_linger_ms=5,
        request_timeout_ms=3000, retry_backoff_ms=50, fetch_max_wait_ms=100,
        max_fetch_bytes=4096, snapshot_retention_bytes=3000, snapshot_retention_ms=-1,
    )


def endpoints_of(node_id: int) -> tuple[VoterEndpoint, ...]:
    return (VoterEndpoint(LISTENER, f"node-{node_id}", 9093),)


def read_memory_snapshot(log: MemoryLog, snapshot_id: OffsetAndEpoch) -> list[RecordBatch]:
    size = next(s.size for s in log.snapshots() if s.snapshot_id == snapshot_id)
    return list(iter_batches(log.read_snapshot(snapshot_id, 0, size)))


@dataclass(slots=True)
class SimNode:
    node_id: int
    log: MemoryLog = field(default_factory=MemoryLog)
    store: MemoryQuorumStateStore = field(default_factory=MemoryQuorumStateStore)
    client: RaftClient | None = None
    machine: CounterMachine | None = None
    incarnation: int = 0
    disks: int = 1  # how many disks it had: a wipe starts a new one
    tick_at: int | None = None
    last_state: tuple[str, int] = ("", -1)


class Cluster(SimLoop["Cluster"]):
    """Everything one simulated run owns; all randomness comes from one seeded Random."""

    def __init__(
        self, seed: int, voters: int, observers: int = 0, *,
        client_factory: ClientFactory = RaftClient, lossy: bool = True,
        trace: Callable[[str], None] | None = None, kip853: bool = False,
    ) -> None:
        super().__init__(trace)
        self.rng = random.Random(seed)
        self.kip853 = kip853
        self.voter_ids = frozenset(range(voters))
        self.nodes = {i: SimNode(i) for i in range(voters + observers)}
        self.network = lossy_network(self.rng, self.nodes) if lossy else Network(
            self.rng, LinkProfile())
        self.directory_ids: dict[int, uuid.UUID | None] = {i: None for i in self.nodes}
        self.auto_join: set[int] = set()  # nodes started with auto-join enabled
        self.moved: dict[int, int] = {}  # node -> the port it listens on after a move
        if kip853:
            self.config = sim_config(frozenset(), tuple(sorted(self.nodes)))
            for node_id in self.nodes:
                self.directory_ids[node_id] = uuid.UUID(int=self.rng.getrandbits(128))
            initial = VoterSet(VoterNode(self.key_of(v), endpoints_of(v), SUPPORTED_KRAFT_VERSIONS)
                               for v in self.voter_ids)
            for voter in self.voter_ids:
                self.format_bootstrap(voter, initial)
        else:
            self.config = sim_config(self.voter_ids)
        self.history = CommittedHistory()
        self.admin_replies: dict[int, RaftResponse | None] = {}
        self._admin_correlation = 0
        self.elections = 0
        self._client_factory = client_factory
        self._next_value = 0
        self._reply_to: dict[tuple[int, int, int], int] = {}
        self.garblers: dict[int, Callable[[RaftResponse], RaftResponse]] = {}
        """Responses a (hostile) node sends pass through its garbler, if it has one."""
        self.injected = 0
        self.applications: dict[int, RaftListener] = {}
        """A state machine per node beside its counter (a client factory sets it per start)."""

    # -- node lifecycle ---------------------------------------------------------------

    def key_of(self, node_id: int) -> ReplicaKey:
        return ReplicaKey(node_id, self.directory_ids[node_id])

    def add_node(self) -> int:
        """A brand-new (never formatted as a voter) node; start it to make it an observer."""
        node_id = max(self.nodes) + 1
        self.nodes[node_id] = SimNode(node_id)
        self.directory_ids[node_id] = uuid.UUID(int=self.rng.getrandbits(128)) if (
            self.kip853) else None
        return node_id

    def give_directories(self) -> None:
        """Directory ids for a static cluster too (meta.properties v1 has one): what the
        kraft.version upgrade needs to learn."""
        for node_id in self.nodes:
            if self.directory_ids[node_id] is None:
                self.directory_ids[node_id] = uuid.UUID(int=self.rng.getrandbits(128))

    def listeners_of(self, node_id: int) -> tuple[VoterEndpoint, ...]:
        port = self.moved.get(node_id)
        if port is None:
            return endpoints_of(node_id)
        return tuple(VoterEndpoint(e.name, e.host, port) for e in endpoints_of(node_id))

    def call(self, node_id: int, action: Callable[[RaftClient, int], T]) -> T | None:
        """Run ``action(client, now)`` on a live node and carry out what it produced."""
        node = self.nodes[node_id]
        if node.client is None:
            return None
        result = action(node.client, self.queue.now_ms)
        self._drain(node)
        return result

    def format_bootstrap(self, node_id: int, voters: VoterSet) -> None:
        """``storage format --initial-controllers``: the 0-0 checkpoint with the voters."""
        sink = self.nodes[node_id].log.create_snapshot(BOOTSTRAP_SNAPSHOT_ID)
        for data in snapshot_content(BOOTSTRAP_SNAPSHOT_ID, timestamp_ms=0, batches=(),
                                     header_records=(KRaftVersionRecord(0, 1),
                                                     voters.to_record())):
            sink.write(data)
        sink.freeze()

    def start(self, node_id: int) -> None:
        node = self.nodes[node_id]
        node.incarnation += 1
        log = node.log
        node.machine = CounterMachine(node_id, self.history,
                                      lambda sid: read_memory_snapshot(log, sid))
        node.tick_at = None
        config = dataclasses.replace(self.config, local_listeners=self.listeners_of(node_id),
                                     auto_join=node_id in self.auto_join)
        node.client = self._client_factory(
            node_id, config, node.log, node.store,
            rng=random.Random(self.rng.getrandbits(64)), now_ms=self.queue.now_ms,
            directory_id=self.directory_ids[node_id],
        )
        self._log(f"start node {node_id}")
        self._drain(node)

    def start_all(self) -> None:
        for node_id in self.nodes:
            self.start(node_id)

    def kill(self, node_id: int) -> None:
        """Crash: in-flight messages and unflushed data are lost; quorum-state survives."""
        node = self.nodes[node_id]
        node.client = None
        node.machine = None
        node.incarnation += 1
        node.log.lose_unflushed()
        self._reply_to = {k: v for k, v in self._reply_to.items() if k[0] != node_id}
        self._log(f"kill node {node_id}")

    def wipe(self, node_id: int) -> None:
        """A killed node loses its whole disk (log, snapshots and quorum-state); in a KIP-853
        cluster it is formatted again with a new directory id, so it is a new replica."""
        node = self.nodes[node_id]
        node.log.wipe()
        node.store.wipe()
        node.disks += 1
        if self.kip853:
            self.directory_ids[node_id] = uuid.UUID(int=self.rng.getrandbits(128))
        self._log(f"wipe node {node_id}")

    def graceful_stop(self, node_id: int, max_wait_ms: int = 5000) -> None:
        node = self.nodes[node_id]
        client = node.client
        if client is None:
            return
        client.begin_shutdown(self.queue.now_ms)
        self._drain(node)
        self.run_until(lambda: client.shutdown_complete, max_wait_ms, require=False)
        node.log.flush(node.log.log_end_offset)
        self.kill(node_id)

    def is_alive(self, node_id: int) -> bool:
        return self.nodes[node_id].client is not None

    def live_clients(self) -> list[RaftClient]:
        return [n.client for n in self.nodes.values() if n.client is not None]

    # -- observations used by scenarios and invariants --------------------------------

    def leader(self) -> RaftClient | None:
        """The live leader of the highest epoch, if any."""
        leaders = [c for c in self.live_clients() if isinstance(c.state, Leader)]
        return max(leaders, key=lambda c: c.epoch, default=None)

    def leader_id(self) -> int | None:
        leader = self.leader()
        return None if leader is None else leader.node_id

    def committed(self, node_id: int) -> int:
        machine = self.nodes[node_id].machine
        return -1 if machine is None else machine.next_offset

    def all_committed(self, offset: int, nodes: list[int] | None = None) -> bool:
        ids = nodes if nodes is not None else [i for i in self.nodes if self.is_alive(i)]
        return all(self.committed(i) >= offset for i in ids)

    def max_log_end(self) -> int:
        return max(n.log.log_end_offset for n in self.nodes.values())

    # -- administrator ----------------------------------------------------------------

    def admin(self, target: int, request: RaftRequest) -> int:
        """Send a request to ``target`` over a reliable link; its answer (None if the target
        was down) lands in ``admin_replies`` under the returned correlation id."""
        self._admin_correlation += 1
        correlation = self._admin_correlation
        node = self.nodes[target]

        def deliver() -> None:
            client = node.client
            if client is None:
                self.admin_replies[correlation] = None
                return
            self._reply_to[(target, ADMIN, correlation)] = 0
            client.handle_request(self.queue.now_ms, ADMIN, correlation, request)
            self._drain(node)
        self.queue.schedule(self.queue.now_ms + 1, f"admin->{target} {type(request).__name__}",
                            deliver)
        return correlation
    def inject(self, target: int, request: RaftRequest) -> None:
        """Hand ``request`` to a live ``target`` now, as if a peer had sent it; the answer
        goes nowhere (the hostile-voter fault forges requests in a real voter's name)."""
        if not self.is_alive(target):
            return
        self.injected += 1
        correlation = self.injected
        self._log(f"hostile->{target} {describe(request)}")
        self.call(target, lambda client, now: client.handle_request(now, HOSTILE, correlation,
                                                                     request))

    # -- driving ----------------------------------------------------------------------

    def schedule_appends(self, every_ms: int = 50) -> None:
        """The workload: the leader appends one counter record every ``every_ms``."""
        def action() -> None:
            leader = self.leader()
            if leader is not None and leader.leader_and_epoch == self._notified(leader):
                self._next_value += 1
                leader.append(self.queue.now_ms, [str(self._next_value).encode()])
                self._drain(self.nodes[leader.node_id])
            self.queue.schedule(self.queue.now_ms + every_ms, "append", action)
        self.queue.schedule(self.queue.now_ms + every_ms, "append", action)

    def _notified(self, client: RaftClient) -> object:
        machine = self.nodes[client.node_id].machine
        return None if machine is None else machine.leader

    def _drain(self, node: SimNode) -> None:
        """Carry out the core's outputs: events first (a state machine may call back into
        the core, e.g. to snapshot), then every message, the flush and the tick timer."""
        client = node.client
        if client is None:
            return
        ready = client.ready()
        requests: list[OutboundRequest] = list(ready.requests)
        responses: list[OutboundResponse] = list(ready.responses)
        flush = ready.flush
        while ready.events and node.machine is not None:
            extra = self.applications.get(node.node_id)
            deliver(ready.events, node.machine, *(() if extra is None else (extra,)))
            self._maybe_snapshot(node, client)
            ready = client.ready()
            requests += ready.requests
            responses += ready.responses
            flush = ready.flush or flush
        now = self.queue.now_ms
        incarnation = node.incarnation
        for out in requests:
            self._send_request(node.node_id, incarnation, out.destination, out.correlation_id,
                               out.request)
        for resp in responses:
            self._send_response(node.node_id, resp.destination, resp.correlation_id,
                                resp.response)
        if flush is not None:
            offset = flush.up_to_offset
            self.queue.schedule(now + self.rng.randint(1, 5), f"flush {node.node_id}->{offset}",
                                lambda: self._flush(node, incarnation, offset))
        if node.tick_at is None or ready.next_tick_ms < node.tick_at or node.tick_at < now:
            node.tick_at = ready.next_tick_ms
            at = ready.next_tick_ms
            self.queue.schedule(at, f"tick {node.node_id}",
                                lambda: self._tick(node, incarnation, at))
        before, after = node.last_state, (client.state.name, client.epoch)
        if after != before:
            node.last_state = after
            if after[0] == "Leader":
                self.elections += 1
            self._log(f"node {node.node_id}: {before[0]}@{before[1]} -> {after[0]}@{after[1]}")

    def _maybe_snapshot(self, node: SimNode, client: RaftClient) -> None:
        """The state machine snapshots its counter every SNAPSHOT_EVERY committed records."""
        machine = node.machine
        if machine is None or machine.count - machine.snapshot_count < SNAPSHOT_EVERY:
            return
        snapshot_id = OffsetAndEpoch(machine.next_offset, machine.last_epoch)
        if any(s.snapshot_id >= snapshot_id for s in node.log.snapshots()):
            machine.snapshot_count = machine.count
            return
        self.history.check_snapshot(node.node_id, snapshot_id.offset, machine.count)
        client.create_snapshot(self.queue.now_ms, snapshot_id, [[str(machine.count).encode()]])
        machine.snapshot_count = machine.count
        self._log(f"node {node.node_id}: snapshot {snapshot_id.offset}@{snapshot_id.epoch}")

    def _alive_as(self, node: SimNode, incarnation: int) -> RaftClient | None:
        return node.client if node.incarnation == incarnation else None

    def _tick(self, node: SimNode, incarnation: int, at: int) -> None:
        client = self._alive_as(node, incarnation)
        if client is None or node.tick_at != at:
            return
        node.tick_at = None
        client.tick(self.queue.now_ms)
        self._drain(node)

    def _flush(self, node: SimNode, incarnation: int, offset: int) -> None:
        client = self._alive_as(node, incarnation)
        if client is None:
            return
        node.log.flush(offset)
        client.flush_completed(self.queue.now_ms, offset)
        self._drain(node)

    def _send_request(self, source: int, incarnation: int, destination: int, correlation: int,
                      request: RaftRequest) -> None:
        src_node = self.nodes[source]
        name = describe(request) if self._trace else type(request).__name__
        if destination not in self.nodes or self.network.is_blocked(source, destination):
            self.queue.schedule(self.queue.now_ms + 1, f"refused {source}->{destination} {name}",
                                lambda: self._fail(src_node, incarnation, destination,
                                                   correlation))
            return
        delay = self.network.delay_ms(source, destination)
        if delay is None:
            self._lost(src_node, incarnation, destination, correlation, f"{source}->{destination}")
            return
        dst_node = self.nodes[destination]

        def deliver() -> None:
            client = dst_node.client
            if client is None or self.network.is_blocked(source, destination):
                return
            self._reply_to[(destination, source, correlation)] = incarnation
            client.handle_request(self.queue.now_ms, source, correlation, request)
            self._drain(dst_node)
        self.queue.schedule(self.queue.now_ms + delay, f"{source}->{destination} {name}", deliver)

    def _lost(self, requester: SimNode, incarnation: int, peer: int, correlation: int,
              link: str) -> None:
        """A lost message breaks the connection, as with TCP: the requester hears of it."""
        self.queue.schedule(self.queue.now_ms + self.rng.randint(1, 100), f"lost {link}",
                            lambda: self._fail(requester, incarnation, peer, correlation))

    def _fail(self, node: SimNode, incarnation: int, destination: int, correlation: int) -> None:
        client = self._alive_as(node, incarnation)
        if client is not None:
            client.handle_send_failure(self.queue.now_ms, destination, correlation)
            self._drain(node)

    def _send_response(self, source: int, destination: int, correlation: int,
                       response: RaftResponse) -> None:
        incarnation = self._reply_to.pop((source, destination, correlation), None)
        if destination == ADMIN and incarnation is not None:
            self.queue.schedule(self.queue.now_ms + 1, f"{source}->admin {describe(response)}",
                                lambda: self.admin_replies.__setitem__(correlation, response))
            return
        if incarnation is None or self.network.is_blocked(source, destination):
            return
        garble = self.garblers.get(source)
        if garble is not None:
            response = garble(response)
        delay = self.network.delay_ms(source, destination)
        dst_node = self.nodes[destination]
        if delay is None:
            self._lost(dst_node, incarnation, source, correlation, f"{source}->{destination}")
            return

        def deliver() -> None:
            client = self._alive_as(dst_node, incarnation)
            if client is None or self.network.is_blocked(source, destination):
                return
            client.handle_response(self.queue.now_ms, source, correlation, response)
            self._drain(dst_node)
        name = describe(response) if self._trace else type(response).__name__
        self.queue.schedule(self.queue.now_ms + delay, f"{source}->{destination} {name}", deliver)
