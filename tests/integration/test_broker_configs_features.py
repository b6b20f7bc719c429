"""A real controller and broker: DescribeConfigs of the broker (every version we advertise),
Kafka's warning for an unknown key, and the features ApiVersions and ``features describe``
report."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykraft.errors import PyKraftError
from pykraft.messages.kafka.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from pykraft.messages.kafka.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from pykraft.protocol.api_versions import ApiVersionsRequest, listener_ranges
from pykraft.protocol.apis import Listener
from pykraft.protocol.codec import api_key_of
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.kafka_client import ClientConnection
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import parse_host_port

sys.path.insert(0, str(Path(__file__).parent))
from process_harness import wait_for

TYPO = "contoller.quorum.election.timeout.ms"
PROPERTIES = {"pykraft.shutdown.timeout.ms": "3000", "log.retention.hours": "1", TYPO: "1500"}
BROKER = 4


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    made = LocalCluster.create(tmp_path_factory.mktemp("configs") / "c", 1, PROPERTIES,
                               brokers=1)
    made.start_all()
    yield made
    for node_id in made.nodes:
        made.kill(node_id)


def call(cluster: LocalCluster, node_id: int, body: Any, version: int | None = None) -> Any:
    """``body`` sent at ``version`` (default: the highest both sides speak)."""
    kind = Listener.BROKER if node_id in cluster.brokers else Listener.CONTROLLER

    async def run() -> Any:
        host, port = parse_host_port(cluster.nodes[node_id].address)
        conn = await asyncio.wait_for(ClientConnection.open(
            host, port, client_id="test", ours=listener_ranges(kind)), 10)
        try:
            if version is not None:
                conn.versions[api_key_of(body)] = version
            return await asyncio.wait_for(conn.request(body), 10)
        finally:
            conn.close()
    return asyncio.run(run())


def try_call(cluster: LocalCluster, node_id: int, body: Any) -> Any | None:
    """The answer, or None while the node is not up yet."""
    try:
        return call(cluster, node_id, body)
    except (OSError, PyKraftError, TimeoutError):
        return None


def describe_broker(cluster: LocalCluster, broker: int, version: int) -> dict[str, Any]:
    answer = call(cluster, broker, DescribeConfigsRequest(resources=(DescribeConfigsResource(
        resource_type=BROKER, resource_name=str(broker), configuration_keys=None),),
        # documentation is a v3+ field, not ignorable: Kafka's writer refuses it below
        include_synonyms=True, include_documentation=version >= 3), version)
    assert answer.results[0].error_code == ErrorCode.NONE
    return {c.name: c for c in answer.results[0].configs}


def test_broker_describes_its_static_and_dynamic_configs(cluster: LocalCluster) -> None:
    broker = cluster.brokers[0]
    request = IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
        resource_type=BROKER, resource_name=str(broker),
        configs=(AlterableConfig(name="log.retention.ms", config_operation=0,
                                 value="5000"),)),), validate_only=False)

    def altered() -> bool | None:
        answer = try_call(cluster, broker, request)
        return (answer is not None and answer.responses[0].error_code == ErrorCode.NONE) or None
    wait_for("the broker to take the dynamic config", altered)

    def dynamic_seen() -> dict[str, Any] | None:
        entries = describe_broker(cluster, broker, 4)
        return entries if entries["log.retention.ms"].value == "5000" else None
    entries = wait_for("the dynamic config on the broker", dynamic_seen)
    assert len(entries) > 300
    retention = entries["log.retention.ms"]
    assert (retention.config_source, retention.read_only) == (2, False)
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        ("log.retention.ms", "5000", 2), ("log.retention.hours", "1", 4),
        ("log.retention.hours", "168", 5)]
    assert (entries["node.id"].value, entries["node.id"].config_source) == (str(broker), 4)
    assert entries["node.id"].documentation
    for version in (1, 2, 3):  # every version we advertise answers; v3 adds documentation
        older = describe_broker(cluster, broker, version)
        assert older["log.retention.ms"].value == "5000"
        assert older["log.retention.ms"].config_source == 2
        assert bool(older["node.id"].documentation) == (version >= 3)
    typo = entries[TYPO]  # described as Kafka does an unknown key: hidden, no type
    assert (typo.value, typo.is_sensitive, typo.config_type) == (None, True, 0)


def test_unknown_key_is_warned_and_the_node_runs(cluster: LocalCluster) -> None:
    for node_id in cluster.nodes:
        log = cluster.nodes[node_id].log
        line = wait_for("the warning in the server log", lambda log=log: next(
            (x for x in log.read_text().splitlines() if TYPO in x), None))
        assert "level=warning" in line
        assert (f"The configuration '{TYPO}' was supplied but isn't a known config. Did you "
                "mean 'controller.quorum.election.timeout.ms'?") in line
        assert cluster.is_running(node_id)


def test_api_versions_name_finalized_and_supported_features(cluster: LocalCluster) -> None:
    for node_id in (cluster.controllers[0], cluster.brokers[0]):
        # a node lists its finalized features once it has loaded a committed image (epoch
        # -1 and none before, as Kafka's metadata cache): asked earlier, it answers that
        answer = wait_for("ApiVersions with finalized features", lambda node_id=node_id: (
            found if (found := try_call(cluster, node_id, ApiVersionsRequest(
                client_software_name="test", client_software_version="1"))) is not None
            and found.finalized_features_epoch >= 0 else None))
        supported = {f.name: (f.min_version, f.max_version) for f in answer.supported_features}
        assert supported == {"metadata.version": (7, 29), "kraft.version": (0, 1),
                             "transaction.version": (0, 2),
                             "eligible.leader.replicas.version": (0, 1)}
        finalized = {f.name: f.max_version_level for f in answer.finalized_features}
        assert finalized == {"metadata.version": 21}  # kraft.version 0 is not listed
    out = subprocess.run(
        [sys.executable, "-m", "pykraft", "features", "--bootstrap-controller",
         cluster.bootstrap_controllers, "describe"],
        capture_output=True, text=True, timeout=60, check=True).stdout
    lines = out.strip().splitlines()
    epoch = lines[0].rsplit(" ", 1)[1]
    assert lines[0] == ("Feature: eligible.leader.replicas.version\tSupportedMinVersion: 0\t"
                        "SupportedMaxVersion: 1\tFinalizedVersionLevel: 0\tEpoch: " + epoch)
    assert lines[1] == "Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: " \
        "1\tFinalizedVersionLevel: 0\tEpoch: " + epoch
    assert lines[2].startswith("Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\t"
                               "SupportedMaxVersion: 4.2-IV1\tFinalizedVersionLevel: 3.9-IV0\t"
                               "Epoch: ")
    assert int(epoch) >= 0


def test_a_forwarded_alter_is_described_by_the_same_broker_at_once(
        cluster: LocalCluster) -> None:
    """Read-after-write: the broker relays the controller's answer to a forwarded write only
    once its own image holds it, so a DescribeConfigs right after never sees the old value."""
    broker = cluster.brokers[0]
    key = "log.segment.delete.delay.ms"

    def alter(value: str) -> IncrementalAlterConfigsRequest:
        return IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
            resource_type=BROKER, resource_name=str(broker),
            configs=(AlterableConfig(name=key, config_operation=0, value=value),)),),
            validate_only=False)
    describe = DescribeConfigsRequest(resources=(DescribeConfigsResource(
        resource_type=BROKER, resource_name=str(broker), configuration_keys=(key,)),))
    wait_for("the broker to take a dynamic config",
             lambda: try_call(cluster, broker, alter("60000")))

    async def run() -> list[tuple[str, str | None]]:
        host, port = parse_host_port(cluster.nodes[broker].address)
        conn = await asyncio.wait_for(ClientConnection.open(
            host, port, client_id="test", ours=listener_ranges(Listener.BROKER)), 10)
        seen = []
        try:
            for i in range(50):
                value = str(60001 + i)
                altered = await asyncio.wait_for(conn.request(alter(value)), 30)
                assert altered.responses[0].error_code == ErrorCode.NONE
                described = await asyncio.wait_for(conn.request(describe), 10)
                seen.append((value, described.results[0].configs[0].value))
        finally:
            conn.close()
        return seen
    seen = asyncio.run(run())
    assert [value for value, described in seen if value != described] == []
