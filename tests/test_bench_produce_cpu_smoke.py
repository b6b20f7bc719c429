"""bench/produce_cpu.py still runs end to end (a few MB, its JSON checked): every request
acknowledged at acks=all and the brokers' CPU counted (the harness, not timing)."""

from __future__ import annotations

from pathlib import Path

from test_bench_smoke import run_bench


def test_the_produce_cpu_bench_produces_and_counts(tmp_path: Path) -> None:
    summary = run_bench("produce_cpu.py", "--mb", "2", "--records", "16", "--dir",
                        str(tmp_path / "cluster"))
    assert summary["request_bytes"] > 16 * 1000
    assert summary["produced_bytes"] >= 2 * 10**6 - 3 * summary["request_bytes"]
    assert summary["broker_cpu_s"] > 0 and summary["cpu_s_per_gb"] > 0
