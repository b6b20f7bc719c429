"""The ZooKeeper-era cluster of the migration tests (issue 32; migration-plan §12, §14 (a)):
ZooKeeper 3.8.4 and Kafka 3.9.1 from ``.cache/kafka-zk`` (``make kafka-zk``) as real
processes on 127.0.0.1, on ports of ``PYKRAFT_PORT_RANGE``.

A :class:`ZkCluster` starts ZooKeeper standalone (``QuorumPeerMain``, ready once a kazoo
session opens), Kafka 3.9 brokers in ZooKeeper mode, in migration mode
(``zookeeper.metadata.migration.enable`` and the controller quorum) or as KRaft brokers on
the same ids and ``log.dirs`` (:class:`BrokerMode`), and Kafka 3.9 KRaft controllers
formatted with ZooKeeper's ``/cluster/id`` (migration on or off, static voters), or with
``pykraft_controllers`` pykraft's controllers on the same properties (``python -m pykraft
server``, formatted by ``pykraft storage format`` at metadata.version 3.9-IV0). Settings
are ``docs/design/migration-reference/run.sh``'s: the serial collector, C1 only, small
heaps (and a log cleaner buffer to fit them), log4j 1 configs (INFO to the process's log;
the request logger at DEBUG in its own file when asked), IBP 3.9, the AclAuthorizer with
``User:ANONYMOUS`` a super user, and when asked a second listener, SASL_PLAINTEXT with SCRAM
(:meth:`ZkCluster.as_scram_user`), when asked also the brokers' and the migrating controllers'
inter-broker listener with PLAIN for their own principals; and when asked ZooKeeper's TLS port too
(:meth:`ZkCluster.zk_tls_properties`: a CA of the test's, ZooKeeper's PEM stores, the
client's PKCS12 key store). Every process is stopped by its PID (SIGTERM, a bounded
wait, then SIGKILL), brokers first. Kafka 3.9's tools run one JVM each (:meth:`ZkCluster.tool`).
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from enum import Enum
from functools import cache
from pathlib import Path

import fetch_kafka_zk  # tests/migration_e2e/conftest.py puts scripts/ and the helpers on the path
import pytest
from oracle_kafka import in_ci
from process_harness import wait_for

from pykraft.migration.zk_ops import DeleteOp, ZkUnavailableError
from pykraft.migration.zk_reads import read_tree
from pykraft.migration.znodes import ControllerEpochZNode, ControllerZNode
from pykraft.runtime.settings import ZkClientSettings
from pykraft.runtime.zk_session import ZkSession
from pykraft.runtime.zk_tls import NETTY_SOCKET
from pykraft.security.certificates import Issued, issue, new_ca
from pykraft.tools.kafka_runtime import JVM_OPTIONS
from pykraft.tools.local_cluster import HOST, free_ports

ZK_HEAP, NODE_HEAP, TOOL_HEAP = "192m", "384m", "256m"
DEDUPE_BUFFER_BYTES = 16 << 20
START_TIMEOUT_S = 180.0  # a JVM's start on a loaded 2-core machine, as run.sh waits
STOP_TIMEOUT_S = 120.0  # a broker's controlled shutdown, as run.sh waits
TOOL_TIMEOUT_S = 180.0
BROKER_IDS = (1, 2, 3)
CONTROLLER_IDS = (3000, 3001, 3002)
ZK_BROKERS_METADATA_VERSION = "3.9-IV0"  # level 21: the ZK brokers' IBP 3.9 (plan §1)
CONTROLLER_LISTENER = "CONTROLLER"
SCRAM_LISTENER = "SASL_PLAINTEXT"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
#: the principals of the SASL inter-broker listener (``inter_broker_sasl``), with PLAIN
INTER_BROKER_USERS = {"broker": "broker-secret", "controller": "controller-secret"}

#: what a pykraft broker logs once unfenced, for each listener it then opens
#: (``broker/broker_server.py``)
PYKRAFT_LISTENING = "event=broker_listening listener={listener}"

# Kafka 3.9.1's tools by the main class each kafka-*.sh script runs
TOPICS = "org.apache.kafka.tools.TopicCommand"
CONFIGS = "kafka.admin.ConfigCommand"
ACLS = "kafka.admin.AclCommand"
DUMP_LOG = "kafka.tools.DumpLogSegments"
METADATA_QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
STORAGE = "kafka.tools.StorageTool"
CONSOLE_PRODUCER = "kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
VERIFIABLE_PRODUCER = "org.apache.kafka.tools.VerifiableProducer"

#: a record batch's producer id in ``kafka-dump-log``'s output
_PRODUCER_ID = re.compile(r"\bproducerId: (-?\d+)")

_NODE_LOG4J = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.state.change.logger=TRACE
log4j.logger.org.apache.kafka.metadata.migration=DEBUG
log4j.logger.kafka.migration=DEBUG
log4j.logger.kafka.zk.migration=DEBUG
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.zookeeper=WARN
"""
_REQUEST_LOG4J = """\
log4j.appender.req=org.apache.log4j.FileAppender
log4j.appender.req.File={file}
log4j.appender.req.layout=org.apache.log4j.PatternLayout
log4j.appender.req.layout.ConversionPattern=[%d] %m%n
log4j.logger.kafka.request.logger=DEBUG, req
log4j.additivity.kafka.request.logger=false
"""
_TOOL_LOG4J = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


