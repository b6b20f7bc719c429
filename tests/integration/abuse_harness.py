"""The resource-abuse suite's measuring kit: a node's memory from /proc, an ApiVersions probe
on its own connection (the event loop's longest stall), a good producer/consumer beside the
abuse, fencing and elections seen while it runs, and a cap on each node's address space so a
case that fails cannot take the shared machine down with it."""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import struct
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from pykraft.errors import PyKraftError
from pykraft.image.cluster_image import FENCE
from pykraft.messages.kafka import produce_request as produce
from pykraft.messages.kafka.fetch_request import FetchPartition, FetchRequest, FetchTopic
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import complete_batches, encode_batch, iter_batches
from pykraft.records.metadata import decode_metadata_record
from pykraft.records.metadata_records import BrokerRegistrationChangeRecord, FenceBrokerRecord
from pykraft.runtime.kafka_client import ClientConnection
from pykraft.tools.local_cluster import HOST, LocalCluster
from pykraft.tools.quorum_tool import describe_quorum, parse_host_port

sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import PROPERTIES, fenced_brokers
from process_harness import wait_for

#: ``socket.request.max.bytes`` of the abused cluster, and so the size of every abusive
#: request. 1 MiB, not Kafka's 100 MiB nor 8 MiB: on today's code a node takes up to 90 s
#: over one 1 MiB request (FindCoordinator, DeleteGroups, ConsumerGroupDescribe of a million
#: keys) and 30 s over an 8 MiB Metadata, and the suite runs in ``make test``.
#: ``PYKRAFT_ABUSE_MAX_BYTES`` runs it at another size.
MAX_REQUEST_BYTES = int(os.environ.get("PYKRAFT_ABUSE_MAX_BYTES", str(1 << 20)))
#: Kafka's bound on a node's event-loop stall: ApiVersions on another connection of the same
#: node is answered within this while the abusive request is being served.
STALL_LIMIT_S = 1.0
#: A request this size must be answered (or refused, the connection closed) within this,
#: else the node is stuck on it; Kafka answers any of them in well under a second.
ANSWER_WITHIN_S = 15.0
#: The node's resident memory may grow by this much over its level before the request: the
#: frame itself, the request decoded to objects and its answer encoded (a few wire bytes per
#: entry become one object of ~50-100 bytes, so up to ~16x the frame for each), and 64 MiB
#: for allocator arenas and the good client's traffic. A compression bomb or an amplified
#: fetch exceeds it by far; a broker that streams and caps stays well within it.
RSS_GROWTH_LIMIT = 64 * (1 << 20) + 32 * MAX_REQUEST_BYTES
#: Each node's address space cap (RLIMIT_AS): a case that fails by allocating (a bomb
#: expanded whole, a fetch read 30,000 times) fails at this, not at the machine's OOM killer.
ADDRESS_SPACE_CAP = 2 << 30
#: The broker's session (broker_harness.PROPERTIES): a broker stalled this long is fenced.
SESSION_S = int(PROPERTIES["broker.session.timeout.ms"]) / 1000
#: Between two ApiVersions probes; the good client and the quorum watch go slower (their
#: own load on the nodes would lengthen what they measure).
PROBE_EVERY_S = 0.05
SLOW_PROBE_EVERY_S = 0.25


@dataclass(frozen=True)
class Memory:
    rss: int
    peak: int  # VmHWM: the high-water mark since the last reset


