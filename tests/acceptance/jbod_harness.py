"""Helpers of the JBOD acceptance tests (KIP-858): a topic whose replicas on one broker
spread over its two log directories, placed and reported to the controller, and reading a
topic back whole."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from broker_harness import partition_state, wait_for

from pykraft.tools.local_cluster import LocalCluster


def directory_id(log_dir: Path) -> str:
    """The ``directory.id`` in a log directory's meta.properties."""
    text = (log_dir / "meta.properties").read_text()
    found = re.search(r"^directory\.id=(.+)$", text, re.MULTILINE)
    assert found is not None
    return found.group(1)


def placed(log_dir: Path, topic: str) -> set[int]:
    """The partitions of ``topic`` with a log in ``log_dir``."""
    return {int(child.name.rpartition("-")[2]) for child in log_dir.iterdir()
            if child.is_dir() and child.name.rpartition("-")[0] == topic}


def _image_file(cluster: LocalCluster, path: str) -> str:
    """A file of the controller's image (the metadata shell over the controller's log)."""
    controller = cluster.nodes[cluster.controllers[0]]
    return subprocess.run(
        [sys.executable, "-m", "pykraft", "metadata-shell", "--directory", str(controller.data),
         "--", "cat", path], capture_output=True, text=True, timeout=60, check=False).stdout


def registered_directories(cluster: LocalCluster, broker: int) -> set[str] | None:
    """The log directories ``broker``'s registration names in the controller's image."""
    found = re.search(r"directories=\[([^\]]*)\]",
                      _image_file(cluster, f"/image/cluster/brokers/{broker}"))
    return None if found is None else {d.strip() for d in found.group(1).split(",") if d}


def image_directories(cluster: LocalCluster, broker: int, topic: str,
                      partitions: int) -> dict[int, str] | None:
    """Partition -> the directory of ``broker``'s replica in the controller's image; None
    until every one is assigned."""
    found: dict[int, str] = {}
    for partition in range(partitions):
        text = _image_file(cluster, f"/image/topics/byName/{topic}/{partition}")
        replicas = re.search(r"replicas=\[([^\]]*)\]", text)
        directories = re.search(r"directories=\[([^\]]*)\]", text)
        if replicas is None or directories is None:
            return None
        index = [int(r) for r in replicas.group(1).split(",")].index(broker)
        found[partition] = directories.group(1).split(",")[index].strip()
    return found


def spread_topic(cluster: LocalCluster, topic: str, partitions: int, brokers: list[int],
                 first: Path, second: Path) -> tuple[set[int], set[int]]:
    """Create ``topic`` with ``brokers`` as every partition's replicas (the first one, whose
    log dirs are ``first`` and ``second``, the preferred leader) and min.insync.replicas
    2; wait until its replicas are spread over its two dirs (fewest first), the controller's
    image says where, and every ISR is full. Returns the partitions in each dir."""
    from kafka.admin import KafkaAdminClient, NewTopic

    victim = brokers[0]
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(topic, replica_assignments={
            p: brokers for p in range(partitions)},
            topic_configs={"min.insync.replicas": "2"})])
    finally:
        admin.close()
    wait_for("the victim's replicas placed", lambda: True if len(
        placed(first, topic) | placed(second, topic)) == partitions else None)
    in_first, in_second = placed(first, topic), placed(second, topic)
    assert len(in_first) == len(in_second) == partitions // 2  # fewest first
    ids = {p: directory_id(first) for p in in_first} | {
        p: directory_id(second) for p in in_second}
    wait_for("AssignReplicasToDirs in the image", lambda: True if image_directories(
        cluster, victim, topic, partitions) == ids else None, 60)
    for partition in range(partitions):
        wait_for(f"{partition} in sync", lambda p=partition: True if (
            state := partition_state(cluster, victim, topic, p)) is not None
            and len(state.isr) == len(brokers) else None)
    return in_first, in_second


def consume_all(cluster: LocalCluster, topic: str, partitions: int) -> list[bytes]:
    """Every record's first 16 bytes, reading each partition from its start until idle."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": "jbod-check",
        "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(partitions)])
    seen: list[bytes] = []
    idle = 0
    while idle < 10:
        batch = consumer.consume(500, 1.0)
        idle = 0 if batch else idle + 1
        seen += [(m.value() or b"")[:16] for m in batch if m.error() is None]
    consumer.close()
    return seen
