"""Metadata snapshots with real processes: with a tiny
``metadata.log.max.record.bytes.between.snapshots`` every controller and broker writes
``.checkpoint`` files of its image; a restarted broker or controller starts from its newest
snapshot and serves the same topics; a broker started after the controllers cleaned their
log (``metadata.max.retention.bytes``) catches up through FetchSnapshot."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import broker_call, combined_node, wait_for, wait_for_brokers

from pykraft.config.server import ServerConfig
from pykraft.errors import PyKraftError
from pykraft.image import MetadataImage, load_snapshot
from pykraft.messages.kafka.metadata_request import MetadataRequest
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.runtime.kafka_client import ClientConnection
from pykraft.runtime.settings import load_settings
from pykraft.storage.bootstrap import METADATA_LOG_DIR_NAME
from pykraft.storage.snapshot_files import list_snapshots
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import parse_host_port

SNAPSHOT_BYTES = 2048
PROPERTIES = {
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",
    "pykraft.shutdown.timeout.ms": "3000",
    "metadata.log.max.record.bytes.between.snapshots": str(SNAPSHOT_BYTES),
    "metadata.max.retention.bytes": "1",  # keep only the newest snapshot: the log start moves
}
TOPICS = {f"snap-{i}": 3 for i in range(4)}
TIMEOUT_S = 120  # a bound on hangs only: 6 processes start on a loaded 2-core machine


def _require_snapshot_settings(config: Path) -> None:
    settings = load_settings(ServerConfig.load(config))
    if settings.controller.max_bytes_between_snapshots != SNAPSHOT_BYTES:
        pytest.skip("runtime/settings.py does not pass metadata.log.max.record.bytes."
                    "between.snapshots to ControllerConfig yet")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    made = LocalCluster.create(tmp_path / "cluster", 3, PROPERTIES, brokers=3)
    try:
        _require_snapshot_settings(made.nodes[made.controllers[0]].config)
        yield made
    finally:
        for node_id in made.nodes:
            made.kill(node_id)


@pytest.fixture
def combined(tmp_path: Path) -> Iterator[LocalCluster]:
    """One ``broker,controller`` process: its controller and broker share one log."""
    made = combined_node(tmp_path, PROPERTIES)
    node = made.nodes[1]
    try:
        _require_snapshot_settings(node.config)
        yield made
    finally:
        made.kill(1)


def _create_topics(cluster: LocalCluster, topics: dict[str, int], *, rf: int = 3) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions,
                                            replication_factor=rf)
                                   for name, partitions in topics.items()],
                                  operation_timeout=TIMEOUT_S)
    for future in futures.values():
        future.result(TIMEOUT_S)


def _topics_served(cluster: LocalCluster, broker_id: int) -> dict[str, int] | None:
    """Topic name -> partition count in broker ``broker_id``'s Metadata, None if down."""
    try:
        answer = broker_call(cluster, broker_id, MetadataRequest(
            topics=None, allow_auto_topic_creation=False,
            include_topic_authorized_operations=False))
    except (PyKraftError, OSError, TimeoutError):
        return None
    return {str(t.name): len(t.partitions) for t in answer.topics}


def _partition_dir(cluster: LocalCluster, node_id: int) -> Path:
    return cluster.nodes[node_id].data / METADATA_LOG_DIR_NAME


def _newest_snapshot(cluster: LocalCluster, node_id: int) -> tuple[str, MetadataImage] | None:
    """The newest ``.checkpoint`` of a node and its image (None if none, or if retention
    deleted it while we read)."""
    directory = _partition_dir(cluster, node_id)
    real = [sid for sid in list_snapshots(directory) if sid.end_offset > 0]
    if not real:
        return None
    try:
        return real[-1].file_name, load_snapshot(directory / real[-1].file_name)
    except (PyKraftError, OSError):
        return None


def _snapshot_holding(cluster: LocalCluster, node_id: int, topics: dict[str, int]) -> str:
    """Wait for a snapshot of ``node_id`` whose image has every topic; its file name."""
    def probe() -> str | None:
        newest = _newest_snapshot(cluster, node_id)
        if newest is None:
            return None
        name, image = newest
        held = {n: len(t.partitions) for n, t in image.topics.by_name.items()}
        return name if all(held.get(n) == p for n, p in topics.items()) else None
    found: str = wait_for(f"a snapshot of node {node_id} holding {sorted(topics)}", probe,
                          TIMEOUT_S)
    return found


def _serves(cluster: LocalCluster, broker_id: int, topics: dict[str, int]) -> None:
    def probe() -> bool | None:
        seen = _topics_served(cluster, broker_id)
        return True if seen is not None and all(
            seen.get(n) == p for n, p in topics.items()) else None
    wait_for(f"broker {broker_id} serving {sorted(topics)}", probe, TIMEOUT_S)