class ZkClusterError(AssertionError):
    """A process did not start, exited, or a tool failed."""


@dataclass(frozen=True, slots=True)
class Kafka39:
    """Kafka 3.9.1's runtime classpath (ZooKeeper 3.8.4 included)."""

    classpath: tuple[Path, ...]

    def java(self, main_class: str, *args: str, heap: str, log4j: Path) -> list[str]:
        """The command running ``main_class`` in a light JVM logging through ``log4j``."""
        return ["java", *JVM_OPTIONS, f"-Xmx{heap}", f"-Dlog4j.configuration=file:{log4j}",
                "-cp", os.pathsep.join(str(jar) for jar in self.classpath), main_class, *args]


@cache
def fetched() -> Kafka39 | str:
    """Kafka 3.9.1's jars (fetched once into ``.cache/kafka-zk``), or why they cannot be had."""
    try:
        if shutil.which("java") is None:
            raise fetch_kafka_zk.FetchError("java is not installed")
        return Kafka39(tuple(fetch_kafka_zk.fetch()))
    except (fetch_kafka_zk.FetchError, OSError) as exc:
        return f"Kafka 3.9.1 is not in .cache/kafka-zk and could not be fetched: {exc}"


def required() -> Kafka39:
    """Kafka 3.9.1; off CI a test skips without it (saying why), with CI=true it fails."""
    found = fetched()
    if isinstance(found, str):
        if not in_ci():
            pytest.skip(f"{found} [skips off CI; with CI=true it fails]")
        pytest.fail(f"{found} [CI=true: the migration tests must run]", pytrace=False)
    return found


