"""A node whose files are damaged refuses to start with one line: the file, the byte
position when there is one, and what to do; exit code 1 and no traceback."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from process_harness import TEST_PROPERTIES, leader_info, write_values

from pykraft.records.batch import iter_batches
from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

PARTITION = "__cluster_metadata-0"
SEGMENT = "00000000000000000000.log"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> LocalCluster:
    """A stopped one-controller cluster whose log holds several batches."""
    cluster = LocalCluster.create(tmp_path_factory.mktemp("refusals") / "c", 1,
                                  TEST_PROPERTIES)
    cluster.start_all()
    try:
        info = leader_info(cluster)
        assert write_values(cluster, info.leader_id, [b"v%d" % i for i in range(5)])
    finally:
        assert cluster.stop(1) == 0
    return cluster


def _start_on_copy(cluster: LocalCluster, tmp_path: Path,
                   damage: Callable[[Path], str]) -> tuple[subprocess.CompletedProcess[str], str]:
    """Start the node on a damaged copy of its data; returns the run and the text the
    refusal must contain."""
    data = tmp_path / "data"
    shutil.copytree(cluster.nodes[1].data, data)
    expected = damage(data)
    result = subprocess.run(
        [sys.executable, "-m", "pykraft", "server", str(cluster.nodes[1].config),
         "--override", f"log.dirs={data}"],
        capture_output=True, text=True, timeout=60, check=False)
    return result, expected


def _corrupt_segment_middle(data: Path) -> str:
    path = data / PARTITION / SEGMENT
    raw = bytearray(path.read_bytes())
    batches = list(iter_batches(bytes(raw)))
    assert len(batches) >= 3
    victim = batches[1]  # valid batches follow it: not a torn tail, recovery must stop
    raw[victim.position + len(victim.data) - 2] ^= 0xFF  # inside its records: CRC mismatch
    path.write_bytes(bytes(raw))
    return f"{path}: corrupt record batch at byte {victim.position} (CRC mismatch"


def _corrupt_quorum_state(data: Path) -> str:
    path = data / PARTITION / "quorum-state"
    path.write_text('{"clusterId":')
    return f"{path}: corrupt quorum state, not JSON"


def _garbage_partition_metadata(data: Path) -> str:
    path = data / PARTITION / "partition.metadata"
    path.write_bytes(b"\x00\x01garbage")
    return f"{path}: "


def _garbage_meta_properties(data: Path) -> str:
    path = data / "meta.properties"
    path.write_bytes(b"\x89PNG\r\n\x1a\n binary junk\n")
    return f"{path}: not a valid meta.properties file"


@pytest.mark.parametrize("damage", [
    _corrupt_segment_middle, _corrupt_quorum_state, _garbage_partition_metadata,
    _garbage_meta_properties,
], ids=["segment", "quorum-state", "partition.metadata", "meta.properties"])
def test_damaged_file_is_refused_in_one_line(written: LocalCluster, tmp_path: Path,
                                             damage: Callable[[Path], str]) -> None:
    result, expected = _start_on_copy(written, tmp_path, damage)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"Error: {expected}"), lines[0]
    assert lines[0].endswith("then restart"), lines[0]


def test_meta_properties_without_known_keys_is_not_a_missing_key(
    written: LocalCluster, tmp_path: Path,
) -> None:
    def damage(data: Path) -> str:
        (data / "meta.properties").write_text("hello world\nsome=thing\n")
        return "keys found: hello, some"
    result, expected = _start_on_copy(written, tmp_path, damage)
    assert result.returncode == 1
    assert expected in result.stderr and "is missing" not in result.stderr, result.stderr
