"""Per-run facts of a sweep (first leader, recovery, commit count) and their percentiles,
computed without Spark; the Spark rows carry the same facts."""

from __future__ import annotations

import dataclasses

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.sim.runner import RunObserver, RunResult, run_scenario
from pykraft.sim.sweep_stats import percentile, timing_percentiles
from pykraft.spark.sweep import observed_run, run_result, task_of


def _facts(result: RunResult) -> RunResult:
    return dataclasses.replace(result, wall_s=0.0)


@pytest.mark.parametrize(("scenario", "seed"), [("initial-election", 3), ("leader-failure", 1),
                                                ("leader-partitioned", 2)])
def test_run_result_has_timings_and_commits(scenario: str, seed: int) -> None:
    result = run_scenario(scenario, seed)
    assert result.violation is None and result.first_leader_ms is not None
    assert 0 < result.first_leader_ms <= result.simulated_ms
    assert result.commit_count > 0  # every scenario commits workload records
    if scenario != "initial-election":
        assert result.recovery_ms is not None and result.recovery_ms >= 0
    else:
        assert result.recovery_ms is None
    assert _facts(run_scenario(scenario, seed)) == _facts(result)  # deterministic


@pytest.mark.parametrize(("scenario", "seed"), [("all-killed", 5), ("leader-failure", 1)])
def test_spark_row_round_trips_to_the_local_result(scenario: str, seed: int) -> None:
    row = observed_run(scenario, seed)
    assert row["outcome"] == "ok" and row["violated_invariant"] is None
    assert _facts(run_result(row)) == _facts(run_scenario(scenario, seed))


def test_a_user_trace_still_sees_every_line() -> None:
    lines: list[str] = []
    traced = run_scenario("leader-failure", 1, trace=lines.append)
    assert len([ln for ln in lines if " -> Leader@" in ln]) == traced.elections
    assert _facts(traced) == _facts(run_scenario("leader-failure", 1))


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
    runs = [RunResult("a", s, None, 1, 1, 1, 0.0, first_leader_ms=v)
            for s, v in enumerate((10, 30, 20))]
    assert timing_percentiles(runs) == [["a", "3", "20", "30", "30", "30",
                                         "0", "-", "-", "-", "-"]]


def test_local_sweep_prints_the_percentiles() -> None:
    result = CliRunner().invoke(app, ["sim", "sweep", "--scenario", "leader-failure",
                                      "--seeds", "1:4"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "first leader | recovery" in result.output
    row = next(ln for ln in result.output.splitlines() if "leader-failure" in ln
               and "│" in ln and "p50" not in ln and ln.count("│") > 10)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[1] == "3" and cells[6] == "3"  # all three runs measured both timings
