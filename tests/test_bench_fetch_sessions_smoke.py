"""bench/fetch_sessions.py still runs end to end (pykraft only, tiny topics, its JSON
checked): an idle incremental fetch moves fewer bytes than a full one, the same few bytes
whatever the partition count."""

from __future__ import annotations

from test_bench_smoke import run_bench


def test_the_fetch_sessions_bench_measures_idle_fetches() -> None:
    rows = run_bench("fetch_sessions.py", "--systems", "pykraft", "--partitions", "1,10",
                     "--fetches", "2")["pykraft"]
    assert set(rows) == {"1", "10"}
    assert rows["1"]["incremental_idle"] == rows["10"]["incremental_idle"]
    assert rows["10"]["full_sessionless"] > rows["1"]["full_sessionless"] > (
        rows["1"]["incremental_idle"])
