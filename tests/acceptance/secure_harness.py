"""A secure cluster for the client matrix over SASL_SSL (tests/acceptance/test_secure_matrix.py):
``cluster up --secure``'s layout (:mod:`pykraft.tools.secure_cluster`) with one controller and
``brokers`` brokers. Every listener is SASL_SSL with the cluster's own CA; brokers enable
SCRAM-SHA-512 (and -256) for clients; the StandardAuthorizer runs everywhere with
``User:admin`` (bootstrapped by ``storage format --add-scram``) a super user; no other
principal has any ACL to begin with.

Each client's settings for a user come from :class:`SaslSsl`: Kafka's properties (the Java
client and ``pykraft`` tools' ``--command-config``), librdkafka's, kafka-python's and
aiokafka's keyword arguments.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker_harness import PROPERTIES, wait_for

from pykraft.errors import PyKraftError
from pykraft.security.jaas import SCRAM_LOGIN_MODULE
from pykraft.tools.admin_client import AdminClient, admin_settings
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.secure_cluster import ADMIN, CLIENT_MECHANISM

STARTUP_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class SaslSsl:
    """A running secure cluster and how each client reaches it as a given user."""

    cluster: LocalCluster

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    @property
    def ca_file(self) -> Path:
        return self.cluster.security_files.ca_file

    @property
    def admin_password(self) -> str:
        """The super user's password, as ``cluster up --secure`` made it."""
        return self.admin_librdkafka["sasl.password"]

    @property
    def admin_properties(self) -> Path:
        """``client.properties``: the admin's ``--command-config``."""
        return self.cluster.security_files.client_properties

    @property
    def admin_librdkafka(self) -> dict[str, str]:
        """``librdkafka.properties``: the admin's librdkafka configuration."""
        return self.cluster.security_files.librdkafka_settings()

    def properties(self, user: str, password: str) -> dict[str, str]:
        """Kafka's client properties (the Java client, ``--command-config``)."""
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": CLIENT_MECHANISM,
                "sasl.jaas.config": f'{SCRAM_LOGIN_MODULE} required username="{user}" '
                                    f'password="{password}";',
                "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca_file)}

    def properties_file(self, user: str, password: str) -> Path:
        """:meth:`properties` in a file of the cluster directory named after the user and
        password."""
        path = self.cluster.base / f"{user}-{password}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.properties(user, password).items()))
        return path

    def librdkafka(self, user: str, password: str) -> dict[str, str]:
        """librdkafka's configuration (confluent-kafka, kcat ``-X``)."""
        return {"bootstrap.servers": self.bootstrap, "security.protocol": "SASL_SSL",
                "sasl.mechanism": CLIENT_MECHANISM, "sasl.username": user,
                "sasl.password": password, "ssl.ca.location": str(self.ca_file)}

    def kafka_python(self, user: str, password: str) -> dict[str, Any]:
        """kafka-python's keyword arguments (producer, consumer, admin)."""
        return {"bootstrap_servers": self.bootstrap, "security_protocol": "SASL_SSL",
                "ssl_cafile": str(self.ca_file), "sasl_mechanism": CLIENT_MECHANISM,
                "sasl_plain_username": user, "sasl_plain_password": password}

    def aiokafka(self, user: str, password: str) -> dict[str, Any]:
        """aiokafka's keyword arguments (it takes an SSLContext, not a CA file)."""
        from aiokafka.helpers import create_ssl_context

        return {"bootstrap_servers": self.bootstrap, "security_protocol": "SASL_SSL",
                "ssl_context": create_ssl_context(cafile=str(self.ca_file)),
                "sasl_mechanism": CLIENT_MECHANISM, "sasl_plain_username": user,
                "sasl_plain_password": password}

    def broker_logs(self) -> list[Path]:
        return [self.cluster.nodes[b].log for b in self.cluster.brokers]


def brokers_seen(bootstrap: str, properties: Path) -> int | None:
    """How many brokers Metadata lists to the client ``properties`` make (``admin``'s
    ``client.properties``, a user's) over SASL_SSL (None: no answer yet, or refused)."""
    settings = admin_settings(bootstrap, properties)

    async def run() -> int:
        async with AdminClient(settings) as admin:
            return len((await admin.metadata([])).brokers)
    try:
        return asyncio.run(asyncio.wait_for(run(), 10))
    except (PyKraftError, OSError, TimeoutError):  # not up yet: the caller polls
        return None


@contextmanager
def sasl_ssl_cluster(base: Path, brokers: int = 3,
                     more: Mapping[str, str] | None = None) -> Iterator[SaslSsl]:
    """The cluster (``more`` properties on every node), running with every broker in
    admin's Metadata; stopped when the block ends."""
    properties = {**PROPERTIES, "group.initial.rebalance.delay.ms": "0", **(more or {})}
    cluster = LocalCluster.create(base, 1, properties, brokers=brokers, secure=True)
    cluster.start_all()
    try:
        secure = SaslSsl(cluster)
        wait_for(f"{brokers} brokers in {ADMIN}'s metadata over SASL_SSL",
                 lambda: True if brokers_seen(
                     secure.bootstrap, secure.admin_properties) == brokers else None,
                 timeout_s=STARTUP_TIMEOUT_S)
        yield secure
    finally:
        cluster.stop_all()
