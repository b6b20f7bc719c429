"""pykraft's ZooKeeper session over TLS (``zookeeper.ssl.*``, ``runtime/zk_tls.py``) against
a real ZooKeeper 3.8.4's ``secureClientPort`` (Netty, client certificates required): a
session made from Kafka's keys (a PKCS12 key store, a PEM trust store, host name verified)
writes and reads there what the plaintext port then shows; trusting another CA, or speaking
plaintext to the TLS port, opens no session, and the error says why."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from zk_cluster import ZkCluster, zk_cluster, zk_pki

from pykraft.config.server import ServerConfig
from pykraft.migration.zk_ops import CreateOp, ZkError, ZkOpResult, ZkUnavailableError
from pykraft.migration.zk_tree import ZkRead
from pykraft.runtime.settings import ZkClientSettings
from pykraft.runtime.zk_session import ZkSession

REFUSED_TIMEOUT_MS = "3000"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZkCluster]:
    with zk_cluster(tmp_path_factory.mktemp("zk-tls"), zk_tls=True) as made:
        made.start_zookeeper()
        yield made


def tls_session(properties: dict[str, str]) -> ZkSession:
    settings = ZkClientSettings.of(ServerConfig(properties))
    assert settings.tls is not None and settings.tls.check_hostname
    return ZkSession(settings)


def test_a_session_over_tls_writes_what_the_plaintext_port_reads(cluster: ZkCluster) -> None:
    with tls_session({**cluster.zk_tls_properties(), "zookeeper.connect":
                      cluster.zk_tls_connect + "/tls-chroot"}) as zk:
        assert zk.multi([CreateOp("/written-over-tls", b"secret")]) == [
            ZkOpResult(ZkError.OK, "/written-over-tls", 0)]
        assert zk.get("/written-over-tls") == ZkRead(b"secret", 0)
    with cluster.zk_session() as plain:  # the same ensemble; the chroot made over TLS
        assert plain.get("/tls-chroot/written-over-tls") == ZkRead(b"secret", 0)


def test_a_server_of_an_untrusted_ca_opens_no_session(cluster: ZkCluster) -> None:
    session = tls_session({**cluster.zk_tls_properties(trusting=zk_pki().stranger_ca),
                           "zookeeper.connection.timeout.ms": REFUSED_TIMEOUT_MS})
    with pytest.raises(ZkUnavailableError, match=(
            f"no ZooKeeper server of {cluster.zk_tls_connect} answered within 3000 ms "
            r"\(the last TLS handshake failed: self-signed certificate in certificate chain\)")):
        session.start()


def test_plaintext_to_the_tls_port_opens_no_session(cluster: ZkCluster) -> None:
    plain = ZkSession(ZkClientSettings(cluster.zk_tls_connect,
                                       connection_timeout_ms=int(REFUSED_TIMEOUT_MS)))
    with pytest.raises(ZkUnavailableError, match=r"answered within 3000 ms$"):
        plain.start()
