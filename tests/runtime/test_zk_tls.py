"""A migrating controller's ZooKeeper TLS (``runtime/zk_tls.py``): Kafka 3.9's
``zookeeper.ssl.*`` keys as the session's context (ZooKeeper's defaults, store types from
file names, one password, host name verification per the algorithm), refusals naming the
``zookeeper.*`` key, and kazoo's connections wrapped in that context (``TlsHandler``) against
a Python TLS server. The session against a real ZooKeeper over TLS:
``tests/migration_e2e/test_zk_session_tls.py``."""

from __future__ import annotations

import re
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import pytest
from kazoo.handlers.threading import KazooTimeoutError
from tls_fixtures import NOW, pem_files, pki

from pykraft.config.server import ServerConfig
from pykraft.errors import ConfigError
from pykraft.migration.zk_ops import ZkUnavailableError
from pykraft.runtime.settings import ZkClientSettings
from pykraft.runtime.tls import server_tls
from pykraft.runtime.zk_session import TlsHandler, ZkSession
from pykraft.runtime.zk_tls import NETTY_SOCKET, zk_client_context
from pykraft.security.certificates import Issued, issue
from pykraft.tools.local_cluster import HOST, free_ports

PASSWORD = "zk-secret"
DEADLINE_S = 10.0


def stores(directory: Path, *, keystore: str = "client.p12") -> dict[str, str]:
    """A PKCS12 key store (type from its name) and a PEM trust store, as Kafka's keys."""
    (directory / keystore).write_bytes(pki().client.pkcs12(PASSWORD.encode()))
    (directory / "ca.pem").write_bytes(pki().ca.chain_pem())
    return {"zookeeper.connect": "127.0.0.1:2182", "zookeeper.ssl.client.enable": "true",
            "zookeeper.clientCnxnSocket": NETTY_SOCKET,
            "zookeeper.ssl.keystore.location": str(directory / keystore),
            "zookeeper.ssl.keystore.password": PASSWORD,
            "zookeeper.ssl.truststore.location": str(directory / "ca.pem")}


def context(properties: dict[str, str]) -> ssl.SSLContext:
    made = zk_client_context(ServerConfig(properties))
    assert made is not None
    return made


def test_plaintext_unless_enabled(tmp_path: Path) -> None:
    properties = stores(tmp_path)
    properties["zookeeper.ssl.client.enable"] = "false"
    assert ZkClientSettings.of(ServerConfig(properties)).tls is None


def test_kafkas_defaults_tls_1_2_only_and_the_host_name_verified(tmp_path: Path) -> None:
    settings = ZkClientSettings.of(ServerConfig(stores(tmp_path)))
    assert settings.tls is not None
    assert (settings.tls.minimum_version, settings.tls.maximum_version) == (
        ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_2)
    assert settings.tls.check_hostname and settings.tls.verify_mode == ssl.CERT_REQUIRED


@pytest.mark.parametrize(("algorithm", "verified"), [
    ("HTTPS", True), ("https", True), ("", False), ("NONE", False)])
def test_host_name_verification_per_the_algorithm(tmp_path: Path, algorithm: str,
                                                   verified: bool) -> None:
    made = context({**stores(tmp_path),
                    "zookeeper.ssl.endpoint.identification.algorithm": algorithm})
    assert made.check_hostname is verified
    assert made.verify_mode == ssl.CERT_REQUIRED  # the certificate is verified regardless


def test_protocols(tmp_path: Path) -> None:
    made = context({**stores(tmp_path), "zookeeper.ssl.protocol": "TLSv1.3",
                    "zookeeper.ssl.enabled.protocols": "TLSv1.2,TLSv1.3"})
    assert (made.minimum_version, made.maximum_version) == (
        ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)
    only_13 = context({**stores(tmp_path), "zookeeper.ssl.protocol": "TLSv1.3"})
    assert only_13.minimum_version == ssl.TLSVersion.TLSv1_3


def test_pem_stores_with_an_encrypted_key(tmp_path: Path) -> None:
    ssl_keys = pem_files(tmp_path, pki().client, pki().ca, "zk", PASSWORD.encode())
    properties = {**stores(tmp_path),
                  "zookeeper.ssl.keystore.location": ssl_keys["ssl.keystore.location"],
                  "zookeeper.ssl.truststore.location": ssl_keys["ssl.truststore.location"]}
    assert context(properties).check_hostname
    del properties["zookeeper.ssl.keystore.password"]
    with pytest.raises(ConfigError, match=r"the key is encrypted: set "
                                          r"zookeeper\.ssl\.keystore\.password"):
        context(properties)


