"""Apache Kafka's Java Admin client against a dynamic (KIP-853) quorum with two brokers, both
through the brokers (``bootstrap.servers``) and straight to the controllers
(``bootstrap.controllers``, KIP-919): cluster, quorum, voter changes and configs."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_harness import PROPERTIES, wait_for, wait_for_brokers
from java_admin import (
    BOOTSTRAP_CONTROLLERS,
    BOOTSTRAP_SERVERS,
    FETCH_SCRIPT,
    JavaAdmin,
    JavaAdminError,
    OpenAdmin,
)

from pykraft.ids import uuid_to_str
from pykraft.storage.meta_properties import read_meta_properties
from pykraft.tools.local_cluster import HOST, LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
BROKERS = 2


@pytest.fixture(scope="module")
def dynamic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Controller 1 formatted ``--standalone``, 2 and 3 ``--no-initial-controllers`` (they
    run as observers until added), and two brokers."""
    made = LocalCluster.create(tmp_path_factory.mktemp("dynamic") / "cluster", 3, PROPERTIES,
                               brokers=BROKERS, dynamic=True)
    made.start_all()
    try:
        wait_for_brokers(made, BROKERS)
        yield made
    finally:
        for node_id in made.nodes:
            made.kill(node_id)


def via_brokers(cluster: LocalCluster, open_admin: OpenAdmin) -> JavaAdmin:
    return open_admin(BOOTSTRAP_SERVERS, cluster.bootstrap_servers)


def via_controllers(cluster: LocalCluster, open_admin: OpenAdmin) -> JavaAdmin:
    return open_admin(BOOTSTRAP_CONTROLLERS,
                      ",".join(cluster.nodes[n].address for n in cluster.controllers))


def directory_id(cluster: LocalCluster, node_id: int) -> str:
    meta = read_meta_properties(cluster.nodes[node_id].data / "meta.properties")
    assert meta.directory_id is not None
    return uuid_to_str(meta.directory_id)


def voters(quorum: dict[str, Any]) -> set[tuple[int, str]]:
    return {(v["id"], v["directoryId"]) for v in quorum["voters"]}


def wait_for_voters(admin: JavaAdmin, expected: set[tuple[int, str]]) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        quorum: dict[str, Any] = admin.call("describeQuorum")
        return quorum if voters(quorum) == expected else None
    found: dict[str, Any] = wait_for(f"voters {sorted(expected)}", probe)
    return found


def voter_change(admin: JavaAdmin, op: str, *args: object) -> None:
    """``op`` (addRaftVoter or removeRaftVoter) once the leader takes it: Kafka's leader
    answers REQUEST_TIMED_OUT (the client's TimeoutException) while the last voter change
    is not committed or the joining replica is not caught up at that moment, both of which
    a loaded machine stretches; any other outcome is the call's own."""
    def attempt() -> bool | None:
        try:
            admin.call(op, *args)
        except JavaAdminError as refused:
            if refused.error == "TimeoutException":
                return None
            raise
        return True
    wait_for(f"{op}{args} taken", attempt)


def wait_for_caught_up(admin: JavaAdmin, node_id: int, directory: str) -> None:
    """Kafka adds a voter only once it has fetched up to the high watermark as an observer."""
    def probe() -> bool | None:
        quorum = admin.call("describeQuorum")
        return True if any(
            (o["id"], o["directoryId"]) == (node_id, directory)
            and o["logEndOffset"] >= quorum["highWatermark"] for o in quorum["observers"]
        ) else None
    wait_for(f"controller {node_id} caught up as an observer", probe)


def test_describe_cluster_through_brokers_and_controllers(
        dynamic: LocalCluster, java_admin: OpenAdmin) -> None:
    brokers = via_brokers(dynamic, java_admin).call("describeCluster")
    assert brokers["clusterId"] == dynamic.cluster_id
    assert sorted(n["id"] for n in brokers["nodes"]) == sorted(dynamic.brokers)
    for node in brokers["nodes"]:
        assert f"{node['host']}:{node['port']}" == dynamic.nodes[node["id"]].address
    assert brokers["controller"] in dynamic.brokers  # brokers name a live broker, not a controller

    admin = via_controllers(dynamic, java_admin)
    leader = admin.call("describeQuorum")["leaderId"]
    seen: list[int] = []

    def every_controller() -> dict[str, Any] | None:
        described: dict[str, Any] = admin.call("describeCluster")
        seen[:] = sorted(n["id"] for n in described["nodes"])
        return described if seen == sorted(dynamic.controllers) else None
    try:  # every controller registers (KIP-919), voter or observer
        controllers = wait_for("every registered controller described", every_controller)
    except pytest.fail.Exception:
        pytest.fail(f"describeCluster through the controllers lists {seen}, "
                    f"not every controller {sorted(dynamic.controllers)}")
    assert controllers["clusterId"] == dynamic.cluster_id
    assert controllers["controller"] == leader  # the active controller


