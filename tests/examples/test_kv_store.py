"""examples/kv_store.py, run as a user runs it: three nodes in one process on 127.0.0.1."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "kv_store.py"


def test_the_key_value_store_survives_its_leader_and_a_restart(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(EXAMPLE), "--dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    first, second = (int(n) for n in re.findall(r"^leader: node (\d)", out, re.M)[:2])
    assert f"stopping the leader, node {first}" in out and second != first
    for node in (1, 2, 3):  # every node read the first writes, the stopped one included
        assert f"node {node} reads key0=v0, key1=v1, key2=v2" in out
    survivors = sorted({1, 2, 3} - {first})
    for node in survivors:
        assert f"node {node} reads after=failover, key0=changed" in out
    restarted = re.search(rf"^node {first} started from its snapshot at offset (\d+)", out, re.M)
    assert restarted is not None, out  # a snapshot, not a replay from offset 0
    assert "all 3 nodes agree: True, 8 keys" in out
    assert out.rstrip().endswith("stopped")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["node-1", "node-2", "node-3"]
    assert (tmp_path / f"node-{first}" / "__cluster_metadata-0" / "quorum-state").exists()
