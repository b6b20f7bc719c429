"""The data source on the log of a real ``pykraft cluster`` (3 controller processes)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pykraft.records.batch import iter_batches
from pykraft.storage.metadata_log import MetadataLog
from pykraft.testing.append import APPEND_PROPERTIES, AppendClient
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import parse_host_port

sys.path.insert(0, str(Path(__file__).parent.parent / "integration"))
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