def memory(pid: int) -> Memory:
    """A process's resident set and its high-water mark, in bytes."""
    fields = dict(line.split(":", 1) for line in
                  Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return Memory(int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024)


def reset_peak(pid: int) -> None:
    """Set VmHWM back to VmRSS (``clear_refs`` 5), so the next peak is this case's."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def start_capped(cluster: LocalCluster, node_id: int) -> None:
    """Start a node and cap its address space at :data:`ADDRESS_SPACE_CAP`."""
    child = cluster.start(node_id)
    resource.prlimit(child.pid, resource.RLIMIT_AS, (ADDRESS_SPACE_CAP, ADDRESS_SPACE_CAP))


# -- the probes ----------------------------------------------------------------------------

def _read_exact(sock: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(min(size - len(chunks), 1 << 20))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def read_answer(sock: socket.socket) -> bytes | None:
    """One size-prefixed answer, or None when the peer closed first."""
    prefix = _read_exact(sock, 4)
    if prefix is None:
        return None
    return _read_exact(sock, struct.unpack(">i", prefix)[0])


def _api_versions_frame() -> bytes:
    # header v1 (ApiVersions v0): key, version, correlation id, client id "probe"
    body = struct.pack(">hhih", ApiKey.API_VERSIONS, 0, 7, 5) + b"probe"
    return struct.pack(">i", len(body)) + body


class Watch(threading.Thread):
    """Runs ``probe`` every :data:`PROBE_EVERY_S` until stopped; keeps the longest time one
    took (one still running counts for as long as it has run)."""

    def __init__(self, name: str, every_s: float = PROBE_EVERY_S) -> None:
        super().__init__(name=name, daemon=True)
        self.every_s = every_s
        self.stopping = threading.Event()
        self.longest_s = 0.0
        self.errors: list[str] = []
        self._since: float | None = None

    def probe(self) -> None:
        raise NotImplementedError

    def run(self) -> None:
        while not self.stopping.is_set():
            self._since = time.monotonic()
            try:
                self.probe()
            except (OSError, PyKraftError, TimeoutError) as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self.longest_s = max(self.longest_s, time.monotonic() - self._since)
            self._since = None
            self.stopping.wait(self.every_s)

    @property
    def worst_s(self) -> float:
        since = self._since
        running = 0.0 if since is None else time.monotonic() - since
        return max(self.longest_s, running)

    def stop(self) -> None:
        self.stopping.set()


class ApiVersionsProbe(Watch):
    """ApiVersions v0 on one connection of its own to the abused node."""

    def __init__(self, port: int) -> None:
        super().__init__("api-versions-probe")
        self._port = port
        self._sock: socket.socket | None = None

    def probe(self) -> None:
        if self._sock is None:
            self._sock = socket.create_connection((HOST, self._port), timeout=ANSWER_WITHIN_S)
        self._sock.sendall(_api_versions_frame())
        if read_answer(self._sock) is None:
            self._sock.close()
            self._sock = None
            raise OSError("the node closed the probe's connection")

    def stop(self) -> None:
        super().stop()
        if self._sock is not None:
            self._sock.close()


class GoodClient(Watch):
    """A producer (acks=all) and consumer beside the abuse: each round writes one record to
    the steady topic and reads it back from the offset the broker assigned."""

    def __init__(self, port: int, topic_id: uuid.UUID) -> None:
        super().__init__("good-client", SLOW_PROBE_EVERY_S)
        self._port = port
        self._topic_id = topic_id
        self.rounds = 0

    def probe(self) -> None:
        asyncio.run(self.round())
        self.rounds += 1

    async def round(self) -> None:
        """Produce one record and read it back; raises on any failure."""
        value = f"good-{self.rounds}-{time.monotonic_ns()}".encode()
        async with asyncio.timeout(ANSWER_WITHIN_S):
            connection = await ClientConnection.open(
                HOST, self._port, client_id="good", ours=listener_ranges(Listener.BROKER))
            try:
                offset = await self._produce(connection, value)
                await self._read_back(connection, offset, value)
            finally:
                connection.close()

    async def _produce(self, connection: ClientConnection, value: bytes) -> int:
        answer = await connection.request(produce.ProduceRequest(
            acks=-1, timeout_ms=10_000,
            topic_data=(produce.TopicProduceData(topic_id=self._topic_id, partition_data=(
                produce.PartitionProduceData(index=0, records=encode_batch(
                    0, [(None, value)], partition_leader_epoch=-1,
                    timestamp=int(time.time() * 1000))),)),)))
        part = answer.responses[0].partition_responses[0]
        if part.error_code != ErrorCode.NONE:
            raise OSError(f"good produce refused: {ErrorCode(part.error_code).name}")
        return int(part.base_offset)

    async def _read_back(self, connection: ClientConnection, offset: int, value: bytes) -> None:
        answer = await connection.request(FetchRequest(
            max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
            topics=(FetchTopic(topic_id=self._topic_id, partitions=(FetchPartition(
                partition=0, fetch_offset=offset, partition_max_bytes=1 << 20),)),)))
        part = answer.responses[0].partitions[0]
        if part.error_code != ErrorCode.NONE:
            raise OSError(f"good fetch refused: {ErrorCode(part.error_code).name}")
        read = [r.value for b in iter_batches(part.records or b"") for r in b.records()
                if r.offset == offset]
        if read != [value]:
            raise OSError(f"good fetch at {offset} read {read!r}, not {value!r}")


class QuorumWatch(Watch):
    """The metadata quorum's leader epochs, through the controller."""

    def __init__(self, controller_port: int) -> None:
        super().__init__("quorum-watch", SLOW_PROBE_EVERY_S)
        self._port = controller_port
        self.epochs: set[int] = set()

    def probe(self) -> None:
        info = asyncio.run(describe_quorum((HOST, self._port), timeout_s=ANSWER_WITHIN_S))
        self.epochs.add(info.leader_epoch)


# -- one case ------------------------------------------------------------------------------

@dataclass
class Figures:
    """What one abusive request did to the cluster, node by node, for the assertions and
    the report."""

    case: str
    outcome: str = "not sent"  # "answered", "closed", "no answer within ..."
    answer: bytes = b""  # the answer's frame, without its size prefix
    seconds: float = 0.0
    rss_growth: dict[int, int] = field(default_factory=dict)  # by node id
    stall_s: dict[int, float] = field(default_factory=dict)  # worst ApiVersions, by node id
    dead: list[int] = field(default_factory=list)
    fenced: int = 0  # times the controller fenced the broker
    epochs: set[int] = field(default_factory=set)
    good_rounds: int = 0
    good_errors: list[str] = field(default_factory=list)

    def line(self) -> str:
        growth = ", ".join(f"{n}: +{g >> 20}" for n, g in sorted(self.rss_growth.items()))
        stalls = ", ".join(f"{n}: {s:.2f}" for n, s in sorted(self.stall_s.items()))
        return (f"{self.case}: {self.outcome} ({len(self.answer)} bytes) after "
                f"{self.seconds:.1f} s; RSS MiB {{{growth}}}; worst ApiVersions s {{{stalls}}}; "
                f"fenced {self.fenced}x; leader epochs {sorted(self.epochs)}; good rounds "
                f"{self.good_rounds}, errors {self.good_errors[:1]}; dead {self.dead}")

    def violations(self, epoch_before: int) -> list[str]:
        """Every invariant the case broke (empty: none)."""
        found = [f"node {n} died" for n in self.dead]
        found += [f"node {n}'s RSS grew {g >> 20} MiB > {RSS_GROWTH_LIMIT >> 20} MiB"
                  for n, g in sorted(self.rss_growth.items()) if g > RSS_GROWTH_LIMIT]
        if not self.outcome.startswith(("answered", "closed")):
            found.append(f"the request got {self.outcome}")
        found += [f"node {n} answered ApiVersions after {s:.2f} s > {STALL_LIMIT_S} s"
                  for n, s in sorted(self.stall_s.items()) if s > STALL_LIMIT_S]
        if self.fenced:
            found.append(f"the broker was fenced {self.fenced}x")
        if self.epochs - {epoch_before}:
            found.append(f"an election: leader epochs {sorted(self.epochs)} after "
                         f"{epoch_before}")
        if self.good_errors:
            found.append(f"the good client failed: {self.good_errors[:3]}")
        return found


@dataclass(frozen=True)
class Abused:
    """The cluster under abuse: one controller, one broker, a steady topic for the good
    client."""

    cluster: LocalCluster
    steady_id: uuid.UUID

    @property
    def controller(self) -> int:
        return self.cluster.controllers[0]

    @property
    def broker(self) -> int:
        return self.cluster.brokers[0]

    def port(self, node_id: int) -> int:
        return self.cluster.nodes[node_id].port

    def fencings(self) -> int:
        """How often the controller's metadata log has fenced the broker so far: a broker
        that heartbeats again once it is caught up is unfenced in the same answer, so only
        the log keeps a short fence. Read from the segment files, complete batches only."""
        directory = self.cluster.nodes[self.controller].data / "__cluster_metadata-0"
        count = 0
        for segment in sorted(directory.glob("*.log")):
            data = segment.read_bytes()
            _, end = complete_batches(data)
            for batch in iter_batches(data[:end], verify_crc=False):
                if not batch.is_control:
                    count += sum(self._fences(record.value) for record in batch.records())
        return count

    def _fences(self, value: bytes | None) -> bool:
        message = decode_metadata_record(value or b"").message
        if isinstance(message, FenceBrokerRecord):
            return message.id == self.broker
        return (isinstance(message, BrokerRegistrationChangeRecord)
                and message.broker_id == self.broker and message.fenced == FENCE)


def send_and_measure(abused: Abused, node_id: int, frame: bytes, case: str) -> Figures:
    """Send ``frame`` to ``node_id`` on a connection of its own and wait (bounded) for the
    answer, while the probes watch every node (a broker forwards some requests to the
    controller); the figures of what happened."""
    figures = Figures(case)
    nodes = sorted(abused.cluster.nodes)
    pids = {n: abused.cluster.pids[n] for n in nodes}
    fencings = abused.fencings()
    before = {}
    for node, pid in pids.items():
        reset_peak(pid)
        before[node] = memory(pid).rss
    probes = {n: ApiVersionsProbe(abused.port(n)) for n in nodes}
    good = GoodClient(abused.port(abused.broker), abused.steady_id)
    quorum = QuorumWatch(abused.port(abused.controller))
    watches: list[Watch] = [*probes.values(), good, quorum]
    for watch in watches:
        watch.start()
    started = time.monotonic()
    try:
        figures.outcome, figures.answer = _send(abused.port(node_id), frame)
    finally:
        figures.seconds = time.monotonic() - started
        figures.dead = [n for n in nodes if not abused.cluster.is_running(n)]
        figures.rss_growth = {n: memory(pid).peak - before[n] for n, pid in pids.items()
                              if n not in figures.dead}
        figures.stall_s = {n: probe.worst_s for n, probe in probes.items()}
        for watch in watches:
            watch.stop()
        for watch in watches:
            watch.join(ANSWER_WITHIN_S)
    figures.dead += [n for n in nodes if n not in figures.dead
                     and not abused.cluster.is_running(n)]  # died after answering
    figures.good_rounds, figures.good_errors = good.rounds, good.errors
    figures.epochs = quorum.epochs
    figures.fenced = abused.fencings() - fencings
    return figures


def _send(port: int, frame: bytes) -> tuple[str, bytes]:
    """How the node took ``frame``, and its answer."""
    with socket.create_connection((HOST, port), timeout=ANSWER_WITHIN_S) as sock:
        deadline = time.monotonic() + ANSWER_WITHIN_S
        try:
            sock.sendall(frame)
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            answer = read_answer(sock)
        except TimeoutError:
            return f"no answer within {ANSWER_WITHIN_S:.0f} s", b""
        except ConnectionError as exc:
            return f"closed ({type(exc).__name__})", b""
    return ("closed", b"") if answer is None else ("answered", answer)


def quorum_epoch(abused: Abused) -> int:
    info = asyncio.run(describe_quorum(parse_host_port(
        abused.cluster.nodes[abused.controller].address), timeout_s=ANSWER_WITHIN_S))
    return info.leader_epoch


# -- the cluster ---------------------------------------------------------------------------

def answers_api_versions(port: int, timeout_s: float) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=timeout_s) as sock:
            sock.sendall(_api_versions_frame())
            return read_answer(sock) is not None
    except OSError:
        return False


