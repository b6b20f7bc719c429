"""A SASL_SSL cluster for the secure client matrix (tests/acceptance/test_secure_matrix.py).

One controller and ``brokers`` brokers. The controller listener is SSL with required client
certificates: every node presents the same certificate (``CN=node``), so brokers reach the
controller as ``User:CN=node``. Each broker's client listener ``SASL_SSL`` enables
SCRAM-SHA-512 only; brokers replicate over it as ``admin`` (bootstrapped by ``storage format
--add-scram``). The StandardAuthorizer runs everywhere with ``User:admin`` and
``User:CN=node`` as super users; no other principal has any ACL to begin with.

Each client's settings for a user come from :class:`SaslSsl`: Kafka's properties (the Java
client and ``pykraft`` tools' ``--command-config``), librdkafka's, kafka-python's and
aiokafka's keyword arguments.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker_harness import PROPERTIES, wait_for
from security_harness import formatted_cluster, write_node

from pykraft.errors import PyKraftError
from pykraft.security.certificates import issue, new_ca
from pykraft.security.jaas import SCRAM_LOGIN_MODULE
from pykraft.tools.admin_client import AdminClient, admin_settings
from pykraft.tools.local_cluster import (
    BROKER,
    CONTROLLER,
    FIRST_BROKER_ID,
    HOST,
    LocalCluster,
    NodeFiles,
    free_ports,
)

ADMIN, ADMIN_PASSWORD = "admin", "admin-secret"
MECHANISM = "SCRAM-SHA-512"
NODE_PRINCIPAL = "User:CN=node"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
LISTENER = "SASL_SSL"
STARTUP_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class SaslSsl:
    """A running SASL_SSL cluster and how each client reaches it as a given user."""

    cluster: LocalCluster
    ca_file: Path
    directory: Path

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    def properties(self, user: str, password: str) -> dict[str, str]:
        """Kafka's client properties (the Java client, ``--command-config``)."""
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": MECHANISM,
                "sasl.jaas.config": f'{SCRAM_LOGIN_MODULE} required username="{user}" '
                                    f'password="{password}";',
                "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca_file)}

    def properties_file(self, user: str, password: str) -> Path:
        """:meth:`properties` written to a file named after the user and password."""
        path = self.directory / f"{user}-{password}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.properties(user, password).items()))
        return path

    def librdkafka(self, user: str, password: str) -> dict[str, str]:
        """librdkafka's configuration (confluent-kafka, kcat ``-X``)."""
        return {"bootstrap.servers": self.bootstrap, "security.protocol": "SASL_SSL",
                "sasl.mechanism": MECHANISM, "sasl.username": user, "sasl.password": password,
                "ssl.ca.location": str(self.ca_file)}

    def kafka_python(self, user: str, password: str) -> dict[str, Any]:
        """kafka-python's keyword arguments (producer, consumer, admin)."""
        return {"bootstrap_servers": self.bootstrap, "security_protocol": "SASL_SSL",
                "ssl_cafile": str(self.ca_file), "sasl_mechanism": MECHANISM,
                "sasl_plain_username": user, "sasl_plain_password": password}

    def aiokafka(self, user: str, password: str) -> dict[str, Any]:
        """aiokafka's keyword arguments (it takes an SSLContext, not a CA file)."""
        from aiokafka.helpers import create_ssl_context

        return {"bootstrap_servers": self.bootstrap, "security_protocol": "SASL_SSL",
                "ssl_context": create_ssl_context(cafile=str(self.ca_file)),
                "sasl_mechanism": MECHANISM, "sasl_plain_username": user,
                "sasl_plain_password": password}

    def broker_logs(self) -> list[Path]:
        return [self.cluster.nodes[b].log for b in self.cluster.brokers]


def _node_properties(directory: Path, now: datetime.datetime) -> dict[str, str]:
    """The TLS files (a private CA, one certificate for every node) and the security
    settings every node shares."""
    ca = new_ca("CN=secure-matrix-ca", now)
    node = issue(ca, "CN=node", now, hosts=(HOST, "localhost"))
    keystore, truststore = directory / "node-keystore.pem", directory / "ca.pem"
    keystore.write_bytes(node.keystore_pem())
    truststore.write_bytes(ca.chain_pem())
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(truststore),
            "listener.name.controller.ssl.client.auth": "required",
            "authorizer.class.name": AUTHORIZER,
            "super.users": f"User:{ADMIN};{NODE_PRINCIPAL}"}


def _brokers_seen(secure: SaslSsl) -> int | None:
    """How many brokers Metadata lists to ``admin`` over SASL_SSL (None: no answer yet)."""
    settings = admin_settings(secure.bootstrap, secure.properties_file(ADMIN, ADMIN_PASSWORD))

    async def run() -> int:
        async with AdminClient(settings) as admin:
            return len((await admin.metadata([])).brokers)
    try:
        return asyncio.run(asyncio.wait_for(run(), 10))
    except (PyKraftError, OSError, TimeoutError):  # not up yet: the caller polls
        return None


@contextmanager
def sasl_ssl_cluster(base: Path, brokers: int = 3) -> Iterator[SaslSsl]:
    """The cluster, running with every broker unfenced; stopped when the block ends."""
    base.mkdir(parents=True)
    shared = {**PROPERTIES, **_node_properties(base, datetime.datetime.now(datetime.UTC)),
              "controller.listener.names": "CONTROLLER",
              "group.initial.rebalance.delay.ms": "0"}
    controller_port, *broker_ports = free_ports(1 + brokers)
    controller = NodeFiles(1, controller_port, base / "node-1", CONTROLLER)
    shared["controller.quorum.voters"] = f"1@{controller.address}"
    write_node(controller, {**shared, "process.roles": "controller", "node.id": "1",
                        "listeners": f"CONTROLLER://{controller.address}",
                        "listener.security.protocol.map": "CONTROLLER:SSL",
                        "log.dirs": str(controller.data)})
    nodes = [controller]
    jaas = f"listener.name.{LISTENER.lower()}.{MECHANISM.lower()}.sasl.jaas.config"
    for i, port in enumerate(broker_ports):
        broker = NodeFiles(FIRST_BROKER_ID + i, port, base / f"node-{FIRST_BROKER_ID + i}",
                           BROKER)
        write_node(broker, {
            **shared, "process.roles": "broker", "node.id": str(broker.node_id),
            "listeners": f"{LISTENER}://{broker.address}",
            "listener.security.protocol.map": f"{LISTENER}:SASL_SSL,CONTROLLER:SSL",
            "inter.broker.listener.name": LISTENER, "sasl.enabled.mechanisms": MECHANISM,
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            jaas: f'{SCRAM_LOGIN_MODULE} required username="{ADMIN}" '
                  f'password="{ADMIN_PASSWORD}";',
            "log.dirs": str(broker.data)})
        nodes.append(broker)
    cluster = formatted_cluster(
        base, nodes, (f"{MECHANISM}=[name={ADMIN},password={ADMIN_PASSWORD}]",))
    cluster.start_all()
    try:
        secure = SaslSsl(cluster, base / "ca.pem", base)
        wait_for(f"{brokers} brokers in admin's metadata over SASL_SSL",
                 lambda: True if _brokers_seen(secure) == brokers else None,
                 timeout_s=STARTUP_TIMEOUT_S)
        yield secure
    finally:
        cluster.stop_all()
