"""A local cluster of ``pykraft server`` processes on 127.0.0.1.

``cluster up`` and the integration tests share this: it picks free ports, writes one
``server.properties`` per node (controllers 1..N; brokers, if any, get ids from 1000 and a
PLAINTEXT listener) under the cluster directory, formats each node, starts the processes
with their stderr in ``node-<id>/server.log``, and records cluster id, ports and PIDs in
``cluster.json`` so a later ``cluster down`` can stop a detached cluster by PID. A stopped
cluster restarts from its directories (as Kafka's data outlives its processes);
:meth:`LocalCluster.delete` removes it.

A static cluster lists every controller in ``controller.quorum.voters`` (kraft.version 0).
A dynamic one (KIP-853) gives every node ``controller.quorum.bootstrap.servers`` instead;
controller 1 is formatted ``--standalone`` (the only initial voter) and the others
``--no-initial-controllers``: they start as observers until ``add-controller`` adds them.

A secure cluster (``cluster up --secure``) runs every listener SASL_SSL with ACLs, its CA,
certificates and credentials under the cluster directory (:mod:`pykraft.tools.secure_cluster`);
brokers then listen as ``SASL_SSL``, and :meth:`LocalCluster.security` is how a tool connects.

A mixed cluster (``cluster up --kafka-brokers N --kafka-controllers M``) adds Apache Kafka's
own nodes (:mod:`pykraft.tools.kafka_runtime`): the same configs, each node formatted by its
own software's tool at one release version, Kafka's after pykraft's in each role's ids.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime
import itertools
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pykraft.config.server import ServerConfig
from pykraft.errors import PyKraftError
from pykraft.ids import random_uuid, uuid_to_str
from pykraft.runtime.cluster_id_refusals import STARTUP_REFUSAL
from pykraft.tools.admin_client import ClientSecurity
from pykraft.tools.kafka_runtime import (
    KAFKA_MAIN_CLASS,
    LOG4J2_FILE,
    KafkaRuntime,
    write_log4j2,
)
from pykraft.tools.secure_cluster import BROKER_LISTENER, SecureCluster, write_private
from pykraft.tools.storage_tool import FormatRequest, QuorumMode, format_storage

STATE_FILE = "cluster.json"
HOST = "127.0.0.1"
STOP_TIMEOUT_S = 10.0
LISTEN_TIMEOUT_S = 30.0
KAFKA_FORMAT_TIMEOUT_S = 120.0
FIRST_BROKER_ID = 1000
CONTROLLER = "controller"
BROKER = "broker"


class ClusterError(PyKraftError):
    """The local cluster directory is missing, inconsistent or cannot be started."""


@dataclass(frozen=True, slots=True)
class NodeFiles:
    node_id: int
    port: int
    directory: Path
    role: str = CONTROLLER

    @property
    def config(self) -> Path:
        return self.directory / "server.properties"

    @property
    def log(self) -> Path:
        return self.directory / "server.log"

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def keystore(self) -> Path:
        """Its key and certificate chain in a secure cluster."""
        return self.directory / "keystore.pem"


#: ``low-high``: the ports local clusters take (else the kernel picks). The test suite gives
#: each worker its own range below the kernel's ephemeral one, so between this choice and
#: the node's bind neither another worker nor an outgoing connection can take the port.
PORT_RANGE_ENV = "PYKRAFT_PORT_RANGE"


#: The ports this process handed out last: a node binds its ports only when it starts, so
#: clusters made one after another before any of them starts must not be given the same one.
_HANDED_OUT: collections.deque[int] = collections.deque(maxlen=128)


def free_ports(count: int) -> list[int]:
    """Ports nothing is bound to now (held open together so they differ), none of them
    handed out lately by this process."""
    sockets: list[socket.socket] = []
    try:
        for port in _candidates():
            sock = socket.socket()
            try:
                sock.bind((HOST, port))
            except OSError:
                sock.close()
                continue
            if sock.getsockname()[1] in _HANDED_OUT:
                sock.close()
                continue
            sockets.append(sock)
            if len(sockets) == count:
                chosen = [sock.getsockname()[1] for sock in sockets]
                _HANDED_OUT.extend(chosen)
                return chosen
        raise ClusterError(f"fewer than {count} free ports in {PORT_RANGE_ENV}="
                                f"{os.environ.get(PORT_RANGE_ENV)}")
    finally:
        for sock in sockets:
            sock.close()


def _candidates() -> Iterator[int]:
    """Port 0 again and again (the kernel's choice), or the configured range from a random
    start, so consecutive clusters do not wait on each other's closed ports."""
    bounds = os.environ.get(PORT_RANGE_ENV)
    if not bounds:
        yield from itertools.repeat(0)
        return
    low_text, _, high_text = bounds.partition("-")
    low, high = int(low_text), int(high_text)
    start = random.randrange(low, high + 1)
    yield from range(start, high + 1)
    yield from range(low, start)


class LocalCluster:
    """Files and processes of one local cluster rooted at ``base``."""

    def __init__(self, base: Path, cluster_id: str, nodes: list[NodeFiles],
                 pids: dict[int, int] | None = None, *, dynamic: bool = False,
                 properties: dict[str, str] | None = None, secure: bool = False,
                 kafka_nodes: frozenset[int] = frozenset(),
                 kafka: KafkaRuntime | None = None) -> None:
        self.base = base
        self.cluster_id = cluster_id
        self.nodes = {node.node_id: node for node in nodes}
        self.pids: dict[int, int] = dict(pids or {})
        self.dynamic = dynamic
        self.properties: dict[str, str] = dict(properties or {})
        self.secure = secure
        #: the nodes that run Apache Kafka, not pykraft
        self.kafka_nodes = kafka_nodes
        self._kafka = kafka
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    # -- creation and persistence ----------------------------------------------------------

    @classmethod
    def create(cls, base: Path, controllers: int = 3,
               properties: dict[str, str] | None = None, brokers: int = 0, *,
               dynamic: bool = False, format_nodes: bool = True,
               secure: bool = False, kafka_controllers: int = 0, kafka_brokers: int = 0,
               kafka: KafkaRuntime | None = None) -> LocalCluster:
        """Write configs and (unless ``format_nodes`` is false, for a caller that formats
        with ``pykraft storage format`` itself) format every node; ``base`` must not hold a
        cluster yet. ``secure`` first makes the CA and the credentials. ``kafka_controllers``
        and ``kafka_brokers`` Kafka nodes (run from ``kafka``) follow pykraft's in each role."""
        counts = {"--controllers": controllers, "--brokers": brokers,
                  "--kafka-controllers": kafka_controllers, "--kafka-brokers": kafka_brokers}
        for option, count in counts.items():
            if count < 0:
                raise ClusterError(f"{option} must be at least 0, not {count}")
        if controllers + kafka_controllers < 1:
            raise ClusterError("a cluster needs a controller: --controllers (or "
                               "--kafka-controllers) must be at least 1")
        if (kafka_controllers or kafka_brokers) and (kafka is None or secure):
            raise ClusterError("Kafka nodes need --kafka-home" if kafka is None else
                               "--secure is for pykraft nodes only")
        if (base / STATE_FILE).exists():
            raise ClusterError(f"{base} already holds a cluster ({STATE_FILE}); run "
                               "`pykraft cluster down` or choose another --dir")
        base.mkdir(parents=True, exist_ok=True)
        all_controllers, all_brokers = controllers + kafka_controllers, brokers + kafka_brokers
        ports = free_ports(all_controllers + all_brokers)
        nodes = [NodeFiles(i + 1, port, base / f"node-{i + 1}")
                 for i, port in enumerate(ports[:all_controllers])]
        nodes += [NodeFiles(FIRST_BROKER_ID + i, port, base / f"node-{FIRST_BROKER_ID + i}",
                            BROKER) for i, port in enumerate(ports[all_controllers:])]
        kafka_nodes = frozenset(
            [*range(controllers + 1, all_controllers + 1),
             *range(FIRST_BROKER_ID + brokers, FIRST_BROKER_ID + all_brokers)])
        cluster = cls(base, uuid_to_str(random_uuid()), nodes, dynamic=dynamic,
                      properties=properties, secure=secure, kafka_nodes=kafka_nodes,
                      kafka=kafka)
        if kafka_nodes:
            write_log4j2(base)
        if secure:
            cluster.security_files.create(_now())
            cluster.security_files.write_client_files(cluster.bootstrap_servers)
        for node in nodes:
            cluster.write_config(node)
            if format_nodes:
                cluster.format(node.node_id)
        cluster.save()
        return cluster

    def quorum_properties(self) -> dict[str, str]:
        """How a node finds the quorum: every voter (static) or the controllers to ask."""
        controllers = [self.nodes[n] for n in self.controllers]
        if self.dynamic:
            return {"controller.quorum.bootstrap.servers": ",".join(
                n.address for n in controllers)}
        return {"controller.quorum.voters": ",".join(
            f"{n.node_id}@{n.address}" for n in controllers)}

    @property
    def security_files(self) -> SecureCluster:
        """The CA, certificates and credentials of a secure cluster."""
        if not self.secure:
            raise ClusterError(f"the cluster in {self.base} is not secure")
        return SecureCluster(self.base)

    def security(self) -> ClientSecurity:
        """How a tool connects: ``client.properties`` in a secure cluster, else plaintext."""
        return self.security_files.security() if self.secure else ClientSecurity()

    def write_config(self, node: NodeFiles) -> None:
        node.directory.mkdir(parents=True, exist_ok=True)
        broker_listener = BROKER_LISTENER if self.secure else "PLAINTEXT"
        listener = "CONTROLLER" if node.role == CONTROLLER else broker_listener
        security: dict[str, str] = {}
        if self.secure:
            if not node.keystore.exists():
                self.security_files.issue_keystore(node.keystore, node.node_id, _now())
            security = self.security_files.node_properties(node.keystore,
                                                           broker=node.role == BROKER)
        props = {
            "process.roles": node.role,
            "node.id": str(node.node_id),
            "listeners": f"{listener}://{node.address}",
            "controller.listener.names": "CONTROLLER",
            **self.quorum_properties(),
            "log.dirs": str(node.data),
            **security,
            **self.internal_topic_properties(),
            **self.properties,
        }
        text = "".join(f"{k}={v}\n" for k, v in props.items())
        if self.secure:  # it holds passwords
            write_private(node.config, text.encode())
        else:
            node.config.write_text(text)

    def internal_topic_properties(self) -> dict[str, str]:
        """The internal topics' replication for this cluster's brokers
        (:func:`internal_topic_properties`)."""
        return internal_topic_properties(len(self.brokers))

    def format(self, node_id: int) -> list[str]:
        """Format as ``pykraft storage format`` would (Kafka's ``kafka-storage.sh format``
        for a Kafka node): static, or in a dynamic cluster ``--standalone`` for controller 1
        and ``--no-initial-controllers`` otherwise."""
        node = self.nodes[node_id]
        mode = QuorumMode.STATIC
        if self.dynamic and node.role == CONTROLLER:
            mode = (QuorumMode.STANDALONE if node_id == min(self.controllers)
                    else QuorumMode.NO_INITIAL_CONTROLLERS)
        if node_id in self.kafka_nodes:
            return self._format_kafka_node(node, mode)
        scram = self.security_files.scram_arguments() if self.secure else ()
        return format_storage(FormatRequest(config=ServerConfig.load(node.config),
                                            cluster_id=self.cluster_id, mode=mode, scram=scram))

    def _format_kafka_node(self, node: NodeFiles, mode: QuorumMode) -> list[str]:
        mode_args = {QuorumMode.STANDALONE: ["--standalone"],
                     QuorumMode.NO_INITIAL_CONTROLLERS: ["--no-initial-controllers"]}
        command = self.kafka.format_command(node.config, self.cluster_id,
                                            *mode_args.get(mode, []),
                                            log4j2=self.base / LOG4J2_FILE)
        done = subprocess.run(command, capture_output=True, text=True, check=False,
                              stdin=subprocess.DEVNULL, timeout=KAFKA_FORMAT_TIMEOUT_S)
        if done.returncode != 0:
            raise ClusterError(f"Kafka's format of node {node.node_id} exited "
                               f"{done.returncode}: {(done.stdout + done.stderr).strip()}")
        return done.stdout.strip().splitlines()

    @property
    def kafka(self) -> KafkaRuntime:
        """The Kafka that runs this cluster's Kafka nodes."""
        if self._kafka is None:
            raise ClusterError(f"the cluster in {self.base} has Kafka nodes: pass "
                               "--kafka-home (or set KAFKA_HOME)")
        return self._kafka

    def add_controller_node(self) -> NodeFiles:
        """A new controller (next free id, a free port) with its config written but not
        formatted: a replacement machine joining through the bootstrap controllers."""
        if not self.dynamic:
            raise ClusterError("only a dynamic quorum can take a new controller")
        node_id = max(self.controllers) + 1
        if node_id in self.nodes:
            raise ClusterError(f"node id {node_id} is taken")
        node = NodeFiles(node_id, free_ports(1)[0], self.base / f"node-{node_id}")
        self.nodes[node_id] = node
        self.write_config(node)
        self.save()
        return node

    @classmethod
    def reopen(cls, base: Path, controllers: int, properties: dict[str, str] | None = None,
               brokers: int = 0, *, dynamic: bool = False, secure: bool = False,
               kafka_controllers: int = 0, kafka_brokers: int = 0,
               kafka: KafkaRuntime | None = None) -> LocalCluster:
        """The stopped cluster in ``base``, to start again on its data, ports and ids; a
        ClusterError while its processes run or if it was made with other options."""
        cluster = cls.load(base, kafka)
        running = cluster.running()
        if running:
            pids = ", ".join(f"node {n} pid {cluster.pids[n]}" for n in running)
            raise ClusterError(f"the cluster in {base} is running ({pids}); stop it with "
                               f"`pykraft cluster down --dir {base}`")
        kafka_made = (cluster.count(CONTROLLER, kafka=True), cluster.count(BROKER, kafka=True))
        made = (cluster.count(CONTROLLER, kafka=False), cluster.count(BROKER, kafka=False),
                cluster.dynamic, cluster.properties, cluster.secure, kafka_made)
        if made != (controllers, brokers, dynamic, dict(properties or {}), secure,
                    (kafka_controllers, kafka_brokers)):
            kafka_text = (f" and {kafka_made[0]} Kafka controllers and {kafka_made[1]} Kafka "
                          "brokers" if any(kafka_made) else "")
            raise ClusterError(
                f"{base} holds a {'secure ' if made[4] else ''}"
                f"{'dynamic' if made[2] else 'static'} cluster of {made[0]} "
                f"controllers and {made[1]} brokers{kafka_text} with properties {made[3]}; "
                "restart it with the options it was made with, or remove it first with "
                f"`pykraft cluster delete --dir {base}`")
        return cluster

    def count(self, role: str, *, kafka: bool) -> int:
        """How many nodes of ``role`` run Kafka (or pykraft)."""
        return sum(files.role == role and (node_id in self.kafka_nodes) == kafka
                   for node_id, files in self.nodes.items())

    def delete(self) -> None:
        """Stop what runs, then remove the cluster's files (its nodes' data included)."""
        self.stop_all()
        for node in self.nodes.values():
            shutil.rmtree(node.directory, ignore_errors=True)
        if self.secure:
            self.security_files.delete()
        (self.base / STATE_FILE).unlink(missing_ok=True)
        (self.base / LOG4J2_FILE).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.base.rmdir()  # only when nothing else lives there

    @classmethod
    def load(cls, base: Path, kafka: KafkaRuntime | None = None) -> LocalCluster:
        """The cluster recorded in ``base``; ``kafka`` runs its Kafka nodes, if any."""
        try:
            state = json.loads((base / STATE_FILE).read_text())
            nodes = [NodeFiles(int(n["id"]), int(n["port"]), base / n["dir"],
                               str(n.get("role", CONTROLLER)))
                     for n in state["nodes"]]
            pids = {int(k): int(v) for k, v in state.get("pids", {}).items()}
            return cls(base, str(state["cluster_id"]), nodes, pids,
                       dynamic=bool(state.get("dynamic", False)),
                       properties={str(k): str(v)
                                   for k, v in state.get("properties", {}).items()},
                       secure=bool(state.get("secure", False)),
                       kafka_nodes=frozenset(int(n["id"]) for n in state["nodes"]
                                             if n.get("software") == "kafka"),
                       kafka=kafka)
        except FileNotFoundError:
            raise ClusterError(f"no cluster in {base} ({STATE_FILE} is missing)") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise ClusterError(f"{base / STATE_FILE} is corrupt: {exc}") from None

    def save(self) -> None:
        state = {
            "cluster_id": self.cluster_id,
            "nodes": [{"id": n.node_id, "port": n.port, "dir": n.directory.name,
                       "role": n.role,
                       "software": "kafka" if n.node_id in self.kafka_nodes else "pykraft"}
                      for n in self.nodes.values()],
            "pids": {str(k): v for k, v in self.pids.items()},
            "dynamic": self.dynamic,
            "properties": self.properties,
            "secure": self.secure,
        }
        (self.base / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")

    @property
    def bootstrap(self) -> str:
        """A controller's address (``--bootstrap-controller``)."""
        return next(iter(self.nodes.values())).address

    @property
    def bootstrap_controllers(self) -> str:
        """Every controller's address (``--bootstrap-controller`` that survives a crash)."""
        return ",".join(self.nodes[n].address for n in self.controllers)

    @property
    def controllers(self) -> list[int]:
        return [n for n, files in self.nodes.items() if files.role == CONTROLLER]

    @property
    def brokers(self) -> list[int]:
        return [n for n, files in self.nodes.items() if files.role == BROKER]

    @property
    def bootstrap_servers(self) -> str:
        """The brokers' client addresses, as Kafka clients take them."""
        return ",".join(self.nodes[n].address for n in self.brokers)

    # -- processes -------------------------------------------------------------------------

    def start(self, node_id: int, *extra_args: str,
              wrapper: Sequence[str] = ()) -> subprocess.Popen[bytes]:
        """Start a node; ``wrapper`` is a command that runs it (it must exec the server in
        its own process, e.g. ``setpriv`` dropping capabilities)."""
        node = self.nodes[node_id]
        if self.is_running(node_id):
            raise ClusterError(f"node {node_id} is already running (pid {self.pids[node_id]})")
        if node_id in self.kafka_nodes and extra_args:
            raise ClusterError(f"node {node_id} runs Kafka: no pykraft server arguments")
        command = ([sys.executable, "-m", "pykraft", "server", str(node.config), *extra_args]
                   if node_id not in self.kafka_nodes else
                   self.kafka.server_command(node.config, log4j2=self.base / LOG4J2_FILE))
        with node.log.open("ab") as log:
            child = subprocess.Popen([*wrapper, *command], stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=log, start_new_session=True)
        self._children[node_id] = child
        self.pids[node_id] = child.pid
        self.save()
        return child

    def start_all(self) -> None:
        """Start every node; return once every controller accepts connections (a tool run
        right away would otherwise meet a refused connection, which it takes as final)."""
        for node_id in self.nodes:
            self.start(node_id)
        self.wait_listening(self.controllers)

    def wait_listening(self, node_ids: list[int], timeout_s: float = LISTEN_TIMEOUT_S) -> None:
        """Until each node accepts TCP connections; a ClusterError if one exits first, or
        logs a line it cannot start past (another cluster's id), naming that line."""
        deadline = time.monotonic() + timeout_s
        for node_id in node_ids:
            node = self.nodes[node_id]
            refusals = _LogScan(node.log, STARTUP_REFUSAL)
            while not _accepts(node.port):
                if not self.is_running(node_id):
                    raise ClusterError(f"node {node_id} exited during startup; see {node.log}")
                refused = refusals.first()
                if refused is not None:
                    raise ClusterError(f"node {node_id} cannot start: {refused}; see {node.log}")
                if time.monotonic() > deadline:
                    raise ClusterError(f"node {node_id} does not listen on {node.address} "
                                       f"after {timeout_s:.0f} s; see {node.log}")
                time.sleep(0.05)  # another process: polling is the only way to see it bind

    def running(self) -> list[int]:
        return [n for n in self.nodes if self.is_running(n)]

    def is_running(self, node_id: int) -> bool:
        child = self._children.get(node_id)
        if child is not None:
            return child.poll() is None
        pid = self.pids.get(node_id)
        return pid is not None and _pid_alive(pid)

    def signal(self, node_id: int, signum: int) -> None:
        pid = self.pids.get(node_id)
        if pid is not None and self.is_running(node_id):
            os.kill(pid, signum)

    def wait(self, node_id: int, timeout_s: float) -> int | None:
        """The exit code once the node stopped (None if unknown: not our child)."""
        child = self._children.get(node_id)
        if child is not None:
            return child.wait(timeout=timeout_s)
        deadline = time.monotonic() + timeout_s
        pid = self.pids.get(node_id)
        while pid is not None and _pid_alive(pid):
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"pid {pid}", timeout_s)
            time.sleep(0.05)  # not our child: polling is the only way to see it exit
        return None

    def stop(self, node_id: int, timeout_s: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM, bounded wait, then SIGKILL; returns the exit code when known."""
        self.signal(node_id, signal.SIGTERM)
        return self._await_stop(node_id, timeout_s)

    def _await_stop(self, node_id: int, timeout_s: float) -> int | None:
        """Wait for a node that was sent SIGTERM, SIGKILL at the deadline. Never a second
        SIGTERM: one that lands after the server's event loop closed (its handlers back at
        the default) kills a process that already shut down cleanly (exit 0 became -15)."""
        if self.is_running(node_id):
            try:
                self.wait(node_id, timeout_s)
            except subprocess.TimeoutExpired:
                self.signal(node_id, signal.SIGKILL)
                self.wait(node_id, timeout_s)
        return self._forget(node_id)

    def kill(self, node_id: int) -> None:
        """SIGKILL (a crash) and reap."""
        self.signal(node_id, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.wait(node_id, STOP_TIMEOUT_S)
        self._forget(node_id)

    def stop_all(self, timeout_s: float = STOP_TIMEOUT_S) -> dict[int, int | None]:
        """SIGTERM to the brokers at once, and once they are gone to the controllers:
        a broker's controlled shutdown needs the controllers up (stopped together, each
        broker would wait out its shutdown timeout for a controller that is going away)."""
        codes: dict[int, int | None] = {}
        for group in (self.brokers, [n for n in self.nodes if n not in self.brokers]):
            for node_id in group:
                self.signal(node_id, signal.SIGTERM)
            codes.update({node_id: self._await_stop(node_id, timeout_s) for node_id in group})
        return codes

    def add_voters(self, timeout_s: float = 60.0) -> list[str]:
        """``add-controller`` for every controller that is not a voter yet (all but the
        standalone first one, unless this is a restart), in turn (one voter change at a
        time); returns Kafka's ``Added controller ...`` lines."""
        from pykraft.config.properties import load_properties
        from pykraft.tools.quorum_tool import (
            add_controller,
            added_message,
            controller_identity,
            describe_quorum,
            parse_bootstrap,
        )

        bootstrap = parse_bootstrap(self.bootstrap_controllers)
        security = self.security()
        info = asyncio.run(describe_quorum(*bootstrap, timeout_s=timeout_s, security=security))
        voters = {v.replica_id for v in info.voters}
        lines = []
        for node_id in sorted(set(self.controllers) - voters):
            identity = controller_identity(load_properties(self.nodes[node_id].config))
            asyncio.run(add_controller(bootstrap, identity, timeout_s=timeout_s,
                                       security=security))
            lines.append(added_message(identity, dry_run=False))
        return lines

    def _forget(self, node_id: int) -> int | None:
        child = self._children.pop(node_id, None)
        self.pids.pop(node_id, None)
        self.save()
        return None if child is None else child.returncode


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class _LogScan:
    """The first line of a growing log file that contains ``marker``, reading each byte
    once however often it is asked."""

    def __init__(self, path: Path, marker: str) -> None:
        self._path = path
        self._marker = marker
        self._position = 0
        self._partial = ""

    def first(self) -> str | None:
        try:
            with self._path.open("r", encoding="utf-8", errors="replace") as log:
                log.seek(self._position)
                text = self._partial + log.read()
                self._position = log.tell()
        except FileNotFoundError:
            return None
        *lines, self._partial = text.split("\n")
        return next((line.strip() for line in lines if self._marker in line), None)


def _accepts(port: int) -> bool:
    try:
        socket.create_connection((HOST, port), timeout=1.0).close()
    except OSError:
        return False
    return True


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` still is one of our servers: after a reboot or a long pause the PID
    in cluster.json may belong to an unrelated process, which must not be signalled."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # not ours
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc: trust the PID
    return (b"pykraft" in command and b"server" in command) or (
        KAFKA_MAIN_CLASS.encode() in command)


def internal_topic_properties(brokers: int) -> dict[str, str]:
    """The internal topics' replication no larger than the ``brokers`` a cluster has (3 at
    most, Kafka's default), as Kafka's sample ``server.properties`` sets it for one broker:
    neither Kafka nor pykraft creates them with fewer replicas than configured, so with the
    default of 3 a smaller cluster could never have ``__consumer_offsets``."""
    replication = min(3, max(brokers, 1))
    return {"offsets.topic.replication.factor": str(replication),
            "transaction.state.log.replication.factor": str(replication),
            "transaction.state.log.min.isr": str(min(2, replication)),
            "share.coordinator.state.topic.replication.factor": str(replication),
            "share.coordinator.state.topic.min.isr": str(min(2, replication))}
