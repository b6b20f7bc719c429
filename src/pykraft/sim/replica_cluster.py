"""A simulated partition: N brokers replicating one partition (replication factor N), the
controller stand-in, a producer (acks=all and acks=1), a consumer reading committed
records, and faults: crashes and restarts, network partitions, leader elections and a
hostile sender of malformed fetches and AlterPartition requests.

Brokers talk over the lossy :class:`~pykraft.sim.network.Network` (a request lost or
refused times out); the producer and consumer links are never partitioned, nor are the
controller's unless a scenario makes them lossy or blocks them: over those, brokers
heartbeat and the controller probes their listeners, its fast failover
(:mod:`pykraft.sim.replica_liveness`). Every broker flushes its log every
``flush_every_ms`` (drawn per run).

A broker's process can be paused (it runs nothing: what arrives for it, and its own
timers, wait until it resumes; its kernel still accepts connections) or get a slow disk
(everything it does is late by ``slow_disk_ms``). A crash's session expires after
SESSION_TIMEOUT_MS, and so does a pause's if it lasts that long.

Kafka acknowledges acks=all writes once they are in memory on every ISR member, so a crash
of every member holding them loses them (fsync is left to the OS): :meth:`kill` refuses to
crash the last live member of the ISR, which is the condition under which Kafka promises
that an acknowledged write survives.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import TypeVar

from pykraft.controller.broker_liveness import LivenessWatch
from pykraft.image.topics import NO_LEADER
from pykraft.protocol.errors import ErrorCode
from pykraft.replica.leader import IsrProposal, LeaderReplication
from pykraft.sim.event_loop import SimLoop
from pykraft.sim.network import LinkProfile, Network, lossy_network
from pykraft.sim.replica_broker import (
    AlterAnswer,
    MetadataUpdate,
    ReplicationFactory,
    SimBroker,
)
from pykraft.sim.replica_controller import SimController
from pykraft.sim.replica_liveness import CONTROLLER, SimLiveness, WatchFactory
from pykraft.sim.replica_log import Fetch, FetchAnswer, ProduceAnswer, Record
from pykraft.sim.violations import InvariantViolation

A = TypeVar("A")
PRODUCER, CONSUMER, HOSTILE = -2, -3, -4
REQUEST_TIMEOUT_MS = 150
SESSION_TIMEOUT_MS = 200  # a crashed broker is fenced this long after its crash
PRODUCE_EVERY_MS = 10
CONSUME_EVERY_MS = 25
HOSTILE_EVERY_MS = 20
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
#: Malformed values per Fetch field: what no honest replica sends (a negative epoch other
#: than -1, offsets outside the log, ids of no replica). A well-formed lie in a replica's
#: name (a plausible offset, "no epoch") is Byzantine and no Kafka replica can detect it.
MALFORMED_FETCH = {
    "replica_id": (99, -2, *_INT32),
    "broker_epoch": (-2, _INT64[0]),
    "current_leader_epoch": (-2, *_INT32),
    "fetch_offset": (-1, *_INT64),
    "last_fetched_epoch": (_INT32[1],),
}


class ReplicaCluster(SimLoop["ReplicaCluster"]):
    """Everything one simulated replication run owns; all randomness from one Random."""

    def __init__(self, seed: int, brokers: int, min_insync_replicas: int, *,
                 replication_factory: ReplicationFactory = LeaderReplication,
                 watch_factory: WatchFactory = LivenessWatch, lossy: bool = True,
                 elr: bool = False, trace: Callable[[str], None] | None = None) -> None:
        super().__init__(trace)
        self.rng = random.Random(seed)
        ids = tuple(range(brokers))
        self.network = lossy_network(self.rng, ids) if lossy else Network(self.rng,
                                                                           LinkProfile())
        self.min_insync_replicas = min_insync_replicas
        self.flush_every_ms = self.rng.choice((5, 50, 200))
        for broker_id in ids:  # reliable until a scenario says otherwise
            self.network.set_link(broker_id, CONTROLLER, LinkProfile())
            self.network.set_link(CONTROLLER, broker_id, LinkProfile())
        self.controller = SimController(ids, self._publish, elr=elr,
                                        min_insync_replicas=min_insync_replicas)
        self.stopped_cleanly: set[int] = set()
        """Brokers shut down cleanly (flushed): their next registration says so."""
        self.brokers = {i: SimBroker(i, _BrokerProcess(self, i), replication_factory)
                        for i in ids}
        self.paused: set[int] = set()
        self._pauses = 0
        self._pause_of: dict[int, int] = {}
        """A paused broker -> the number of its pause (a later pause is another)."""
        self.slow_disk_ms: dict[int, int] = {}
        self._held: dict[int, list[Callable[[], None]]] = {i: [] for i in ids}
        """What a paused broker will run when it resumes."""
        self.liveness = SimLiveness(self, ids, watch_factory)
        self.history: list[Record] = []
        """The committed records, offset by offset, as replicas' high watermarks show them."""
        self.protected_end = 0
        """Offsets below it hold an acknowledged acks=all write or a record a consumer read."""
        self.acked_all = 0
        self.acked_one = 0
        self._next_value = 0
        self._consumer_offset = 0

    # ------------------------------------------------------------------ BrokerEnv

    @property
    def now_ms(self) -> int:
        return self.queue.now_ms

    def schedule(self, delay_ms: int, label: str, action: Callable[[], None]) -> None:
        self.queue.schedule(self.queue.now_ms + delay_ms, label, action)

    def log(self, text: str) -> None:
        self._log(text)

    def send_fetch(self, source: int, destination: int, request: Fetch,
                   on_answer: Callable[[FetchAnswer], None],
                   on_failure: Callable[[], None]) -> None:
        broker = self.brokers[destination]

        def handle(respond: Callable[[FetchAnswer], None]) -> None:
            answer = broker.handle_fetch(request)
            if answer is not None:
                respond(answer)
        self._rpc(source, destination, "fetch", handle, on_answer, on_failure)

    def send_alter_partition(self, sender: int, proposal: IsrProposal,
                             on_answer: Callable[[AlterAnswer], None]) -> None:
        def arrive() -> None:
            answer = self.controller.alter_partition(sender, proposal)
            self.schedule(self.rng.randint(1, 5), f"controller->{sender} {_name(answer)}",
                          self.in_process(sender, lambda: on_answer(answer)))
        self.schedule(self.rng.randint(1, 5), f"{sender}->controller AlterPartition", arrive)

    # ------------------------------------------------------------------ messaging

    def _rpc(self, source: int, destination: int, name: str,
             handle: Callable[[Callable[[A], None]], None], on_answer: Callable[[A], None],
             on_failure: Callable[[], None]) -> None:
        """A request and its answer over the network; without an answer within
        REQUEST_TIMEOUT_MS (lost, refused, or a dead destination) ``on_failure`` runs."""
        done = False

        def finish(action: Callable[[], None]) -> None:
            nonlocal done
            if not done:
                done = True
                action()
        self.schedule(REQUEST_TIMEOUT_MS, f"timeout {source}->{destination} {name}",
                      self.in_process(source, lambda: finish(on_failure)))
        delay = self.link_delay(source, destination)
        if delay is None:
            return

        def respond(answer: A) -> None:
            back = self.link_delay(destination, source)
            if back is not None:
                self.schedule(back, f"{destination}->{source} {name} answer", self.in_process(
                    source, lambda: finish(lambda: on_answer(answer))))
        self.schedule(delay, f"{source}->{destination} {name}",
                      self.in_process(destination, lambda: handle(respond)))

    def in_process(self, node: int, action: Callable[[], None]) -> Callable[[], None]:
        """``action`` as broker ``node``'s process runs it: held while it is paused, late by
        its slow disk (any other node runs it as it comes)."""
        if node not in self.brokers:
            return action

        def run() -> None:
            if node in self.paused:
                self._held[node].append(action)
            elif slow := self.slow_disk_ms.get(node, 0):
                self.schedule(slow, f"broker {node} slow disk", action)
            else:
                action()
        return run

    def link_delay(self, source: int, destination: int) -> int | None:
        if self.network.is_blocked(source, destination):
            return None
        return self.network.delay_ms(source, destination)

    # ------------------------------------------------------------------ metadata

    def metadata(self) -> MetadataUpdate:
        c = self.controller
        return MetadataUpdate(c.metadata_offset, c.leader, c.assignment, c.brokers)

    def _publish(self) -> None:
        update = self.metadata()
        self._log(f"controller: leader {update.leader} epoch {update.assignment.leader_epoch} "
                  f"ISR {list(update.assignment.isr)} (partition epoch "
                  f"{update.assignment.partition_epoch})")
        for broker in self.brokers.values():
            if broker.alive:
                self.schedule(self.rng.randint(1, 10), f"metadata->{broker.broker_id}",
                              self.in_process(broker.broker_id,
                                              functools.partial(broker.apply, update)))

    # ------------------------------------------------------------------ faults

    def start_all(self) -> None:
        self.liveness.start()
        for broker_id in sorted(self.brokers):
            self.restart(broker_id)
        self._every(PRODUCE_EVERY_MS, "produce", self._produce)
        self._every(CONSUME_EVERY_MS, "consume", self._consume)
        self._every(self.flush_every_ms, "flush", self._flush)

    def restart(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        if broker.alive:
            return
        clean = broker_id in self.stopped_cleanly
        self.stopped_cleanly.discard(broker_id)
        self._log(f"start broker {broker_id}{'' if clean else ' after an unclean shutdown'}")
        epoch = self.controller.register(broker_id, clean=clean)
        broker.start(epoch, self.metadata())
        self.liveness.broker_started(broker_id, broker.incarnation)

    def can_kill(self, broker_id: int) -> bool:
        """Another live ISR member holds what the ISR acknowledged, or (eligible leader
        replicas) a cleanly stopped one of the ELR does: the high watermark has not moved
        since the ISR fell below the min ISR."""
        c = self.controller
        return self.brokers[broker_id].alive and (
            any(b != broker_id and self.brokers[b].alive for b in c.assignment.isr)
            or any(b in self.stopped_cleanly for b in c.elr))

    def stop(self, broker_id: int) -> bool:
        """Shut ``broker_id`` down cleanly: its log flushed, it leaves the ISR (controlled
        shutdown) and its next registration names its epoch; False if it is not running or
        it is the last live ISR member."""
        if not self.can_kill(broker_id):
            return False
        broker = self.brokers[broker_id]
        broker.log.flush()
        self._down(broker_id, "stop broker {broker_id} cleanly")
        self.stopped_cleanly.add(broker_id)
        self.controller.fence(broker_id)
        return True

    def kill(self, broker_id: int) -> bool:
        if not self.can_kill(broker_id):
            return False
        self._down(broker_id, "kill broker {broker_id} (log end {end} after losing the "
                              "unflushed suffix)")
        self._session_expires(broker_id, lambda: True)
        return True

    def _down(self, broker_id: int, what: str) -> None:
        broker = self.brokers[broker_id]
        broker.crash()
        self.paused.discard(broker_id)
        self._pause_of.pop(broker_id, None)
        self._held[broker_id].clear()
        self.liveness.broker_crashed(broker_id)
        self._log(what.format(broker_id=broker_id, end=broker.log.end_offset))

    def pause(self, broker_id: int, ms: int) -> bool:
        """Stop broker ``broker_id``'s process (SIGSTOP) for ``ms``; False if it is not
        running."""
        broker = self.brokers[broker_id]
        if not broker.alive or broker_id in self.paused:
            return False
        self.paused.add(broker_id)
        self._pauses += 1
        self._pause_of[broker_id] = pause = self._pauses
        self._log(f"pause broker {broker_id} for {ms} ms")
        incarnation = broker.incarnation
        self.schedule(ms, f"resume broker {broker_id}",
                      lambda: self._resume(broker_id, incarnation))
        self._session_expires(broker_id, lambda: self._pause_of.get(broker_id) == pause)
        return True

    def _resume(self, broker_id: int, incarnation: int) -> None:
        if not self.runs(broker_id, incarnation):
            return
        self.paused.discard(broker_id)
        self._pause_of.pop(broker_id, None)
        held, self._held[broker_id] = self._held[broker_id], []
        self._log(f"resume broker {broker_id} ({len(held)} events held)")
        for action in held:
            self.schedule(0, f"broker {broker_id} catches up", action)

    def _session_expires(self, broker_id: int, still: Callable[[], bool]) -> None:
        """Fence the broker's current process SESSION_TIMEOUT_MS from now if it is the same
        one then and ``still()`` (it sent no heartbeat all along)."""
        incarnation = self.brokers[broker_id].incarnation

        def expire() -> None:
            if self.brokers[broker_id].incarnation == incarnation and still():
                self.controller.fence(broker_id)
        self.schedule(SESSION_TIMEOUT_MS, f"session of {broker_id} expires", expire)

    def runs(self, broker_id: int, incarnation: int) -> bool:
        """Whether that process of the broker is the one running (paused or not)."""
        broker = self.brokers[broker_id]
        return broker.alive and broker.incarnation == incarnation

    def listening(self, broker_id: int) -> bool:
        """Whether the broker's kernel accepts connects to its listeners (a paused process
        still has them open)."""
        return self.brokers[broker_id].alive

    def live_brokers(self) -> list[int]:
        return [b for b in sorted(self.brokers) if self.brokers[b].alive]

    def leader(self) -> SimBroker | None:
        """The controller's leader, if alive and leading the controller's leader epoch."""
        c = self.controller
        broker = self.brokers.get(c.leader)
        if broker is None or not broker.alive or broker.replication is None:
            return None
        return broker if broker.replication.leader_epoch == c.assignment.leader_epoch else None

    def full_isr(self) -> bool:
        c = self.controller
        return (c.leader != NO_LEADER and len(c.assignment.isr) == len(self.brokers)
                and self.leader() is not None)

    def hostile(self) -> None:
        """From now on, malformed fetches to the leader in a follower's name and forged
        AlterPartition requests to the controller, every HOSTILE_EVERY_MS."""
        self._every(HOSTILE_EVERY_MS, "hostile", self._attack)

    # ------------------------------------------------------------------ workload

    def _every(self, period_ms: int, label: str, action: Callable[[], None]) -> None:
        def run() -> None:
            action()
            self.schedule(period_ms, label, run)
        self.schedule(period_ms, label, run)

    def _flush(self) -> None:
        for broker in self.brokers.values():
            if broker.alive:
                broker.log.flush()

    def _produce(self) -> None:
        leader = self.controller.leader
        if leader == NO_LEADER:
            return
        self._next_value += 1
        value, acks = self._next_value, -1 if self.rng.random() < 0.75 else 1
        broker = self.brokers[leader]

        def handle(respond: Callable[[ProduceAnswer], None]) -> None:
            broker.handle_produce(acks, value, respond)
        self._rpc(PRODUCER, leader, f"produce acks={acks}", handle,
                  lambda answer: self._produced(acks, value, answer), lambda: None)

    def _produced(self, acks: int, value: int, answer: ProduceAnswer) -> None:
        if answer.error != ErrorCode.NONE:
            return
        if acks == 1:
            self.acked_one += 1
            return
        offset = answer.offset
        if offset >= len(self.history) or self.history[offset][1] != value:
            seen = self.history[offset] if offset < len(self.history) else None
            raise InvariantViolation(
                "AckedWriteCommitted",
                f"value {value} acknowledged (acks=all) at offset {offset}, committed "
                f"history has {seen}")
        self.acked_all += 1
        self.protected_end = max(self.protected_end, offset + 1)

    def _consume(self) -> None:
        leader = self.controller.leader
        if leader == NO_LEADER:
            return
        broker, offset = self.brokers[leader], self._consumer_offset

        def handle(respond: Callable[[FetchAnswer], None]) -> None:
            answer = broker.read_committed(offset)
            if answer is not None:
                self._check_read(leader, offset, answer)
                respond(answer)

        def consumed(answer: FetchAnswer) -> None:
            if offset == self._consumer_offset and answer.records:
                self._consumer_offset += len(answer.records)
                self.protected_end = max(self.protected_end, self._consumer_offset)
        self._rpc(CONSUMER, leader, "consume", handle, consumed, lambda: None)

    def _check_read(self, leader: int, offset: int, answer: FetchAnswer) -> None:
        """What a consumer is served must be committed (below a high watermark) already."""
        for index, record in enumerate(answer.records):
            at = offset + index
            if at >= len(self.history) or self.history[at] != record:
                raise InvariantViolation(
                    "NoReadPastHighWatermark",
                    f"leader {leader} served {record} at offset {at} to a consumer; "
                    f"committed history has {self.history[at] if at < len(self.history) else None}")

    def _attack(self) -> None:
        c = self.controller
        leader = self.brokers.get(c.leader)
        followers = [b for b in c.assignment.replicas if b != c.leader]
        if leader is None or not followers:
            return
        name = self.rng.choice(followers)
        follower = self.brokers[name]
        fields = {"replica_id": name, "broker_epoch": follower.broker_epoch,
                  "current_leader_epoch": c.assignment.leader_epoch,
                  "fetch_offset": follower.log.end_offset,
                  "last_fetched_epoch": follower.log.last_epoch}
        field = self.rng.choice(sorted(MALFORMED_FETCH))
        fields[field] = self.rng.choice(MALFORMED_FETCH[field])
        request = Fetch(**fields)
        self._log(f"hostile fetch {request}")
        self.send_fetch(HOSTILE, leader.broker_id, request, lambda answer: None, lambda: None)
        self._forge_alter_partition(name)

    def _forge_alter_partition(self, follower: int) -> None:
        """In a follower's name with the current epochs, or in the leader's with a
        malformed epoch: the controller must refuse both."""
        c = self.controller
        current = c.assignment
        isr = tuple((b, self.brokers[b].broker_epoch) for b in current.replicas)
        if self.rng.random() < 0.5:
            sender, proposal = follower, IsrProposal(current.leader_epoch,
                                                     current.partition_epoch, isr)
        else:
            epochs = [current.leader_epoch, current.partition_epoch]
            epochs[self.rng.randrange(2)] = self.rng.choice(_INT32)
            sender, proposal = c.leader, IsrProposal(epochs[0], epochs[1], isr)
        before = current
        answer = c.alter_partition(sender, proposal)
        if c.assignment != before or not isinstance(answer, ErrorCode):
            raise InvariantViolation(
                "ForgedIsrChangeRefused",
                f"the controller accepted {proposal} from {sender}: {answer}")


def _name(answer: AlterAnswer) -> str:
    return answer.name if isinstance(answer, ErrorCode) else f"ISR {list(answer.isr)}"


class _BrokerProcess:
    """The cluster as one broker's process sees it: its timers run in the process."""

    def __init__(self, cluster: ReplicaCluster, broker_id: int) -> None:
        self._cluster = cluster
        self._broker_id = broker_id
        self.min_insync_replicas = cluster.min_insync_replicas

    @property
    def now_ms(self) -> int:
        return self._cluster.now_ms

    def schedule(self, delay_ms: int, label: str, action: Callable[[], None]) -> None:
        self._cluster.schedule(delay_ms, label, self._cluster.in_process(self._broker_id, action))

    def send_fetch(self, source: int, destination: int, request: Fetch,
                   on_answer: Callable[[FetchAnswer], None],
                   on_failure: Callable[[], None]) -> None:
        self._cluster.send_fetch(source, destination, request, on_answer, on_failure)

    def send_alter_partition(self, sender: int, proposal: IsrProposal,
                             on_answer: Callable[[AlterAnswer], None]) -> None:
        self._cluster.send_alter_partition(sender, proposal, on_answer)

    def log(self, text: str) -> None:
        self._cluster.log(text)
