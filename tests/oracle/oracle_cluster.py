"""Clusters of Apache Kafka and pykraft nodes as real processes on 127.0.0.1, named by members.

A test says what runs where: ``ClusterSpec(controllers=("kafka",), brokers=("pykraft",))``.
Every node gets one ``server.properties`` in Kafka's names (``process.roles``, ``node.id``,
``listeners``, a static ``controller.quorum.voters``, ``log.dirs``) on ports from
``PYKRAFT_PORT_RANGE``; each is formatted by its own software's tool with the same cluster id
(Kafka's ``kafka.tools.StorageTool``, ``pykraft storage format``), all at once; then every
node starts (``java ... kafka.Kafka`` / ``pykraft server``) with its output in its
``server.log``. :func:`running` yields once every node listens and every broker sees every
broker registered and unfenced, and stops the nodes by PID when the block ends (brokers
first: their controlled shutdown needs the controllers), SIGKILL after a bound.

Kafka's JVMs are kept light for a 2-core machine: a small heap, the serial collector, class
data sharing, C1 only (startup, not peak throughput, is what a test pays for). Mixed
clusters are accepted here; whether they form is issue 26's question.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from pykraft.ids import random_uuid, uuid_to_str
from pykraft.messages import rpc
from pykraft.messages.kafka import API_MESSAGES
from pykraft.messages.kafka.describe_cluster_request import DescribeClusterRequest
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import Listener
from pykraft.runtime.kafka_client import CONNECTION_ERRORS, open_with_timeout
from pykraft.tools import kafka_runtime
from pykraft.tools.kafka_runtime import JVM_OPTIONS
from pykraft.tools.local_cluster import (
    BROKER,
    CONTROLLER,
    FIRST_BROKER_ID,
    HOST,
    NodeFiles,
    _accepts,
    free_ports,
    internal_topic_properties,
)

Kind = Literal["kafka", "pykraft"]
KAFKA: Kind = "kafka"
PYKRAFT: Kind = "pykraft"
CONTROLLER_LISTENER = "CONTROLLER"
BROKER_LISTENER = "PLAINTEXT"
LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")
FORMAT_TIMEOUT_S = 120.0
READY_TIMEOUT_S = 120.0  # a JVM's start on a loaded 2-core machine: 15-25 s seen
STOP_TIMEOUT_S = 15.0
POLL_S = 0.2
#: what a mixed cluster is formatted at (``cluster up --kafka-brokers`` formats the same)
MIXED_RELEASE_VERSION = kafka_runtime.MIXED_RELEASE_VERSION


class OracleClusterError(AssertionError):
    """A node could not be formatted, did not start, or did not get ready in time."""


@dataclass(frozen=True, slots=True)
class KafkaInstall:
    """The fetched Kafka: its version and runtime classpath (``scripts/fetch_kafka.py``)."""

    version: str
    classpath: tuple[Path, ...]

    def java(self, main_class: str, *args: str, log_level: str = "INFO") -> list[str]:
        """The command running one of Kafka's main classes in a light JVM."""
        return ["java", *JVM_OPTIONS, f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}",
                f"-Dpykraft.kafka.log.level={log_level}",
                "-cp", os.pathsep.join(str(jar) for jar in self.classpath),
                main_class, *args]


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """The members, by kind: controllers, brokers and combined (``broker,controller``)
    nodes. ``properties`` go to every node, over the defaults :func:`node_properties` sets.
    ``formatted_by`` formats every node with that software's tool instead of its own (Kafka's
    ``StorageTool`` output must start pykraft, and ``pykraft storage format``'s Kafka).
    ``release_version`` goes to every format (``--release-version``): a mixed cluster needs
    one both kinds support (Kafka 4.4 formats 4.4-IV2 with five more features by default,
    which pykraft's brokers do not support: ``MIXED_RELEASE_VERSION``, from
    :mod:`pykraft.tools.kafka_runtime`)."""

    controllers: Sequence[Kind] = ()
    brokers: Sequence[Kind] = ()
    combined: Sequence[Kind] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    formatted_by: Kind | None = None
    release_version: str | None = None

    @property
    def kinds(self) -> set[Kind]:
        return {*self.controllers, *self.brokers, *self.combined,
                *([self.formatted_by] if self.formatted_by else [])}


