"""The security of ``pykraft cluster up --secure``: a private CA, SASL_SSL everywhere, ACLs.

Under the cluster directory it keeps ``security/ca.pem`` (the CA every node and client
trusts), ``security/ca-key.pem`` and ``security/secrets.properties`` (to issue a certificate
for a controller added later), each node's ``keystore.pem`` (its key and chain, valid for
127.0.0.1 and localhost), ``client.properties`` (the ``admin`` user's ``--command-config``:
SASL_SSL with SCRAM-SHA-512) and ``librdkafka.properties`` (the same for librdkafka: kcat
``-F``, confluent-kafka). Files holding a key or a password are 0600. Nothing is generated
again on a restart: the same certificates and passwords keep working.

Every listener is SASL_SSL. Between nodes Kafka cannot use SCRAM to reach the controllers
(the credentials live in the metadata log the controllers need before they can check one),
so the controller listener authenticates nodes with PLAIN as ``controller``
(``sasl.mechanism.controller.protocol``); it enables SCRAM-SHA-512/256 too, which Kafka's
controllers serve from their metadata once loaded, so a tool run with ``client.properties``
logs in to a controller as ``admin``. Broker listeners enable SCRAM-SHA-512 and -256;
brokers replicate as ``admin`` with SCRAM-SHA-512, a credential bootstrapped by
``storage format --add-scram`` (KIP-900). The StandardAuthorizer checks every request;
``User:admin`` and ``User:controller`` are super users.
"""

from __future__ import annotations

import datetime
import os
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pykraft.config.authorizer import STANDARD_AUTHORIZER
from pykraft.config.properties import load_properties
from pykraft.security.certificates import Issued, issue, new_ca
from pykraft.security.jaas import PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE
from pykraft.tools.admin_client import ClientSecurity, client_security

