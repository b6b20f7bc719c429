"""bench/groups.py still runs end to end in ``--quick`` mode (1 broker, 2 rebalances of each
kind, 1 and 2 committers for a second through pykraft's client, then confluent-kafka): its
JSON has every figure, each positive where it is a duration or a rate. Timing is never
asserted; the full run is by hand (docs/bench.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "bench" / "groups.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=120, check=False)


def test_arguments_are_checked() -> None:
    for bad in (["--brokers", "2"], ["--rounds", "0"], ["--committers", "0"],
                ["--heartbeat-interval-ms", "6000"]):
        done = run(*bad)
        assert done.returncode == 2, bad
        assert "error:" in done.stderr


def test_quick_run_reports_rebalances_and_commits(tmp_path: Path) -> None:
    done = run("--quick", "--json", "--dir", str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["brokers"] == 1 and summary["members"] == 3
    assert summary["session_timeout_ms"] == 3000
    leave, crash = summary["rebalances"]
    assert (leave["kind"], crash["kind"]) == ("leave", "crash")
    for kind in (leave, crash):
        assert kind["rounds"] == len(kind["gaps_ms"]) == 2
        assert all(gap > 0 for gap in kind["gaps_ms"])
        assert 0 < kind["gap"]["p50_ms"] <= kind["gap"]["p99_ms"] <= kind["gap"]["max_ms"]
        assert kind["detect"]["max_ms"] <= kind["gap"]["max_ms"]
    assert "past_session_timeout" in crash and "past_session_timeout" not in leave
    assert [row["committers"] for row in summary["commits"]] == [1, 2]
    for row in summary["commits"]:
        assert row["commits_per_s"] > 0 and row["api_versions_per_s"] > 0
        assert abs(row["offsets_per_s"] - row["commits_per_s"] * 6) < 1  # 6 per commit
        assert row["commit_p50_ms"] > 0 and row["commits_over_api_versions"] > 0
        assert row["rdkafka_commits_per_s"] > 0 and row["rdkafka_commit_p50_ms"] > 0
