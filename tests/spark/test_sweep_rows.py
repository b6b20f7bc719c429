"""Per-run rows of the Spark sweep, computed without Spark."""

from __future__ import annotations

import pytest

from pykraft.sim.runner import run_scenario
from pykraft.spark.sweep import (
    RunObserver,
    observed_run,
    percentile,
    run_result,
    task_of,
    timing_percentiles,
)


@pytest.mark.parametrize(("scenario", "seed"), [("initial-election", 3), ("leader-failure", 1),
                                                ("leader-partitioned", 2)])
def test_observed_run_agrees_with_the_simulator(scenario: str, seed: int) -> None:
    row = observed_run(scenario, seed)
    plain = run_scenario(scenario, seed)
    assert (row["violation"], row["events"], row["elections"], row["simulated_ms"]) == (
        plain.violation, plain.events, plain.elections, plain.simulated_ms)
    assert row["outcome"] == "ok" and row["first_leader_ms"] is not None
    assert row["commit_count"] >= 10  # every scenario commits at least one phase
    if scenario != "initial-election":
        assert row["recovery_ms"] is not None and row["recovery_ms"] >= 0
    else:
        assert row["recovery_ms"] is None


def test_observer_reads_transitions_kills_and_recovery() -> None:
    observer = RunObserver()
    for line in ("     100 tick 0", "    1000 node 0: Candidate@1 -> Leader@1",
                 "    1500 node 1: Follower@1 -> Follower@1", "    5000 kill node 0",
                 "    6000 node 1: Unattached@1 -> Prospective@1",
                 "    7200 node 2: Candidate@2 -> Leader@2"):
        observer(line)
    assert observer.first_leader_ms == 1000
    assert observer.recovery_ms == 2200


def test_an_exception_becomes_an_error_row() -> None:
    row = observed_run("no-such-scenario", 1)
    assert row["outcome"] == "error" and "KeyError" in row["violation"]
    assert run_result(row).violation == row["violation"]


def test_task_order_and_percentiles() -> None:
    names = ["a", "b"]
    assert [task_of(i, names, range(5, 8)) for i in range(6)] == [
        ("a", 5), ("a", 6), ("a", 7), ("b", 5), ("b", 6), ("b", 7)]
    assert percentile(list(range(1, 101)), 0.9) == 90
    assert percentile([], 0.5) is None
    rows = [{"scenario": "a", "first_leader_ms": v, "recovery_ms": None} for v in (10, 30, 20)]
    assert timing_percentiles(rows) == [["a", "3", "20", "30", "30", "30",
                                         "0", "-", "-", "-", "-"]]
