"""bench/dataplane.py --replicas 3 still runs end to end for pykraft: 1 controller + 3
brokers, topics RF=3 with min.insync.replicas=2, tiny counts, acks=all then acks=1, its JSON
checked. The peers' clusters (JetStream, RabbitMQ) take minutes and install packages, so they
run by hand (docs/bench.md); this keeps the harness they share from rotting."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "bench" / "dataplane.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=120, check=False)


def test_only_one_or_three_replicas() -> None:
    done = run("--replicas", "2")
    assert done.returncode == 2
    assert "--replicas" in done.stderr


def test_pykraft_rf3_acks_all_then_acks_1(tmp_path: Path) -> None:
    done = run("--systems", "pykraft", "--replicas", "3", "--count-100", "300",
               "--count-1k", "100", "--rate", "50", "--latency-seconds", "1",
               "--dir", str(tmp_path), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["replicas"] == 3
    rows = summary["systems"]
    assert [r["name"] for r in rows] == ["pykraft acks=all", "pykraft acks=1"]
    assert "RF=3, acks=all" in rows[0]["durability"]
    assert "RF=3, acks=1" in rows[1]["durability"]
    for row in rows:
        assert row["sizes"]["100"]["count"] == 300
        assert row["sizes"]["1024"]["count"] == 100
        for size in row["sizes"].values():
            assert size["produce_mb_s"] > 0 and size["consume_mb_s"] > 0
        assert row["latency"]["received"] == row["latency"]["sent"] == 50
