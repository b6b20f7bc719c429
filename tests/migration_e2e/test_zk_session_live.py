"""pykraft's kazoo session (``runtime/zk_session.py``) against a real ZooKeeper 3.8.4: reads,
atomic multis with ZooKeeper's result codes, the chroot Kafka creates, and a stopped
ZooKeeper reported as unavailable, then served again after its restart."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from process_harness import wait_for
from zk_cluster import ZkCluster, zk_cluster

from pykraft.migration.zk_ops import (
    CheckOp,
    CreateOp,
    DeleteOp,
    SetDataOp,
    ZkClient,
    ZkError,
    ZkOpResult,
    ZkUnavailableError,
)
from pykraft.migration.zk_reads import read_tree
from pykraft.migration.zk_tree import ZkRead, ZkTree
from pykraft.runtime.settings import ZkClientSettings
from pykraft.runtime.zk_session import ZkSession

OK = ZkError.OK


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZkCluster]:
    with zk_cluster(tmp_path_factory.mktemp("zk")) as made:
        made.start_zookeeper()
        yield made


def session(cluster: ZkCluster, chroot: str = "", timeout_ms: int = 15000) -> ZkSession:
    return ZkSession(ZkClientSettings(cluster.zk_connect + chroot,
                                       connection_timeout_ms=timeout_ms))


def test_reads_and_multis(cluster: ZkCluster) -> None:
    with session(cluster) as zk:
        client: ZkClient = zk
        assert client.get("/absent") is None and client.children("/absent") is None
        assert client.multi([CreateOp("/t", b"one"), CreateOp("/t/a", b""),
                             CreateOp("/t/n-", b"x", sequential=True)]) == [
            ZkOpResult(OK, "/t", 0), ZkOpResult(OK, "/t/a", 0),
            ZkOpResult(OK, "/t/n-0000000001", 0)]
        assert client.get("/t") == ZkRead(b"one", 0)
        assert sorted(client.children("/t") or []) == ["a", "n-0000000001"]
        assert client.multi([CheckOp("/t", 0), SetDataOp("/t", b"two", 0)]) == [
            ZkOpResult(OK, "/t"), ZkOpResult(OK, "/t", 1)]
        # a fencing check that fails: nothing of the multi is applied
        assert [r.error for r in client.multi([
            SetDataOp("/t/a", b"changed"), CheckOp("/t", 0), CreateOp("/t/b", b"")])] == [
            ZkError.ROLLED_BACK, ZkError.BAD_VERSION, ZkError.ROLLED_BACK]
        assert client.get("/t/a") == ZkRead(b"", 0) and client.get("/t/b") is None
        assert [r.error for r in client.multi([CreateOp("/t", b"")])] == [ZkError.NODE_EXISTS]
        assert [r.error for r in client.multi([DeleteOp("/t")])] == [ZkError.NOT_EMPTY]
        assert [r.error for r in client.multi([DeleteOp("/nope")])] == [ZkError.NO_NODE]
        assert client.multi([DeleteOp("/t/a", 0), DeleteOp("/t/n-0000000001"),
                             DeleteOp("/t", 1)]) == [
            ZkOpResult(OK, "/t/a"), ZkOpResult(OK, "/t/n-0000000001"), ZkOpResult(OK, "/t")]


def test_an_empty_zookeeper_reads_as_an_empty_tree(cluster: ZkCluster) -> None:
    with session(cluster) as zk:
        assert read_tree(zk) == ZkTree()


def test_the_chroot_is_created_and_paths_are_under_it(cluster: ZkCluster) -> None:
    with session(cluster, "/kafka/mig") as zk:
        assert zk.multi([CreateOp("/cluster", b"")])[0].path == "/cluster"
        assert zk.children("/") == ["cluster"]
    with session(cluster) as root:
        assert root.children("/kafka/mig") == ["cluster"]
        root.multi([DeleteOp("/kafka/mig/cluster"), DeleteOp("/kafka/mig"),
                    DeleteOp("/kafka")])


def test_a_stopped_zookeeper_is_unavailable_then_back(cluster: ZkCluster) -> None:
    with session(cluster, timeout_ms=3000) as zk:
        zk.multi([CreateOp("/kept", b"v")])
        cluster.stop_zookeeper()
        with pytest.raises(ZkUnavailableError):
            zk.get("/kept")
        cluster.start_zookeeper()

        def read() -> ZkRead | None:  # kazoo reconnects on its own, after a backoff
            try:
                return zk.get("/kept")
            except ZkUnavailableError:
                return None
        assert wait_for("the session to reconnect", read, 60.0) == ZkRead(b"v", 0)
    with pytest.raises(ZkUnavailableError, match="not started"):
        zk.get("/kept")


def test_no_zookeeper_fails_the_start_within_the_connection_timeout() -> None:
    with pytest.raises(ZkUnavailableError, match="within 500 ms"):
        ZkSession(ZkClientSettings("127.0.0.1:1", connection_timeout_ms=500)).start()
