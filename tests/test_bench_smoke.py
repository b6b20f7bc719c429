"""The metadata benches still run end to end: tiny sizes, real processes, their JSON checked.

They run as the scripts they are (``bench/`` is not a package), so a broken import, CLI or
cluster start-up shows here rather than in the next full run. etcd joins the metadata run
when it is installed, which exercises the side-by-side ratios too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).parent.parent / "bench"


def run_bench(script: str, *args: str) -> Any:
    done = subprocess.run([sys.executable, str(BENCH / script), *args, "--json"],
                          capture_output=True, text=True, timeout=150, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_scale_bench_builds_writes_and_loads_a_snapshot(tmp_path: Path) -> None:
    summary = run_bench("scale.py", "--sizes", "1000,2500", "--per-topic", "100",
                        "--dir", str(tmp_path))
    rows = summary["sizes"]
    assert [r["partitions"] for r in rows] == [1000, 2500]
    assert [r["topics"] for r in rows] == [10, 25]
    for row in rows:
        assert row["partitions_built"] == row["partitions_loaded"] == row["partitions"]
        assert row["snapshot_bytes"] > 100 * row["partitions"]  # a PartitionRecord each
        assert row["snapshot_write_s"] >= 0 and row["snapshot_load_s"] >= 0
    assert rows[1]["snapshot_bytes"] > rows[0]["snapshot_bytes"]


@pytest.mark.timeout(180)
def test_metadata_bench_writes_and_propagation(tmp_path: Path) -> None:
    systems = "pykraft,etcd" if shutil.which("etcd") else "pykraft"
    summary = run_bench("metadata.py", "--systems", systems, "--seconds", "0.5",
                        "--warmup", "0.2", "--concurrency", "1,4", "--topics", "2",
                        "--partitions", "1", "--propagation-brokers", "2",
                        "--dir", str(tmp_path))
    for name in systems.split(","):
        levels = summary["writes"][name]["levels"]
        assert [level["concurrency"] for level in levels] == [1, 4]
        assert all(level["writes_per_s"] > 0 and level["errors"] == 0 for level in levels)
    if "etcd" in systems:
        assert set(summary["ratios"]["etcd"]) >= {"writes_c1", "p50_c4", "p99_c4"}
    propagation = summary["propagation"]
    assert propagation["topics"] == 2 and propagation["brokers"] == 2
    assert propagation["one_broker_ms"]["median"] > 0
    # The slowest broker of the slowest topic bounds every single broker's delay.
    assert propagation["all_brokers_ms"]["max"] >= propagation["one_broker_ms"]["p99"]