def test_describe_quorum_through_brokers_and_controllers(
        dynamic: LocalCluster, java_admin: OpenAdmin) -> None:
    from_brokers = via_brokers(dynamic, java_admin).call("describeQuorum")
    from_controllers = via_controllers(dynamic, java_admin).call("describeQuorum")
    for quorum in (from_brokers, from_controllers):
        assert quorum["leaderId"] in {v["id"] for v in quorum["voters"]}
        assert (1, directory_id(dynamic, 1)) in voters(quorum)
        assert quorum["highWatermark"] > 0
        assert set(dynamic.brokers) <= {o["id"] for o in quorum["observers"]}
        port = int(dynamic.nodes[1].address.rsplit(":", 1)[1])
        assert quorum["nodes"]["1"] == [{"name": "CONTROLLER", "host": HOST, "port": port}]
    assert from_brokers["leaderId"] == from_controllers["leaderId"]
    assert voters(from_brokers) == voters(from_controllers)


def test_add_and_remove_raft_voters_through_controllers_and_brokers(
        dynamic: LocalCluster, java_admin: OpenAdmin) -> None:
    controllers = via_controllers(dynamic, java_admin)
    brokers = via_brokers(dynamic, java_admin)
    ids = {n: directory_id(dynamic, n) for n in dynamic.controllers}

    def add(admin: JavaAdmin, node_id: int) -> None:
        wait_for_caught_up(admin, node_id, ids[node_id])
        host, port = dynamic.nodes[node_id].address.rsplit(":", 1)
        voter_change(admin, "addRaftVoter", node_id, ids[node_id], "CONTROLLER", host, port)

    add(controllers, 2)
    wait_for_voters(brokers, {(1, ids[1]), (2, ids[2])})
    add(brokers, 3)  # AddRaftVoter sent to a broker, which forwards it to the controller
    quorum = wait_for_voters(controllers, {(n, ids[n]) for n in (1, 2, 3)})
    assert quorum["nodes"]["3"] == [{"name": "CONTROLLER", "host": HOST,
                                     "port": dynamic.nodes[3].port}]

    with pytest.raises(JavaAdminError) as duplicate:
        voter_change(brokers, "addRaftVoter", 2, ids[2], "CONTROLLER", HOST,
                     dynamic.nodes[2].port)
    assert duplicate.value.error == "DuplicateVoterException"

    voter_change(brokers, "removeRaftVoter", 3, ids[3])
    wait_for_voters(controllers, {(1, ids[1]), (2, ids[2])})
    voter_change(controllers, "removeRaftVoter", 2, ids[2])
    wait_for_voters(brokers, {(1, ids[1])})

    with pytest.raises(JavaAdminError) as missing:
        voter_change(brokers, "removeRaftVoter", 3, ids[3])
    assert missing.value.error == "VoterNotFoundException"


def config(entries: dict[str, Any], name: str) -> tuple[str, str]:
    entry = entries[name]
    return entry["value"], entry["source"]


def test_configs_through_controllers_and_brokers(
        dynamic: LocalCluster, java_admin: OpenAdmin) -> None:
    brokers = via_brokers(dynamic, java_admin)
    controllers = via_controllers(dynamic, java_admin)
    broker = str(dynamic.brokers[0])

    entries = brokers.call("describeConfigs", "BROKER", broker)
    assert config(entries, "node.id") == (broker, "STATIC_BROKER_CONFIG")
    assert config(entries, "process.roles") == ("broker", "STATIC_BROKER_CONFIG")
    assert config(entries, "log.retention.hours") == ("168", "DEFAULT_CONFIG")

    own = controllers.call("describeConfigs", "BROKER", "1")  # a controller describes itself
    assert config(own, "node.id") == ("1", "STATIC_BROKER_CONFIG")
    assert config(own, "process.roles") == ("controller", "STATIC_BROKER_CONFIG")

    def retention_ms(expected: tuple[str, str]) -> bool | None:
        described = brokers.call("describeConfigs", "BROKER", broker)
        return True if config(described, "log.retention.ms") == expected else None

    # A cluster-wide default set through the controllers reaches the broker ...
    controllers.call("alterConfig", "BROKER", "", "log.retention.ms", "86400000")
    wait_for("the cluster default on the broker",
             lambda: retention_ms(("86400000", "DYNAMIC_DEFAULT_BROKER_CONFIG")))
    # ... and a per-broker value set through the brokers overrides it.
    brokers.call("alterConfig", "BROKER", broker, "log.retention.ms", "43200000")
    wait_for("the broker's own value", lambda: retention_ms(("43200000", "DYNAMIC_BROKER_CONFIG")))


def test_fetch_refuses_a_cached_jar_of_another_version(tmp_path: Path) -> None:
    """The pinned version is checked inside the jar, not taken from its file name."""
    cache = tmp_path / "java-clients"
    cache.mkdir()
    for name in ("kafka-clients-3.9.0.jar", "slf4j-api-2.0.16.jar", "snappy-java-1.1.10.5.jar",
                 "lz4-java-1.8.0.jar", "zstd-jni-1.5.6-4.jar"):  # every jar: nothing to fetch
        with zipfile.ZipFile(cache / name, "w") as jar:
            jar.writestr("kafka/kafka-version.properties", "commitId=abc\nversion=3.8.1\n")
    done = subprocess.run([sys.executable, str(FETCH_SCRIPT), str(cache)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "is Kafka '3.8.1', not the pinned 3.9.0" in done.stderr