def recover(abused: Abused, stalled_until: float | None = None, stuck: bool = False) -> None:
    """Restart every node that died or does not answer ApiVersions within
    :data:`ANSWER_WITHIN_S`, and with ``stuck`` (a request went unanswered: a node may still
    be working on it, off its loop, ahead of later requests) every node, then wait until the
    broker
    is unfenced, every node answers within :data:`STALL_LIMIT_S` and the good client
    completes a round: each case starts on a healthy cluster whatever the one before did.

    ``stalled_until``: when the broker last stalled (its heartbeats late). The controller
    may fence it for that up to one session later, so the cluster is healthy only once a
    whole session has passed since then, and since the last fence, with no new fence."""
    cluster = abused.cluster
    for node_id in sorted(cluster.nodes):
        if stuck or not (cluster.is_running(node_id)
                         and answers_api_versions(abused.port(node_id), ANSWER_WITHIN_S)):
            cluster.kill(node_id)
            start_capped(cluster, node_id)

    good = GoodClient(abused.port(abused.broker), abused.steady_id)

    def healthy() -> bool | None:
        seen = fenced_brokers(cluster, abused.broker)
        if seen is None or seen.get(abused.broker, True):
            return None
        if not all(answers_api_versions(abused.port(n), STALL_LIMIT_S) for n in cluster.nodes):
            return None
        try:  # the steady partition led again, after a fence
            asyncio.run(good.round())
        except (OSError, PyKraftError, TimeoutError):
            return None
        return True
    fences = abused.fencings()
    quiet_since = time.monotonic() - SESSION_S if stalled_until is None else stalled_until

    def settled() -> bool | None:
        nonlocal fences, quiet_since
        if (now := abused.fencings()) != fences:
            fences, quiet_since = now, time.monotonic()
        if time.monotonic() - quiet_since < SESSION_S:
            return None
        return healthy()
    wait_for("a healthy cluster (broker unfenced, every node answering, a good round, no "
             "fence due)", settled)