def _loaded_snapshots(cluster: LocalCluster, node_id: int) -> list[str]:
    return [line for line in cluster.nodes[node_id].log.read_text().splitlines()
            if "event=snapshot_loaded" in line]


def _serves_fetch_snapshot(cluster: LocalCluster) -> bool:
    async def probe() -> bool:
        host, port = parse_host_port(cluster.nodes[cluster.controllers[0]].address)
        conn = await asyncio.wait_for(ClientConnection.open(
            host, port, client_id="probe", ours=listener_ranges(Listener.CONTROLLER)), 5)
        try:
            return conn.versions.get(ApiKey.FETCH_SNAPSHOT) is not None
        finally:
            conn.close()
    return asyncio.run(probe())


def test_nodes_snapshot_and_restarted_nodes_start_from_their_snapshot(
    cluster: LocalCluster,
) -> None:
    cluster.start_all()
    wait_for_brokers(cluster, 3)
    _create_topics(cluster, TOPICS)
    for node_id in cluster.nodes:  # controllers and broker-only nodes alike
        _snapshot_holding(cluster, node_id, TOPICS)

    broker = cluster.brokers[0]
    assert cluster.stop(broker) == 0
    cluster.start(broker)
    _serves(cluster, broker, TOPICS)
    loaded = _loaded_snapshots(cluster, broker)
    assert loaded and f"topics={len(TOPICS)}" in loaded[-1]

    controller = cluster.controllers[0]
    assert cluster.stop(controller) == 0
    cluster.start(controller)
    wait_for(f"controller {controller} loaded its snapshot",
             lambda: True if _loaded_snapshots(cluster, controller) else None, TIMEOUT_S)
    assert f"topics={len(TOPICS)}" in _loaded_snapshots(cluster, controller)[-1]
    # the cluster still takes writes, and the restarted nodes replay them after the snapshot
    _create_topics(cluster, {"after-restart": 2})
    _serves(cluster, broker, {**TOPICS, "after-restart": 2})
    _snapshot_holding(cluster, controller, {**TOPICS, "after-restart": 2})


def test_broker_started_after_log_cleaning_catches_up_with_fetch_snapshot(
    cluster: LocalCluster,
) -> None:
    late = cluster.brokers[-1]
    for node_id in cluster.nodes:
        if node_id != late:
            cluster.start(node_id)
    wait_for_brokers_except(cluster, late)
    if not _serves_fetch_snapshot(cluster):
        pytest.skip("the controller listener does not serve FetchSnapshot yet")
    _create_topics(cluster, TOPICS, rf=2)  # the late broker is not registered yet
    first = {c: _snapshot_holding(cluster, c, TOPICS) for c in cluster.controllers}
    _create_topics(cluster, {"second": 1}, rf=2)
    # retention keeps only the newest snapshot: once the first is gone, so is the log
    # before the newest, and a fetch from offset 0 is answered with a snapshot id
    wait_for("every controller's log start past its first snapshot", lambda: True if all(
        not (_partition_dir(cluster, c) / name).exists() for c, name in first.items())
        else None, TIMEOUT_S)

    cluster.start(late)
    everything = {**TOPICS, "second": 1}
    _serves(cluster, late, everything)
    loaded = _loaded_snapshots(cluster, late)
    assert loaded, "the late broker replayed the log instead of loading a snapshot"
    segments = sorted(int(p.stem) for p in _partition_dir(cluster, late).glob("*.log"))
    assert segments and segments[0] > 0  # its log starts at the fetched snapshot


def test_combined_node_snapshots_once_and_restarts_from_it(combined: LocalCluster) -> None:
    combined.start(1)
    wait_for_brokers(combined, 1)
    topics = {"solo": 2, "duo": 3}
    for name, partitions in topics.items():  # rf 1: the only broker
        _create_topics(combined, {name: partitions}, rf=1)
    _snapshot_holding(combined, 1, topics)
    assert combined.stop(1) == 0
    written = [line for line in combined.nodes[1].log.read_text().splitlines()
               if "event=snapshot_written" in line]
    ids = [line.split("snapshot_id=")[1].split(" reason=")[0] for line in written]
    assert ids and len(ids) == len(set(ids))  # one writer per process, not one per listener
    combined.start(1)
    _serves(combined, 1, topics)
    loaded = _loaded_snapshots(combined, 1)
    assert {"listener=controller", "listener=broker"} <= {
        part for line in loaded for part in line.split()}


def wait_for_brokers_except(cluster: LocalCluster, missing: int) -> None:
    """The running brokers are all unfenced (the missing one never registered)."""
    running = [b for b in cluster.brokers if b != missing]
    wait_for(f"brokers {running} serving", lambda: True if all(
        _topics_served(cluster, b) is not None for b in running) else None, TIMEOUT_S)
