"""bench/security.py still runs end to end, tiny (1 broker, 2,000 records, 20 metadata
writes, 5 connections on each cluster): its JSON has every figure for both the PLAINTEXT and
the SASL_SSL cluster, each positive, and their ratios. Timing is never asserted; the full
run is by hand (docs/bench.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent.parent / "bench" / "security.py"
FIGURES = {"produce_mb_s", "produce_records_s", "client_cpu", "write_p50_ms", "write_p99_ms",
           "connect_p50_ms", "connect_p99_ms"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=180, check=False)


def test_arguments_are_checked() -> None:
    for bad in (["--count", "0"], ["--brokers", "0"], ["--writes", "-1"]):
        done = run(*bad)
        assert done.returncode == 2, bad
        assert "must be positive" in done.stderr


@pytest.mark.timeout(200)
def test_a_tiny_run_reports_both_clusters_and_their_ratios(tmp_path: Path) -> None:
    done = run("--brokers", "1", "--count", "2000", "--size", "100", "--writes", "20",
               "--connects", "5", "--json", "--dir", str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert set(report["modes"]) == {"PLAINTEXT", "SASL_SSL"}
    for figures in report["modes"].values():
        assert set(figures) == FIGURES
        assert all(value > 0 for value in figures.values())
        assert figures["write_p50_ms"] <= figures["write_p99_ms"]
    assert set(report["ratios"]) == FIGURES
    assert list(tmp_path.iterdir()) == []  # both clusters deleted
