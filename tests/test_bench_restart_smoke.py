"""bench/restart.py still runs end to end on a tiny log: fill, kill -9, restart from the saved
crash state, the three times measured (correctness of the harness, not timing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parent.parent / "bench" / "restart.py"


@pytest.mark.timeout(300)
def test_restart_bench_measures_pykraft_after_kill_9(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--systems", "pykraft", "--bytes", "2M",
         "--partitions", "3", "--rounds", "2", "--no-compile", "--dir", str(tmp_path),
         "--json"], capture_output=True, text=True, timeout=280, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert [(r["system"], r["round"]) for r in summary["rounds"]] == [
        ("pykraft", 0), ("pykraft", 1)]
    for r in summary["rounds"]:
        times = r["times"]
        assert 0 < times["listening_s"] <= times["unfenced_s"] <= times["produced_s"]
    assert set(summary["medians"]) == {"pykraft"}
    assert list(tmp_path.iterdir()) == []  # its data directories removed