class JavaProcess:
    """One JVM, its output appended to ``log``; waits look only at what this start wrote."""

    def __init__(self, name: str, log: Path) -> None:
        self.name = name
        self.log = log
        self._process: subprocess.Popen[bytes] | None = None
        self._since = 0

    def start(self, command: list[str]) -> None:
        if self.running:
            raise ZkClusterError(f"{self.name} is already running")
        self._since = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=out, start_new_session=True)

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def output(self) -> str:
        """What this start logged so far."""
        with self.log.open("rb") as text:
            text.seek(self._since)
            return text.read().decode(errors="replace")

    def scan(self, text: str) -> LineScan:
        """A search for ``text`` in what this start logs, from its first line."""
        return LineScan(self.log, self._since, text)

    def wait_line(self, text: str, timeout_s: float = START_TIMEOUT_S) -> str:
        """The first line of this start holding ``text``; fails at once if the process exits."""
        scan = self.scan(text)

        def probe() -> str | None:
            found = scan.found()
            if found is None and not self.running:
                raise ZkClusterError(f"{self.name} exited before logging {text!r}:\n"
                                     f"{self.output()[-3000:]}")
            return found
        found: str = wait_for(f"{self.name} to log {text!r}", probe, timeout_s)
        return found

    def terminate(self) -> None:
        """SIGTERM (a broker's controlled shutdown) if it runs; :meth:`await_stop` after."""
        if self._process is not None and self._process.poll() is None:
            with suppress(ProcessLookupError):
                os.kill(self._process.pid, signal.SIGTERM)

    def await_stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int | None:
        """Wait for a terminated process, SIGKILL at the deadline; its exit code (None if
        never started). Never a second SIGTERM: one is enough, and Kafka acts on the first."""
        if self._process is None:
            return None
        try:
            return self._process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return self._process.wait(timeout=timeout_s)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM, a bounded wait, SIGKILL; the exit code (None if never started)."""
        self.terminate()
        return self.await_stop(timeout_s)

    def kill(self) -> None:
        """SIGKILL, as a crash."""
        if self._process is not None and self._process.poll() is None:
            os.kill(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=STOP_TIMEOUT_S)


class LineScan:
    """Looks for a text in a growing log, reading each byte once (the logs of Kafka's nodes,
    with the state change logger at TRACE, grow by megabytes)."""

    def __init__(self, log: Path, start: int, text: str) -> None:
        self.log = log
        self.position = start
        self.text = text
        self._partial = ""

    def found(self) -> str | None:
        """The first complete line holding the text, among those written since last asked."""
        if not self.log.exists():
            return None
        with self.log.open("rb") as out:
            out.seek(self.position)
            data = out.read()
        self.position += len(data)
        lines = (self._partial + data.decode(errors="replace")).split("\n")
        self._partial = lines.pop()
        return next((line for line in lines if self.text in line), None)


class BrokerMode(Enum):
    """How a Kafka 3.9 broker runs on its ``log.dirs`` (run.sh's three property sets)."""

    ZK = "zk"
    MIGRATION = "migration"
    KRAFT = "kraft"


class ZkCluster:
    """ZooKeeper, Kafka 3.9 brokers and Kafka 3.9 KRaft controllers under ``base``."""

    def __init__(self, base: Path, kafka: Kafka39, *, brokers: tuple[int, ...] = BROKER_IDS,
                 controllers: tuple[int, ...] = CONTROLLER_IDS,
                 controller_properties: Mapping[str, str] | None = None,
                 request_logs: bool = False, scram_listener: bool = False,
                 pykraft_controllers: bool = False, zk_tls: bool = False,
                 inter_broker_sasl: bool = False) -> None:
        self.base = base
        self.kafka = kafka
        #: the controllers are pykraft's (``python -m pykraft``), not Kafka 3.9's
        self.pykraft_controllers = pykraft_controllers
        self.request_logs = request_logs
        self.extra_controller_properties = dict(controller_properties or {})
        #: the ZK brokers' inter-broker listener (and so the migrating controllers' legacy
        #: channel) is the SASL_PLAINTEXT one, with PLAIN
        self.inter_broker_sasl = inter_broker_sasl
        scram_listener = scram_listener or inter_broker_sasl
        ports = iter(free_ports(1 + zk_tls + len(brokers) * (1 + scram_listener)
                                + len(controllers)))
        self.zk_port = next(ports)
        #: ZooKeeper's ``secureClientPort`` (TLS, client certificates required), when asked
        self.zk_tls_port = next(ports) if zk_tls else None
        self.broker_ports = {broker: next(ports) for broker in brokers}
        #: a second listener per broker, SASL_PLAINTEXT with SCRAM-SHA-256/512, when asked
        self.scram_ports = {broker: next(ports) for broker in brokers} if scram_listener else {}
        self.controller_ports = {controller: next(ports) for controller in controllers}
        base.mkdir(parents=True, exist_ok=True)
        self.processes = {name: JavaProcess(name, base / f"{name}.log")
                          for name in ["zk", *map(self.broker_name, brokers),
                                       *map(self.controller_name, controllers)]}
        self.broker_modes: dict[int, BrokerMode] = {}
        #: the brokers now run by ``pykraft server`` (:meth:`roll_broker_to_pykraft`)
        self.pykraft_brokers: set[int] = set()

    # -- names and addresses ---------------------------------------------------------------

    @staticmethod
    def broker_name(broker: int) -> str:
        return f"b{broker}"

    @staticmethod
    def controller_name(controller: int) -> str:
        return f"c{controller}"

    @property
    def zk_connect(self) -> str:
        return f"{HOST}:{self.zk_port}"

    @property
    def zk_tls_connect(self) -> str:
        return f"{HOST}:{self.zk_tls_port}"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{HOST}:{port}" for port in self.broker_ports.values())

    @property
    def scram_bootstrap_servers(self) -> str:
        return ",".join(f"{HOST}:{port}" for port in self.scram_ports.values())

    @property
    def bootstrap_controllers(self) -> str:
        return ",".join(f"{HOST}:{port}" for port in self.controller_ports.values())

    @property
    def voters(self) -> str:
        return ",".join(f"{controller}@{HOST}:{port}"
                        for controller, port in self.controller_ports.items())

    def broker(self, broker: int) -> JavaProcess:
        return self.processes[self.broker_name(broker)]

    def controller(self, controller: int) -> JavaProcess:
        return self.processes[self.controller_name(controller)]

    def broker_data(self, broker: int) -> Path:
        return self.base / self.broker_name(broker) / "data"

    def controller_data(self, controller: int) -> Path:
        return self.base / self.controller_name(controller) / "data"

    # -- files -----------------------------------------------------------------------------

    def _log4j(self, name: str) -> Path:
        path = self.base / f"{name}.log4j"
        text = _NODE_LOG4J
        if self.request_logs:
            text += _REQUEST_LOG4J.format(file=self.base / f"{name}.requests.log")
        path.write_text(text)
        return path

    def _write_properties(self, name: str, properties: Mapping[str, str]) -> Path:
        path = self.base / f"{name}.properties"
        path.write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
        return path

    def broker_properties(self, broker: int, mode: BrokerMode) -> dict[str, str]:
        """run.sh's ``zk_broker`` / ``mig_broker`` / ``kraft_broker``."""
        listeners = f"PLAINTEXT://{HOST}:{self.broker_ports[broker]}"
        protocols = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
        scram: dict[str, str] = {}
        if self.scram_ports:
            listeners += f",{SCRAM_LISTENER}://{HOST}:{self.scram_ports[broker]}"
            protocols += f",{SCRAM_LISTENER}:{SCRAM_LISTENER}"
            scram = {"sasl.enabled.mechanisms": ",".join(SCRAM_MECHANISMS), **{
                f"listener.name.{SCRAM_LISTENER.lower()}.{mechanism.lower()}.sasl.jaas.config":
                    f"{SCRAM_LOGIN_MODULE} required;" for mechanism in SCRAM_MECHANISMS}}
        if self.inter_broker_sasl and mode is not BrokerMode.KRAFT:
            users = " ".join(f'user_{user}="{password}"'
                             for user, password in INTER_BROKER_USERS.items())
            scram |= {
                "sasl.enabled.mechanisms": ",".join(("PLAIN", *SCRAM_MECHANISMS)),
                **_inter_broker_sasl("broker", users)}
        common = {
            "listeners": listeners, "advertised.listeners": listeners, **scram,
            "log.dirs": str(self.broker_data(broker)),
            "num.network.threads": "2", "num.io.threads": "2", "background.threads": "2",
            "num.replica.fetchers": "1", "log.cleaner.threads": "1",
            # run.sh's heap is small for the cleaner's default 128 MiB dedupe buffer: a dynamic
            # cleaner config (phase A sets log.cleaner.backoff.ms) restarts the cleaner, whose
            # new buffer beside the old one ran out of heap and killed the thread processing
            # /config/changes (later SCRAM credentials and quotas went unseen)
            "log.cleaner.dedupe.buffer.size": str(DEDUPE_BUFFER_BYTES),
            "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": "3",
            "transaction.state.log.num.partitions": "3",
            "transaction.state.log.min.isr": "2", "group.initial.rebalance.delay.ms": "0",
            "super.users": "User:ANONYMOUS", "allow.everyone.if.no.acl.found": "true",
        }
        quorum = {
            "controller.quorum.voters": self.voters,
            "controller.listener.names": CONTROLLER_LISTENER,
            "listener.security.protocol.map": protocols,
        }
        if mode is BrokerMode.KRAFT:
            return {**common, "process.roles": "broker", "node.id": str(broker), **quorum,
                    "inter.broker.listener.name": "PLAINTEXT",
                    "authorizer.class.name":
                        "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
        zk_mode = {**common, "broker.id": str(broker), "zookeeper.connect": self.zk_connect,
                   "inter.broker.protocol.version": "3.9",
                   "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}
        if mode is BrokerMode.ZK:
            return zk_mode
        return {**zk_mode, "zookeeper.metadata.migration.enable": "true", **quorum}

    def controller_properties(self, controller: int, *, migration: bool) -> dict[str, str]:
        """run.sh's ``controller``: with ``migration``, ZooKeeper's address and the
        listener of the ZK brokers; then the cluster's extra controller properties."""
        properties = {
            "process.roles": "controller", "node.id": str(controller),
            "controller.quorum.voters": self.voters,
            "controller.listener.names": CONTROLLER_LISTENER,
            "listeners": f"{CONTROLLER_LISTENER}://{HOST}:{self.controller_ports[controller]}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.controller_data(controller)),
            "num.network.threads": "1", "num.io.threads": "2",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS", "allow.everyone.if.no.acl.found": "true",
        }
        if migration:
            properties |= {"zookeeper.metadata.migration.enable": "true",
                           "zookeeper.connect": self.zk_connect,
                           "inter.broker.listener.name": "PLAINTEXT"}
        if migration and self.inter_broker_sasl:
            properties["listener.security.protocol.map"] += f",{SCRAM_LISTENER}:{SCRAM_LISTENER}"
            properties |= _inter_broker_sasl("controller")
        return properties | self.extra_controller_properties

    # -- ZooKeeper -------------------------------------------------------------------------

    def start_zookeeper(self) -> None:
        """ZooKeeper standalone; returns once a session opens (on the plaintext port)."""
        config = self._write_properties("zk", {
            "dataDir": str(self.base / "zk"), "clientPort": str(self.zk_port),
            "clientPortAddress": HOST, "maxClientCnxns": "0", "admin.enableServer": "false",
            "4lw.commands.whitelist": "*", **self._zk_server_tls()})
        zk = self.processes["zk"]
        zk.start(self.kafka.java("org.apache.zookeeper.server.quorum.QuorumPeerMain",
                                 str(config), heap=ZK_HEAP, log4j=self._log4j("zk")))

        def session_opens() -> bool | None:
            if not zk.running:
                raise ZkClusterError(f"ZooKeeper exited:\n{zk.output()[-3000:]}")
            try:
                with self.zk_session(connection_timeout_ms=1000):
                    return True
            except ZkUnavailableError:
                return None
        wait_for("ZooKeeper to accept a session", session_opens, START_TIMEOUT_S)

    def stop_zookeeper(self) -> None:
        """ZooKeeper stopped (SIGTERM); :meth:`start_zookeeper` restarts it on its data."""
        self.processes["zk"].stop()

    def four_letter(self, word: str) -> str:
        """ZooKeeper's answer to a four-letter command (``cons``, ``dump``: all allowed)."""
        with socket.create_connection((HOST, self.zk_port), timeout=10.0) as conn:
            conn.sendall(word.encode())
            return b"".join(iter(lambda: conn.recv(65536), b"")).decode(errors="replace")

    def zk_sessions(self, local_ports: set[int]) -> set[str]:
        """The ids (``0x...``) of the sessions ZooKeeper serves on connections from
        ``local_ports`` (its ``cons``)."""
        found = re.findall(r"/127\.0\.0\.1:(\d+)\[.*?sid=(0x[0-9a-f]+)", self.four_letter("cons"))
        return {sid for port, sid in found if int(port) in local_ports}

    def _zk_server_tls(self) -> dict[str, str]:
        """ZooKeeper 3.8's TLS client port (Netty's connection factory, PEM stores; it asks
        every client for a certificate by default)."""
        if self.zk_tls_port is None:
            return {}
        server = self._tls_dir / "zk-server.pem"
        server.write_bytes(zk_pki().server.keystore_pem())
        return {"secureClientPort": str(self.zk_tls_port), "secureClientPortAddress": HOST,
                "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
                "ssl.keyStore.location": str(server), "ssl.keyStore.type": "PEM",
                "ssl.trustStore.location": str(self._ca_file(zk_pki().ca, "zk-ca.pem")),
                "ssl.trustStore.type": "PEM"}

    @property
    def _tls_dir(self) -> Path:
        directory = self.base / "tls"
        directory.mkdir(exist_ok=True)
        return directory

    def _ca_file(self, ca: Issued, name: str) -> Path:
        path = self._tls_dir / name
        path.write_bytes(ca.chain_pem())
        return path

    def zk_tls_properties(self, *, trusting: Issued | None = None) -> dict[str, str]:
        """Kafka's ``zookeeper.*`` keys of a client of ZooKeeper's TLS port: ``zookeeper.connect``
        on it, a PKCS12 key store (its type from the ``.p12`` name) and a PEM trust store of
        the test's CA, or of ``trusting``."""
        keystore = self._tls_dir / "zk-client.p12"
        keystore.write_bytes(zk_pki().client.pkcs12(ZK_TLS_PASSWORD.encode()))
        ca = zk_pki().ca if trusting is None else trusting
        return {"zookeeper.connect": self.zk_tls_connect, "zookeeper.ssl.client.enable": "true",
                "zookeeper.clientCnxnSocket": NETTY_SOCKET,
                "zookeeper.ssl.keystore.location": str(keystore),
                "zookeeper.ssl.keystore.password": ZK_TLS_PASSWORD,
                "zookeeper.ssl.truststore.location": str(
                    self._ca_file(ca, f"zk-client-trust-{ca.certificate.serial_number}.pem"))}

    @contextmanager
    def zk_session(self, connection_timeout_ms: int = 15000) -> Iterator[ZkSession]:
        """A kazoo session on the cluster's ZooKeeper (pykraft's ``ZkSession``)."""
        with ZkSession(ZkClientSettings(self.zk_connect,
                                         connection_timeout_ms=connection_timeout_ms)) as session:
            yield session

    def cluster_id(self) -> str:
        """``/cluster/id``, which the first ZK broker wrote."""
        with self.zk_session() as session:
            found = read_tree(session).cluster_id
        if found is None:
            raise ZkClusterError("ZooKeeper has no /cluster/id yet")
        return found

    def zk_get(self, path: str) -> bytes | None:
        """``zookeeper-shell get <path>``: the znode's data, None if it does not exist."""
        with self.zk_session() as session:
            read = session.get(path)
        return None if read is None else read.raw

    def zk_deleteall(self, path: str) -> list[str]:
        """``zookeeper-shell deleteall <path>``: the znode and everything under it, in one
        multi (children first); the paths deleted (none if it did not exist)."""
        with self.zk_session() as session:
            found: list[str] = []
            pending = [path]
            while pending:  # bounded: a znode tree is finite and read once
                node = pending.pop()
                children = session.children(node)
                if children is None:
                    continue
                found.append(node)
                pending += [f"{node.rstrip('/')}/{child}" for child in children]
            if found:
                failed = [r for r in session.multi([DeleteOp(p) for p in reversed(found)])
                          if not r.ok]
                if failed:
                    raise ZkClusterError(f"deleteall {path} failed: {failed}")
        return found

    def controller_epoch(self) -> int:
        """``/controller_epoch``: the ZK controller epoch (a KRaft controller's claim bumps it
        too)."""
        raw = self.zk_get("/controller_epoch")
        if raw is None:
            raise ZkClusterError("ZooKeeper has no /controller_epoch")
        return ControllerEpochZNode.decode(raw).epoch

    def wait_zk_broker_controller(self, timeout_s: float = START_TIMEOUT_S,
                                  ) -> ControllerZNode:
        """Until ``/controller`` holds one of the brokers (a ZK broker elected itself)."""
        def elected() -> ControllerZNode | None:
            raw = self.zk_get("/controller")
            znode = None if raw is None else ControllerZNode.decode(raw)
            return znode if znode is not None and znode.broker_id in self.broker_ports else None
        found: ControllerZNode = wait_for("a ZK broker to be controller", elected, timeout_s)
        return found

    def wait_brokers_heard_from(self, controller: int, epoch: int) -> None:
        """Until every Kafka broker's current start logged an UpdateMetadata from ZK
        controller ``controller`` at ``epoch`` (the state change logger): its metadata cache
        then names that controller. A broker in migration mode asks the controller its cache
        names for its controlled shutdown, and waits up to 5 minutes for a KRaft one gone."""
        for broker in self.broker_ports:
            self.broker(broker).wait_line(
                f"UpdateMetadata request sent by controller {controller} epoch {epoch} ")

    # -- brokers and controllers -----------------------------------------------------------

    def start_broker(self, broker: int, mode: BrokerMode) -> None:
        name = self.broker_name(broker)
        config = self._write_properties(f"{name}.{mode.value}",
                                        self.broker_properties(broker, mode))
        self.broker_modes[broker] = mode
        self.pykraft_brokers.discard(broker)
        self.broker(broker).start(self.kafka.java("kafka.Kafka", str(config), heap=NODE_HEAP,
                                                  log4j=self._log4j(name)))

    def wait_broker(self, broker: int) -> None:
        """Until the broker logs that it started (a ZK-mode or a KRaft broker's line)."""
        started = ("Kafka Server started" if self.broker_modes[broker] is BrokerMode.KRAFT
                   else f"[KafkaServer id={broker}] started")
        self.broker(broker).wait_line(started)

    def start_pykraft_broker(self, broker: int) -> None:
        """``pykraft server`` in place of the Kafka broker, on its ids, ports and log dirs,
        with the properties of Kafka's KRaft broker as they are (same ``node.id`` as the
        ZK broker's ``broker.id``, the quorum, no ``zookeeper.*``, StandardAuthorizer under
        Kafka's key; pykraft keeps the JVM-only tuning keys unused)."""
        name = self.broker_name(broker)
        config = self._write_properties(f"{name}.pykraft",
                                        self.broker_properties(broker, BrokerMode.KRAFT))
        self.pykraft_brokers.add(broker)
        self.broker(broker).start(_pykraft("server", str(config)))

    def roll_broker_to_pykraft(self, broker: int) -> None:
        """Stop the Kafka broker (controlled shutdown), start pykraft's on the same log dirs,
        wait until it is unfenced and serves each of its listeners."""
        self.broker(broker).stop()
        self.start_pykraft_broker(broker)
        listeners = self.broker_properties(broker, BrokerMode.KRAFT)["listeners"]
        for listener in listeners.split(","):
            self.broker(broker).wait_line(PYKRAFT_LISTENING.format(listener=listener))

    def roll_broker(self, broker: int, mode: BrokerMode) -> None:
        """Stop the broker (controlled shutdown), start it in ``mode``, wait for it."""
        self.broker(broker).stop()
        self.start_broker(broker, mode)
        self.wait_broker(broker)

    def format_controller(self, controller: int, cluster_id: str, *, migration: bool) -> None:
        """Kafka 3.9's storage tool on the controller's properties (pykraft's for pykraft's
        controllers, at the ZK brokers' metadata.version)."""
        config = self._controller_config(controller, migration=migration)
        if not self.pykraft_controllers:
            self.tool(STORAGE, "format", "-t", cluster_id, "-c", str(config))
            return
        done = subprocess.run(_pykraft("storage", "format", "-t", cluster_id, "-c", str(config),
                                       "-r", ZK_BROKERS_METADATA_VERSION),
                              capture_output=True, text=True, timeout=TOOL_TIMEOUT_S,
                              check=False)
        if done.returncode != 0:
            raise ZkClusterError(f"pykraft storage format exited {done.returncode}:\n"
                                 f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")

    def _controller_config(self, controller: int, *, migration: bool) -> Path:
        kind = "migration" if migration else "kraft"
        return self._write_properties(f"{self.controller_name(controller)}.{kind}",
                                      self.controller_properties(controller,
                                                                 migration=migration))

    def start_controller(self, controller: int, *, migration: bool) -> None:
        name = self.controller_name(controller)
        config = self._controller_config(controller, migration=migration)
        self.controller(controller).start(
            _pykraft("server", str(config)) if self.pykraft_controllers
            else self.kafka.java("kafka.Kafka", str(config), heap=NODE_HEAP,
                                 log4j=self._log4j(name)))

    def wait_controller(self, controller: int) -> None:
        """Until the controller logs that it started (pykraft's node event or Kafka's)."""
        self.controller(controller).wait_line(
            "event=started state=" if self.pykraft_controllers else "Kafka Server started")

    def deprovision_controllers(self) -> None:
        """The operations guide's "deprovision the KRaft controller quorum" (its rollback):
        every controller stopped, then its data directory deleted."""
        controllers = [self.controller(c) for c in self.controller_ports]
        for process in controllers:
            process.terminate()
        for process in controllers:
            process.await_stop()
        for controller in self.controller_ports:
            shutil.rmtree(self.controller_data(controller), ignore_errors=True)

    def restart_controller(self, controller: int, *, migration: bool) -> None:
        self.controller(controller).stop()
        self.start_controller(controller, migration=migration)
        self.wait_controller(controller)

    def wait_controller_line(self, text: str, timeout_s: float = START_TIMEOUT_S,
                             ) -> tuple[int, str]:
        """The first controller whose current start logged a line holding ``text``: its id
        and the line."""
        scans = {c: self.controller(c).scan(text) for c in self.controller_ports}

        def probe() -> tuple[int, str] | None:
            return next(((controller, line) for controller, scan in scans.items()
                         if (line := scan.found()) is not None), None)
        found: tuple[int, str] = wait_for(f"a controller to log {text!r}", probe, timeout_s)
        return found

    def stop_all(self) -> None:
        """Brokers (their controlled shutdown needs the controllers), controllers, ZooKeeper."""
        groups = ([self.broker(b) for b in self.broker_ports],
                  [self.controller(c) for c in self.controller_ports], [self.processes["zk"]])
        for group in groups:
            for process in group:
                process.terminate()
            for process in group:
                process.await_stop()

    # -- tools -----------------------------------------------------------------------------

    def tool(self, main_class: str, *args: str, stdin: str = "",
             check: bool = True) -> subprocess.CompletedProcess[str]:
        """A Kafka 3.9.1 tool (its main class) in its own JVM, logging WARN to stderr;
        with ``check`` a non-zero exit fails."""
        log4j = self.base / "tools.log4j"
        if not log4j.exists():
            log4j.write_text(_TOOL_LOG4J)
        done = subprocess.run(self.kafka.java(main_class, *args, heap=TOOL_HEAP, log4j=log4j),
                              input=stdin, capture_output=True, text=True,
                              timeout=TOOL_TIMEOUT_S, check=False)
        if check and done.returncode != 0:
            raise ZkClusterError(f"{main_class} {' '.join(args)} exited {done.returncode}:\n"
                                 f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        return done

    def admin(self, main_class: str, *args: str, stdin: str = "") -> str:
        """A tool with ``--bootstrap-server`` the brokers; its stdout."""
        return self.tool(main_class, "--bootstrap-server", self.bootstrap_servers, *args,
                         stdin=stdin).stdout

    def wait_no_under_replicated(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Until ``kafka-topics --describe --under-replicated-partitions`` lists none."""
        def none_listed() -> bool | None:
            done = self.tool(TOPICS, "--bootstrap-server", self.bootstrap_servers,
                             "--describe", "--under-replicated-partitions", check=False)
            return True if done.returncode == 0 and not done.stdout.strip() else None
        wait_for("no under-replicated partition", none_listed, timeout_s)

    def produce(self, topic: str, count: int, tag: str) -> None:
        """``count`` keyed values ``k<i>:<tag>-<i>`` by the console producer, idempotent
        with acks=all (run.sh's ``produce``: keyed, so a compacted topic takes them)."""
        self.admin(CONSOLE_PRODUCER, "--topic", topic,
                   "--producer-property", "acks=all",
                   "--producer-property", "enable.idempotence=true",
                   "--property", "parse.key=true", "--property", "key.separator=:",
                   stdin="".join(f"k{i}:{tag}-{i}\n" for i in range(1, count + 1)))

    def start_verifiable_producer(self, topic: str, count: int, *, per_second: int,
                                  prefix: int) -> JavaProcess:
        """Kafka's ``VerifiableProducer`` in the background: ``count`` values
        ``<prefix>.<i>``, idempotent with acks=all, ``per_second`` at most; it prints one JSON
        line per acknowledged send (:func:`acknowledged_values`) and exits by itself.
        The caller stops it (:meth:`JavaProcess.await_stop`)."""
        config = self._write_properties(f"client-verifiable-{prefix}",
                                        {"enable.idempotence": "true", "acks": "all",
                                         # the tool sets retries=0, which idempotence refuses
                                         "retries": str(2**31 - 1)})
        log4j = self.base / "tools.log4j"
        if not log4j.exists():
            log4j.write_text(_TOOL_LOG4J)
        process = JavaProcess(f"producer-{prefix}", self.base / f"producer-{prefix}.log")
        process.start(self.kafka.java(
            VERIFIABLE_PRODUCER, "--bootstrap-server", self.bootstrap_servers, "--topic", topic,
            "--max-messages", str(count), "--throughput", str(per_second), "--acks", "-1",
            "--value-prefix", str(prefix), "--producer.config", str(config),
            heap=TOOL_HEAP, log4j=log4j))
        return process

    def consume(self, topic: str, *args: str, timeout_ms: int = 60000) -> list[str]:
        """The values the console consumer reads from the start of ``topic`` until
        ``timeout_ms`` pass without one (``args``: ``--group``, ``--max-messages``)."""
        done = self.tool(CONSOLE_CONSUMER, "--bootstrap-server", self.bootstrap_servers,
                         "--topic", topic, "--from-beginning", "--timeout-ms", str(timeout_ms),
                         *args, check=False)
        return done.stdout.splitlines()

    def producer_ids(self, broker: int, topic: str) -> set[int]:
        """The producer ids of every record batch of ``topic`` in ``broker``'s log dir
        (``kafka-dump-log`` over its segments)."""
        segments = sorted(self.broker_data(broker).glob(f"{topic}-*/*.log"))
        if not segments:
            raise ZkClusterError(f"broker {broker} has no segment of {topic}")
        dumped = self.tool(DUMP_LOG, "--files", ",".join(map(str, segments))).stdout
        return {int(found) for found in _PRODUCER_ID.findall(dumped)}

    def quorum_leader(self) -> int:
        """The KRaft leader as ``kafka-metadata-quorum describe --status`` names it."""
        status = self.tool(METADATA_QUORUM, "--bootstrap-controller",
                           self.bootstrap_controllers, "describe", "--status").stdout
        (leader,) = [line.split()[1] for line in status.splitlines()
                     if line.startswith("LeaderId")]
        return int(leader)

    def as_scram_user(self, main_class: str, user: str, password: str, *args: str,
                      mechanism: str = SCRAM_MECHANISMS[0]) -> subprocess.CompletedProcess[str]:
        """A tool through the SCRAM listener, authenticated as ``user`` (``--command-config``);
        its outcome, whatever its exit code."""
        config = self._write_properties(f"client-{user}", {
            "security.protocol": SCRAM_LISTENER, "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{SCRAM_LOGIN_MODULE} required username="{user}" '
                                f'password="{password}";'})
        return self.tool(main_class, "--bootstrap-server", self.scram_bootstrap_servers,
                         "--command-config", str(config), *args, check=False)

    def dump_metadata(self, controller: int) -> str:
        """``kafka-dump-log.sh --cluster-metadata-decoder`` over the controller's metadata
        log segments: Kafka 3.9's ``DumpLogSegments`` output."""
        segments = sorted((self.controller_data(controller) / "__cluster_metadata-0")
                          .glob("*.log"))
        if not segments:
            raise ZkClusterError(f"controller {controller} has no metadata log segment")
        return self.tool(DUMP_LOG, "--cluster-metadata-decoder", "--files",
                         ",".join(map(str, segments))).stdout


class ZkLink:
    """A TCP relay the controllers reach ZooKeeper through, which a test cuts: :meth:`cut`
    closes every relayed connection and refuses new ones until :meth:`mend`, so ZooKeeper,
    running on, expires the sessions behind it — a real expiry on the real server, as a
    network partition makes one. Threads of the test process, closed by :meth:`close`."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        (self.port,) = free_ports(1)
        self._listener = socket.create_server((HOST, self.port))
        self._listener.settimeout(0.2)
        self._lock = threading.Lock()
        self._links: list[tuple[socket.socket, socket.socket]] = []
        self._cut = False
        self._closed = False
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    def local_ports(self) -> set[int]:
        """The ports the relayed connections reach ZooKeeper from."""
        with self._lock:
            return {upstream.getsockname()[1] for _, upstream in self._links}

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            links, self._links = self._links, []
        for pair in links:
            _close(*pair)

    def mend(self) -> None:
        with self._lock:
            self._cut = False

    def close(self) -> None:
        self._closed = True
        self.cut()
        for thread in self._threads:
            thread.join(STOP_TIMEOUT_S)
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            try:
                upstream = socket.create_connection((HOST, self.upstream_port), timeout=5.0)
            except OSError:  # ZooKeeper is down: the client sees the connection drop
                client.close()
                continue
            client.settimeout(None)
            upstream.settimeout(None)
            with self._lock:
                if self._cut:
                    _close(client, upstream)
                    continue
                self._links.append((client, upstream))
            for source, target in ((client, upstream), (upstream, client)):
                thread = threading.Thread(target=self._pump, args=(source, target), daemon=True)
                self._threads.append(thread)
                thread.start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        """Bytes from ``source`` to ``target`` until either closes; then both are closed
        and the link forgotten."""
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        with self._lock:
            self._links = [link for link in self._links if source not in link]
        _close(source, target)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()


def _pykraft(*args: str) -> list[str]:
    """The command running pykraft's CLI in this interpreter (its environment inherited)."""
    return [sys.executable, "-m", "pykraft", *args]


ZK_TLS_PASSWORD = "zk-tls-secret"


def _inter_broker_sasl(user: str, more: str = "") -> dict[str, str]:
    """A node's keys for the SASL_PLAINTEXT listener as its inter-broker one, authenticating
    as ``user`` with PLAIN (``more``: a broker's ``user_<name>`` options, whom it accepts)."""
    jaas = (f'{PLAIN_LOGIN_MODULE} required username="{user}" '
            f'password="{INTER_BROKER_USERS[user]}" {more}'.rstrip() + ";")
    return {"inter.broker.listener.name": SCRAM_LISTENER,
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            f"listener.name.{SCRAM_LISTENER.lower()}.plain.sasl.jaas.config": jaas}


@dataclass(frozen=True)
class ZkPki:
    """The ZooKeeper TLS test's certificates: a CA, ZooKeeper's server certificate and the
    controller's client certificate (both for 127.0.0.1, as ZooKeeper also checks a client's
    name by default), and a CA nobody trusts."""

    ca: Issued
    server: Issued
    client: Issued
    stranger_ca: Issued


@cache
def zk_pki() -> ZkPki:
    now = datetime.datetime.now(datetime.UTC)
    ca = new_ca("CN=pykraft-zk-test-ca", now)
    return ZkPki(ca=ca, server=issue(ca, "CN=zookeeper", now, hosts=(HOST, "localhost")),
                 client=issue(ca, "CN=controller", now, hosts=(HOST, "localhost")),
                 stranger_ca=new_ca("CN=stranger-ca", now))


def acknowledged_values(producer: JavaProcess) -> list[str]:
    """The values a :meth:`ZkCluster.start_verifiable_producer` saw acknowledged."""
    sent = (json.loads(line) for line in producer.output().splitlines()
            if line.startswith("{"))
    return [event["value"] for event in sent if event.get("name") == "producer_send_success"]


def acknowledged_after(producer: JavaProcess, count: int) -> int:
    """Once the running producer has more than ``count`` acknowledgements: how many."""
    def more() -> int | None:
        if not producer.running:
            raise ZkClusterError(f"the verifiable producer exited:\n{producer.output()[-3000:]}")
        acknowledged = len(acknowledged_values(producer))
        return acknowledged if acknowledged > count else None
    found: int = wait_for(f"more than {count} acknowledgements", more, 180.0)
    return found


@contextmanager
def zk_cluster(base: Path, *, brokers: tuple[int, ...] = BROKER_IDS,
               controllers: tuple[int, ...] = CONTROLLER_IDS,
               controller_properties: Mapping[str, str] | None = None,
               request_logs: bool = False, scram_listener: bool = False,
               pykraft_controllers: bool = False, zk_tls: bool = False,
               inter_broker_sasl: bool = False) -> Iterator[ZkCluster]:
    """A :class:`ZkCluster` (Kafka 3.9.1 required: :func:`required`) whose processes are all
    stopped by PID when the block ends, failed or not."""
    cluster = ZkCluster(base, required(), brokers=brokers, controllers=controllers,
                        controller_properties=controller_properties,
                        request_logs=request_logs, scram_listener=scram_listener,
                        pykraft_controllers=pykraft_controllers, zk_tls=zk_tls,
                        inter_broker_sasl=inter_broker_sasl)
    try:
        yield cluster
    finally:
        cluster.stop_all()
