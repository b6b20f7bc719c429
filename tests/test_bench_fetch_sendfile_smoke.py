"""bench/fetch_sendfile.py still runs end to end (tiny sizes, its JSON checked): both Fetch
paths answer every byte of the log (correctness of the harness, not timing)."""

from __future__ import annotations

from test_bench_smoke import run_bench


def test_the_fetch_bench_serves_the_log_both_ways() -> None:
    summary = run_bench("fetch_sendfile.py", "--mib", "2", "--rounds", "1", "--repeat", "1")
    rows = {row["path"]: row for row in summary["results"]}
    assert set(rows) == {"buffered", "sendfile"}
    assert rows["buffered"]["gb"] == rows["sendfile"]["gb"] > 2 * 1000 * 1024 / 1e9
    assert all(row["mb_s"] > 0 and row["cpu_s_per_gb"] >= 0 for row in rows.values())
