"""The data source on the log of a real ``pykraft cluster`` (3 controller processes)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pykraft.records.batch import iter_batches
from pykraft.storage.metadata_log import MetadataLog
from pykraft.testing.append import APPEND_PROPERTIES, AppendClient
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import parse_host_port

sys.path.insert(0, str(Path(__file__).parent.parent / "integration"))
sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import PROPERTIES as BROKER_PROPERTIES
from broker_harness import combined_node, wait_for_brokers
from process_harness import leader_info

pytestmark = pytest.mark.spark
VALUES = [f"value-{i}".encode() for i in range(40)]


def leader_address(cluster: LocalCluster) -> tuple[str, int]:
    return parse_host_port(cluster.nodes[leader_info(cluster).leader_id].address)


async def append_all(address: tuple[str, int]) -> int:
    client = await AppendClient.connect(*address)
    try:
        return sum([(await client.append(v)).error_code == 0 for v in VALUES])
    finally:
        client.close()


def on_disk(data_dir: Path) -> list[tuple[int, bytes | None]]:
    with MetadataLog.open(data_dir / "__cluster_metadata-0") as log:
        data = log.read(0, 1 << 30)
    return [(r.offset, r.value) for b in iter_batches(data) for r in b.records()]


def test_reads_a_real_cluster_log(spark: SparkSession, tmp_path: Path) -> None:
    base = tmp_path / "cluster"
    overrides = [f"--override={key}={value}" for key, value in APPEND_PROPERTIES.items()]
    subprocess.run([sys.executable, "-m", "pykraft", "cluster", "up", "--controllers", "3",
                    "--dir", str(base), "--detach", *overrides], check=True, timeout=60)
    cluster = LocalCluster.load(base)
    try:
        acked = asyncio.run(append_all(leader_address(cluster)))
    finally:
        codes = cluster.stop_all()  # SIGTERM by PID, bounded wait, then SIGKILL
    assert acked == len(VALUES)
    assert not any(cluster.is_running(n) for n in codes)
    frame = spark.read.format("kraft").option("rawBytes", "true").load(str(base))
    for node in cluster.nodes.values():
        expected = on_disk(node.data)
        got = frame.filter(frame.log_dir == str(node.data)).filter("file_kind = 'segment'")
        rows = sorted((r["offset"], r["value"]) for r in got.select("offset", "value").collect())
        assert rows == expected
    data = frame.filter("file_kind = 'segment' AND NOT is_control")
    values = {r["value"] for r in data.select("value").collect()}
    assert set(VALUES) <= values
    # Bench values are not metadata records: each gets a decode error, nothing else does.
    errors = frame.filter("error IS NOT NULL").select("value", "is_control").collect()
    assert errors and all(r["value"] in VALUES and not r["is_control"] for r in errors)
    leaders = frame.filter("control_type_name = 'LEADER_CHANGE'").select("leader").collect()
    assert leaders and all(r["leader"] in cluster.nodes for r in leaders)


def produce_and_commit(cluster: LocalCluster, topic: str, count: int) -> int:
    """``count`` records to ``topic`` and a consumer group's committed offset for them:
    the broker's log dir then holds a user partition and ``__consumer_offsets``."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    servers = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": servers})  # alive until the answer
    created = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)],
                                  operation_timeout=30)
    created[topic].result(60)
    producer = Producer({"bootstrap.servers": servers})
    for i in range(count):
        producer.produce(topic, key=b"k%d" % i, value=b"v" * 100)
    assert producer.flush(60) == 0
    consumer = Consumer({"bootstrap.servers": servers, "group.id": "analyze",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        seen = 0
        deadline = time.monotonic() + 60
        while seen < count and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            seen += message is not None and message.error() is None
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return seen


def test_a_broker_log_dir_gives_only_its_metadata_log(spark: SparkSession,
                                                      tmp_path: Path) -> None:
    """A real combined broker's log dir holding a user topic and __consumer_offsets: the
    kraft source (what analyze loads) reads its metadata log and nothing else."""
    cluster = combined_node(tmp_path / "cluster", dict(BROKER_PROPERTIES))
    cluster.start(1)
    try:
        wait_for_brokers(cluster, 1)
        assert produce_and_commit(cluster, "orders", 300) == 300
    finally:
        cluster.kill(1)
    data = cluster.nodes[1].data
    partitions = {p.name for p in data.iterdir() if p.is_dir()}
    assert {"orders-0", "__cluster_metadata-0"} <= partitions
    assert any(name.startswith("__consumer_offsets-") for name in partitions)
    frame = spark.read.format("kraft").load(str(cluster.base))
    files = {r["file"] for r in frame.select("file").distinct().collect()}
    assert files and all(Path(f).parent.name == "__cluster_metadata-0"
                         or Path(f).name == "bootstrap.checkpoint" for f in files)
    assert frame.filter("error IS NOT NULL").count() == 0
    topics = frame.filter("record_type = 'TOPIC_RECORD'").select("topic_name").collect()
    assert {r["topic_name"] for r in topics} >= {"orders", "__consumer_offsets"}