@dataclass(frozen=True, slots=True)
class Node(NodeFiles):
    """One member: its files as a local cluster's (``port`` and ``address`` are its broker
    listener's when it has one, else its controller listener's), its software and roles."""

    kind: Kind = field(kw_only=True)
    roles: tuple[str, ...] = field(kw_only=True)  # Kafka's process.roles, in its order
    controller_port: int | None = field(kw_only=True)

    @classmethod
    def make(cls, node_id: int, kind: Kind, roles: tuple[str, ...], base: Path,
             controller_port: int | None, broker_port: int | None) -> Node:
        port = broker_port if broker_port is not None else controller_port
        assert port is not None
        return cls(node_id, port, base / f"node-{node_id}",
                   BROKER if BROKER in roles else CONTROLLER,
                   kind=kind, roles=roles, controller_port=controller_port)

    def listener(self, role: str) -> str:
        """The address of its listener for ``role`` (``broker`` or ``controller``)."""
        return f"{HOST}:{self.controller_port}" if role == CONTROLLER else self.address

    @property
    def ports(self) -> list[int]:
        return ([self.controller_port] if self.controller_port is not None else []) + (
            [self.port] if BROKER in self.roles else [])

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"


class OracleCluster:
    """The files and processes of one cluster built from a :class:`ClusterSpec`."""

    def __init__(self, spec: ClusterSpec, base: Path, kafka: KafkaInstall | None) -> None:
        if KAFKA in spec.kinds and kafka is None:
            raise OracleClusterError("a cluster with Kafka members needs a KafkaInstall")
        if not (spec.controllers or spec.combined):
            raise OracleClusterError("a cluster needs a controller or a combined node")
        self.spec = spec
        self.base = base
        self.kafka = kafka
        self.cluster_id = uuid_to_str(random_uuid())
        members = ([(kind, (BROKER, CONTROLLER)) for kind in spec.combined]
                   + [(kind, (CONTROLLER,)) for kind in spec.controllers])
        ports = iter(free_ports(2 * len(spec.combined) + len(spec.controllers)
                                + len(spec.brokers)))
        nodes = [Node.make(node_id, kind, roles, base, next(ports),
                           next(ports) if BROKER in roles else None)
                 for node_id, (kind, roles) in enumerate(members, start=1)]
        nodes += [Node.make(node_id, kind, (BROKER,), base, None, next(ports))
                  for node_id, kind in enumerate(spec.brokers, start=FIRST_BROKER_ID)]
        self.nodes = {node.node_id: node for node in nodes}
        self._processes: dict[int, subprocess.Popen[bytes]] = {}

    def with_role(self, role: str) -> list[Node]:
        return [n for n in self.nodes.values() if role in n.roles]

    @property
    def brokers(self) -> list[Node]:
        return self.with_role(BROKER)

    @property
    def controllers(self) -> list[Node]:
        return self.with_role(CONTROLLER)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.address for n in self.brokers)

    # -- files -----------------------------------------------------------------------------

    def node_properties(self, node: Node) -> dict[str, str]:
        """One node's server.properties: what a KRaft node needs, internal topics' replication
        no larger than the brokers there are, then the spec's properties."""
        listeners = [f"{name}://{node.listener(role)}" for name, role in
                     ((CONTROLLER_LISTENER, CONTROLLER), (BROKER_LISTENER, BROKER))
                     if role in node.roles]
        return {
            "process.roles": ",".join(node.roles),
            "node.id": str(node.node_id),
            "listeners": ",".join(listeners),
            "controller.listener.names": CONTROLLER_LISTENER,
            "controller.quorum.voters": ",".join(
                f"{n.node_id}@{n.listener(CONTROLLER)}" for n in self.controllers),
            "log.dirs": str(node.data),
            **internal_topic_properties(len(self.brokers)),
            **self.spec.properties,
        }

    def write_configs(self) -> None:
        for node in self.nodes.values():
            node.directory.mkdir(parents=True, exist_ok=True)
            node.config.write_text("".join(f"{key}={value}\n" for key, value
                                           in self.node_properties(node).items()))

    def _format_command(self, node: Node) -> list[str]:
        args: tuple[str, ...] = ("format", "--cluster-id", self.cluster_id,
                                 "--config", str(node.config))
        if self.spec.release_version is not None:
            args += ("--release-version", self.spec.release_version)
        if (self.spec.formatted_by or node.kind) == KAFKA:
            assert self.kafka is not None
            return self.kafka.java("kafka.tools.StorageTool", *args, log_level="WARN")
        return [sys.executable, "-m", "pykraft", "storage", *args]

    def format_all(self) -> None:
        """Every node formatted by its own software's tool, the tools run side by side."""
        running = {node.node_id: subprocess.Popen(
            self._format_command(node), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT) for node in self.nodes.values()}
        deadline = time.monotonic() + FORMAT_TIMEOUT_S
        failures = []
        for node_id, tool in running.items():
            try:
                output, _ = tool.communicate(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                tool.kill()
                output, _ = tool.communicate()
                failures.append(f"node {node_id}: format still running after "
                                f"{FORMAT_TIMEOUT_S:.0f} s")
                continue
            if tool.returncode != 0:
                failures.append(f"node {node_id} ({self.nodes[node_id].kind}) format exited "
                                f"{tool.returncode}: {output.decode(errors='replace')[-2000:]}")
        if failures:
            raise OracleClusterError("\n".join(failures))

    # -- processes -------------------------------------------------------------------------

    def _server_command(self, node: Node) -> list[str]:
        if node.kind == KAFKA:
            assert self.kafka is not None
            return self.kafka.java("kafka.Kafka", str(node.config))
        return [sys.executable, "-m", "pykraft", "server", str(node.config)]

    def is_running(self, node: Node) -> bool:
        process = self._processes.get(node.node_id)
        return process is not None and process.poll() is None

    def start(self, node: Node) -> None:
        if self.is_running(node):
            raise OracleClusterError(f"node {node.node_id} is already running")
        with node.log.open("ab") as log:
            self._processes[node.node_id] = subprocess.Popen(
                self._server_command(node), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True)

    def launch(self) -> None:
        """Start every node (ready or not: :meth:`wait_ready`)."""
        for node in self.nodes.values():
            self.start(node)

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Until each node listens and every broker sees every broker registered and
        unfenced."""
        deadline = time.monotonic() + timeout_s
        for node in self.nodes.values():
            self._wait(deadline, node, f"listening on {node.ports}",
                       partial(_listens, node))
        for node in self.brokers:
            self._wait(deadline, node, f"seeing {len(self.brokers)} unfenced brokers",
                       partial(self._sees_every_broker, node))

    def _sees_every_broker(self, node: Node) -> bool:
        return unfenced_brokers(node.address) == len(self.brokers)

    def _wait(self, deadline: float, node: Node, what: str,
              probe: Callable[[], bool]) -> None:
        while not probe():
            if not self.is_running(node):
                raise OracleClusterError(
                    f"{node.kind} node {node.node_id} exited while waiting for it {what}; "
                    f"{node.log}:\n{node.log_tail()}")
            if time.monotonic() > deadline:
                raise OracleClusterError(
                    f"{node.kind} node {node.node_id} not {what} in time; "
                    f"{node.log}:\n{node.log_tail()}")
            time.sleep(POLL_S)  # another process: polling is the only way to see it

    def _terminate(self, node: Node) -> None:
        if self.is_running(node):
            os.kill(self._processes[node.node_id].pid, signal.SIGTERM)

    def _await_stop(self, node: Node, timeout_s: float) -> int | None:
        """Wait for a node sent SIGTERM; SIGKILL at the deadline (never a second SIGTERM:
        see :meth:`pykraft.tools.local_cluster.LocalCluster._await_stop`). The exit code."""
        process = self._processes.get(node.node_id)
        if process is None:
            return None
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout_s)
        return process.returncode

    def kill(self, node: Node) -> int | None:
        """SIGKILL, as a crash: its exit code once it is gone."""
        process = self._processes.get(node.node_id)
        if process is None or process.poll() is not None:
            return None if process is None else process.returncode
        process.kill()
        return process.wait(timeout=STOP_TIMEOUT_S)

    def stop(self, node: Node, timeout_s: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM; SIGKILL if it still runs after ``timeout_s``. The exit code (Kafka's
        JVM exits 143 after a clean shutdown on SIGTERM)."""
        self._terminate(node)
        return self._await_stop(node, timeout_s)

    def stop_all(self, timeout_s: float = STOP_TIMEOUT_S) -> dict[int, int | None]:
        """Brokers first (together), then the rest: a broker's controlled shutdown asks
        the controllers."""
        codes: dict[int, int | None] = {}
        only_brokers = [n for n in self.nodes.values() if n.roles == (BROKER,)]
        for group in (only_brokers, [n for n in self.nodes.values() if n not in only_brokers]):
            for node in group:
                self._terminate(node)
            codes.update({node.node_id: self._await_stop(node, timeout_s) for node in group})
        return codes


def call(address: str, api: int, version: int, body: object, *, timeout_s: float = 30.0) -> Any:
    """One request of any API Kafka defines on a fresh connection (sent and read with the
    generated classes, :mod:`pykraft.messages.rpc`): its decoded response body."""
    payload = rpc.encode_request(rpc.RequestHeader(api, version, 1, "pykraft-oracle"), body)
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", _read(sock, 4))[0]
        return rpc.decode_response(api, version, _read(sock, size)).body


def _read(sock: socket.socket, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        assert chunk, f"connection closed after {len(data)} of {count} bytes"
        data += chunk
    return bytes(data)


def api_name(key: int) -> str:
    """An API key's name as Kafka spells it (``DescribeCluster``), or ``key <n>``."""
    names = API_MESSAGES.get(key)
    return f"key {key}" if names is None else names[0]


def _listens(node: Node) -> bool:
    return all(_accepts(port) for port in node.ports)


def unfenced_brokers(address: str, timeout_s: float = 5.0) -> int | None:
    """How many unfenced brokers the broker at ``address`` knows (DescribeCluster v2 through
    pykraft's client), None while it cannot answer."""
    async def ask() -> int:
        host, _, port = address.rpartition(":")
        connection = await open_with_timeout(host, int(port), client_id="oracle",
                                             ours=listener_ranges(Listener.BROKER),
                                             timeout_s=timeout_s)
        try:
            async with asyncio.timeout(timeout_s):
                answer = await connection.request(
                    DescribeClusterRequest(include_fenced_brokers=True))
        finally:
            connection.close()
        if answer.error_code != 0:
            return 0
        return sum(not broker.is_fenced for broker in answer.brokers)
    try:
        return asyncio.run(ask())
    except (*CONNECTION_ERRORS, TimeoutError):
        return None


@contextmanager
def running(base: Path, kafka: KafkaInstall | None, *specs: ClusterSpec,
            prepare: Callable[[OracleCluster], None] | None = None,
            cluster_type: type[OracleCluster] = OracleCluster,
            ) -> Iterator[list[OracleCluster]]:
    """One cluster per spec (in ``base/cluster-<i>``), formatted, all started side by side
    (their JVMs and interpreters boot together) and ready; every node stopped by PID when
    the block ends. ``prepare`` edits a cluster's written configs before it is formatted
    (e.g. one more listener). ``cluster_type`` may be a subclass formatting otherwise."""
    clusters = [cluster_type(spec, base / f"cluster-{i}", kafka)
                for i, spec in enumerate(specs)]
    try:
        for cluster in clusters:
            cluster.write_configs()
            if prepare is not None:
                prepare(cluster)
            cluster.format_all()
        for cluster in clusters:
            cluster.launch()
        for cluster in clusters:
            cluster.wait_ready()
        yield clusters
    finally:
        for cluster in clusters:
            cluster.stop_all()