@pytest.mark.parametrize(("change", "message"), [
    ({"zookeeper.clientCnxnSocket": ""}, f"needs zookeeper.clientCnxnSocket={NETTY_SOCKET}"),
    ({"zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNIO"},
     "not org.apache.zookeeper.ClientCnxnSocketNIO"),
    ({"zookeeper.ssl.keystore.password": "wrong"},
     "zookeeper.ssl.keystore.location: cannot load the PKCS12 store .* is "
     "zookeeper.ssl.keystore.password right"),
    ({"zookeeper.ssl.keystore.type": "JKS"},
     "zookeeper.ssl.keystore.type: JKS key stores are not supported: convert the store to "
     "PKCS12 .* set zookeeper.ssl.keystore.type=PKCS12 or PEM"),
    ({"zookeeper.ssl.truststore.location": "/nonexistent/ca.pem"},
     "zookeeper.ssl.truststore.location: cannot read /nonexistent/ca.pem"),
    ({"zookeeper.ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"},
     "zookeeper.ssl.cipher.suites: pykraft cannot enable some TLS 1.3 suites"),
    ({"zookeeper.ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,NO_SUCH_SUITE"},
     "zookeeper.ssl.cipher.suites: NO_SUCH_SUITE: not a cipher suite"),
    ({"zookeeper.ssl.crl.enable": "true"}, "zookeeper.ssl.crl.enable"),
    ({"zookeeper.ssl.ocsp.enable": "true"}, "zookeeper.ssl.ocsp.enable"),
    ({"zookeeper.ssl.protocol": "SSLv3"}, "zookeeper.ssl.protocol"),
])
def test_refusals_name_the_zookeeper_key(tmp_path: Path, change: dict[str, str],
                                         message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ZkClientSettings.of(ServerConfig({**stores(tmp_path), **change}))


@pytest.mark.parametrize(("name", "message"), [
    ("client.jks", "zookeeper.ssl.keystore.type: JKS key stores are not supported"),
    ("client.store", "cannot tell the type of zookeeper.ssl.keystore.location"),
])
def test_a_store_type_from_its_file_name(tmp_path: Path, name: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        context(stores(tmp_path, keystore=name))
    assert context(stores(tmp_path, keystore="client.pfx")).check_hostname


# -- kazoo's connections through TlsHandler --------------------------------------------------

@contextmanager
def tls_server(tmp_path: Path, identity: Issued) -> Iterator[int]:
    """A TLS server on 127.0.0.1 that completes (or fails) one handshake."""
    server = server_tls(pem_files(tmp_path, identity, pki().ca, "server"), "ZK").context
    listener = socket.create_server((HOST, free_ports(1)[0]))
    listener.settimeout(DEADLINE_S)

    def serve() -> None:
        conn, _ = listener.accept()
        conn.settimeout(DEADLINE_S)
        try:
            server.wrap_socket(conn, server_side=True).close()
        except OSError:  # the client refused the certificate
            conn.close()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        thread.join(DEADLINE_S)
        listener.close()


def connect(handler: TlsHandler, port: int) -> None:
    handler.create_connection((HOST, port), hostname=HOST, timeout=DEADLINE_S,
                              use_ssl=True, ca=None).close()


def test_the_handler_connects_over_tls_to_a_trusted_server(tmp_path: Path) -> None:
    handler = TlsHandler(context(stores(tmp_path)))
    with tls_server(tmp_path, pki().server) as port:
        connect(handler, port)
    assert handler.failure is None


def test_the_handler_refuses_an_unknown_ca(tmp_path: Path) -> None:
    handler = TlsHandler(context(stores(tmp_path)))
    with tls_server(tmp_path, pki().stranger) as port, pytest.raises(ssl.SSLError):
        connect(handler, port)
    assert handler.failure == "self-signed certificate in certificate chain"


def test_the_handler_verifies_the_host_name_unless_told_not_to(tmp_path: Path) -> None:
    elsewhere = issue(pki().ca, "CN=elsewhere", NOW, hosts=("zk.elsewhere.example",))
    verifying = TlsHandler(context(stores(tmp_path)))
    with tls_server(tmp_path, elsewhere) as port, pytest.raises(ssl.SSLError):
        connect(verifying, port)
    assert verifying.failure is not None and "mismatch" in verifying.failure
    lenient = TlsHandler(context({
        **stores(tmp_path), "zookeeper.ssl.endpoint.identification.algorithm": ""}))
    with tls_server(tmp_path, elsewhere) as port:
        connect(lenient, port)


def test_the_session_gives_kazoo_the_handler_and_names_a_failed_handshake(
        tmp_path: Path) -> None:
    settings = ZkClientSettings.of(ServerConfig(stores(tmp_path)))
    made: list[dict[str, object]] = []

    class NoHandshake:
        """A kazoo client whose every handshake failed until the connection timeout."""

        def __init__(self, **kwargs: object) -> None:
            made.append(kwargs)
            handler = kwargs["handler"]
            assert isinstance(handler, TlsHandler)
            self.handler = handler

        def start(self, timeout: float) -> None:
            self.handler.failure = "certificate verify failed"
            raise KazooTimeoutError("Connection time-out")

    with pytest.raises(ZkUnavailableError, match=re.escape(
            "no ZooKeeper server of 127.0.0.1:2182 answered within 18000 ms (the last TLS "
            "handshake failed: certificate verify failed)")):
        ZkSession(settings, client_factory=NoHandshake).start()
    assert [(kwargs["use_ssl"], cast(TlsHandler, kwargs["handler"]).context)
            for kwargs in made] == [(True, settings.tls)]