ADMIN = "admin"
CONTROLLER_USER = "controller"
CLIENT_MECHANISM = "SCRAM-SHA-512"
SCRAM_ENABLED = "SCRAM-SHA-512,SCRAM-SHA-256"
BROKER_LISTENER = "SASL_SSL"
CLIENT_PROPERTIES = "client.properties"
LIBRDKAFKA_PROPERTIES = "librdkafka.properties"
_HOSTS = ("127.0.0.1", "localhost")
_PRIVATE = 0o600


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` readable by its owner only (0600 from the start)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, _PRIVATE)
    with os.fdopen(fd, "wb") as file:
        file.write(data)
    os.chmod(path, _PRIVATE)  # an existing file keeps its mode through O_CREAT


def _properties(props: Mapping[str, str]) -> bytes:
    return "".join(f"{k}={v}\n" for k, v in props.items()).encode()


@dataclass(frozen=True, slots=True)
class SecureCluster:
    """The security files of the cluster rooted at ``base``."""

    base: Path

    @property
    def directory(self) -> Path:
        return self.base.resolve() / "security"

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def client_properties(self) -> Path:
        return self.base.resolve() / CLIENT_PROPERTIES

    @property
    def librdkafka_properties(self) -> Path:
        return self.base.resolve() / LIBRDKAFKA_PROPERTIES

    @property
    def _ca_key(self) -> Path:
        return self.directory / "ca-key.pem"

    @property
    def _secrets(self) -> Path:
        return self.directory / "secrets.properties"

    def create(self, now: datetime.datetime) -> None:
        """A new CA and new random passwords (the client files come with the brokers'
        addresses: :meth:`write_client_files`)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        ca = new_ca("CN=pykraft-cluster-ca,O=pykraft", now)
        write_private(self._ca_key, ca.key_pem())
        self.ca_file.write_bytes(ca.chain_pem())
        write_private(self._secrets, _properties({
            "admin.password": secrets.token_hex(16),
            "controller.password": secrets.token_hex(16)}))

    def _password(self, user: str) -> str:
        return load_properties(self._secrets)[f"{user}.password"]

    def scram_arguments(self) -> tuple[str, ...]:
        """``storage format --add-scram`` for ``admin``, both mechanisms."""
        password = self._password(ADMIN)
        return tuple(f"{mechanism}=[name={ADMIN},password={password}]"
                     for mechanism in SCRAM_ENABLED.split(","))

    def issue_keystore(self, path: Path, node_id: int, now: datetime.datetime) -> None:
        """The node's key and certificate chain, signed by the cluster's CA."""
        key = serialization.load_pem_private_key(self._ca_key.read_bytes(), None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        ca = Issued(key, tuple(x509.load_pem_x509_certificates(self.ca_file.read_bytes())))
        node = issue(ca, f"CN=node-{node_id},O=pykraft", now, hosts=_HOSTS)
        write_private(path, node.keystore_pem())

    def node_properties(self, keystore: Path, *, broker: bool) -> dict[str, str]:
        """What a node adds to its server.properties (``CONTROLLER`` is the controller
        listener, ``SASL_SSL`` a broker's)."""
        controller_password = self._password(CONTROLLER_USER)
        props = {
            "listener.security.protocol.map": f"CONTROLLER:SASL_SSL,{BROKER_LISTENER}:SASL_SSL",
            "ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore.resolve()),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca_file),
            "sasl.enabled.mechanisms": SCRAM_ENABLED,
            "listener.name.controller.sasl.enabled.mechanisms": f"PLAIN,{SCRAM_ENABLED}",
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config":
                f'{PLAIN_LOGIN_MODULE} required username="{CONTROLLER_USER}" '
                f'password="{controller_password}" '
                f'user_{CONTROLLER_USER}="{controller_password}";',
            **{f"listener.name.controller.{m.lower()}.sasl.jaas.config":
               f"{SCRAM_LOGIN_MODULE} required;" for m in SCRAM_ENABLED.split(",")},
            "authorizer.class.name": STANDARD_AUTHORIZER,
            "super.users": f"User:{ADMIN};User:{CONTROLLER_USER}",
        }
        if broker:
            listener = f"listener.name.{BROKER_LISTENER.lower()}"
            props |= {
                "inter.broker.listener.name": BROKER_LISTENER,
                "sasl.mechanism.inter.broker.protocol": CLIENT_MECHANISM,
                f"{listener}.scram-sha-512.sasl.jaas.config":
                    f'{SCRAM_LOGIN_MODULE} required username="{ADMIN}" '
                    f'password="{self._password(ADMIN)}";',
                f"{listener}.scram-sha-256.sasl.jaas.config": f"{SCRAM_LOGIN_MODULE} required;",
            }
        return props

    def write_client_files(self, bootstrap_servers: str) -> None:
        """``client.properties`` (Kafka's tools) and ``librdkafka.properties``."""
        password = self._password(ADMIN)
        write_private(self.client_properties, _properties({
            "security.protocol": "SASL_SSL", "sasl.mechanism": CLIENT_MECHANISM,
            "sasl.jaas.config": f'{SCRAM_LOGIN_MODULE} required username="{ADMIN}" '
                                f'password="{password}";',
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca_file)}))
        write_private(self.librdkafka_properties, _properties({
            "bootstrap.servers": bootstrap_servers, "security.protocol": "SASL_SSL",
            "sasl.mechanism": CLIENT_MECHANISM, "sasl.username": ADMIN,
            "sasl.password": password, "ssl.ca.location": str(self.ca_file)}))

    def delete(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
        self.client_properties.unlink(missing_ok=True)
        self.librdkafka_properties.unlink(missing_ok=True)

    def security(self) -> ClientSecurity:
        """How the tools connect with ``client.properties``."""
        return client_security(load_properties(self.client_properties))

    def librdkafka_settings(self) -> dict[str, str]:
        """``librdkafka.properties`` as a confluent-kafka configuration."""
        return load_properties(self.librdkafka_properties)

    def usage_lines(self, bootstrap_servers: str, bootstrap_controllers: str) -> list[str]:
        """What ``cluster up --secure`` prints: where the credentials are, and the exact
        commands that use them (the password stays in the 0600 files)."""
        client, rdkafka = self.client_properties, self.librdkafka_properties
        return [
            f"Every listener is SASL_SSL (CA {self.ca_file}); user {ADMIN} "
            f"({CLIENT_MECHANISM}, a super user) in {client}",
            f"  pykraft topics --bootstrap-server {bootstrap_servers} --command-config "
            f"{client} --list",
            f"  pykraft metadata-quorum --bootstrap-controller {bootstrap_controllers} "
            f"--command-config {client} describe --status",
            f"  kcat -F {rdkafka} -L   (librdkafka 2.6.1 or later: older ones repeat the "
            "client nonce in SCRAM's final message, which Kafka 4 refuses)",
            "  confluent-kafka: Producer(dict(line.rstrip('\\n').split('=', 1) for line in "
            f"open('{rdkafka}') if '=' in line))",
        ]
