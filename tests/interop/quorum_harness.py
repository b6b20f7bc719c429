"""Mixed controller quorums (issue 26 item 4): who leads, the committed logs, voter changes.

Static quorums come from the oracle harness as they are; :class:`DynamicCluster` is the same
cluster with a dynamic quorum (kraft.version 1, KIP-853): every node bootstraps from
controller 1 (``controller.quorum.bootstrap.servers``, no ``controller.quorum.voters``),
controller 1 is formatted ``--standalone`` and the others ``--no-initial-controllers``, so
they start as observers until ``add-controller`` adds them. Quorums are asked through
pykraft's ``metadata-quorum`` client (DescribeQuorum at the active controller), which reads
a Kafka leader's answer and a pykraft leader's alike.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from kafka_brokers_harness import logged_errors, wait_until
from oracle_cluster import (
    KAFKA,
    ClusterSpec,
    KafkaInstall,
    Node,
    OracleCluster,
    running,
)

from pykraft.ids import uuid_to_str
from pykraft.records.batch import iter_batches
from pykraft.storage.bootstrap import METADATA_LOG_DIR_NAME
from pykraft.storage.meta_properties import META_PROPERTIES, read_meta_properties
from pykraft.tools.local_cluster import CONTROLLER
from pykraft.tools.quorum_tool import QuorumInfo, QuorumToolError, describe_quorum

TOOL_TIMEOUT_S = 120.0


class DynamicCluster(OracleCluster):  # type: ignore[misc]  # Any to mypy: see pyproject
    """An :class:`OracleCluster` whose quorum is dynamic: controller 1 the only initial
    voter, the other controllers observers until added."""

    def node_properties(self, node: Node) -> dict[str, str]:
        properties: dict[str, str] = super().node_properties(node)
        del properties["controller.quorum.voters"]
        first = self.controllers[0]
        properties["controller.quorum.bootstrap.servers"] = first.listener(CONTROLLER)
        return properties

    def _format_command(self, node: Node) -> list[str]:
        command: list[str] = super()._format_command(node)
        if CONTROLLER in node.roles:
            command.append("--standalone" if node is self.controllers[0]
                           else "--no-initial-controllers")
        return command


@contextmanager
def dynamic_running(base: Path, kafka: KafkaInstall, *specs: ClusterSpec,
                    ) -> Iterator[list[DynamicCluster]]:
    """As :func:`oracle_cluster.running`, for dynamic quorums."""
    with running(base, kafka, *specs, cluster_type=DynamicCluster) as clusters:
        yield [cluster for cluster in clusters if isinstance(cluster, DynamicCluster)]


def quorum(cluster: OracleCluster, timeout_s: float = 30.0) -> QuorumInfo | None:
    """The quorum as the active controller describes it, None while none answers."""
    addresses = [(n.listener(CONTROLLER).rpartition(":")[0],
                  int(n.listener(CONTROLLER).rpartition(":")[2]))
                 for n in cluster.controllers if cluster.is_running(n)]
    try:
        return asyncio.run(describe_quorum(*addresses, timeout_s=timeout_s))
    except QuorumToolError:
        return None


def settled_leader(cluster: OracleCluster, timeout_s: float = 120.0) -> Node:
    """The leader, once a running controller leads and every running voter has fetched
    up to the high watermark (so the next kill leaves a caught-up majority)."""
    found: list[Node] = []

    def led() -> bool:
        info = quorum(cluster)
        if info is None or info.leader_id not in cluster.nodes:
            return False
        leader = cluster.nodes[info.leader_id]
        running = {n.node_id for n in cluster.controllers if cluster.is_running(n)}
        caught_up = all(v.log_end_offset >= info.high_watermark for v in info.voters
                        if v.replica_id in running)
        if cluster.is_running(leader) and info.high_watermark > 0 and caught_up:
            found[:] = [leader]
            return True
        return False
    wait_until(f"a leader elected in {cluster.base.name}", led, timeout_s)
    return found[0]


def committed_batches(node: Node, high_watermark: int) -> list[bytes]:
    """The batches of a stopped controller's metadata log below ``high_watermark``, as
    stored (the leader's bytes: a follower appends them unchanged)."""
    batches: list[bytes] = []
    for segment in sorted((node.data / METADATA_LOG_DIR_NAME).glob("*.log")):
        for batch in iter_batches(segment.read_bytes()):
            if batch.header.base_offset < high_watermark:
                batches.append(batch.data)
    return batches


def directory_id(node: Node) -> str:
    """The node's metadata directory id (its meta.properties' ``directory.id``)."""
    found = read_meta_properties(node.data / META_PROPERTIES).directory_id
    assert found is not None, f"node {node.node_id} has no directory.id"
    return uuid_to_str(found)


def kafka_quorum_tool(cluster: OracleCluster, bootstrap: Node, *args: str,
                      ) -> subprocess.CompletedProcess[str]:
    """Kafka's ``kafka-metadata-quorum.sh --bootstrap-controller <bootstrap> <args>``."""
    assert cluster.kafka is not None
    command = cluster.kafka.java("org.apache.kafka.tools.MetadataQuorumCommand",
                                 "--bootstrap-controller", bootstrap.listener(CONTROLLER),
                                 *args, log_level="WARN")
    return subprocess.run(command, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S,
                          stdin=subprocess.DEVNULL, check=False)


def kafka_problems(clusters: Sequence[OracleCluster], allowed: Sequence[str]) -> list[str]:
    """The ERROR entries of the Kafka nodes' logs (with their stack traces) that match none
    of the ``allowed`` regular expressions, each prefixed by its node."""
    return [f"node {node.node_id}: {entry}"
            for cluster in clusters for node in cluster.nodes.values() if node.kind == KAFKA
            for entry in logged_errors(node, tuple(allowed))]
