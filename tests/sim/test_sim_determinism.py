"""A seed must replay the exact same run; the CLI replays and sweeps."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.sim import runner as sim_runner
from pykraft.sim.runner import RunResult, run_scenario
from pykraft.sim.scheduler import EventQueue


def test_same_seed_same_run() -> None:
    traces: list[list[str]] = [[], []]
    results = [run_scenario("leader-failure", 7, trace=trace.append) for trace in traces]
    assert traces[0] == traces[1]
    assert (results[0].events, results[0].simulated_ms) == (results[1].events,
                                                             results[1].simulated_ms)


def test_different_seeds_differ() -> None:
    a = run_scenario("leader-failure", 1)
    b = run_scenario("leader-failure", 2)
    assert (a.events, a.simulated_ms) != (b.events, b.simulated_ms)


def test_event_queue_orders_by_time_then_insertion() -> None:
    queue = EventQueue()
    seen: list[str] = []
    for at, label in [(5, "b"), (1, "a"), (5, "c")]:
        queue.schedule(at, label, lambda label=label: seen.append(label))  # type: ignore[misc]
    while (event := queue.pop()) is not None:
        event[1]()
    assert seen == ["a", "b", "c"]
    assert queue.now_ms == 5


def test_cli_run_prints_trace_and_summary() -> None:
    result = CliRunner().invoke(app, ["sim", "run", "--scenario", "leader-failure",
                                      "--seed", "3", "--trace"])
    assert result.exit_code == 0, result.output
    assert "-> Leader@" in result.output
    assert "leader-failure seed 3:" in result.output


def test_cli_sweep_summarises() -> None:
    result = CliRunner().invoke(app, ["sim", "sweep", "--scenario", "initial-election",
                                      "--seeds", "0:3"])
    assert result.exit_code == 0, result.output
    assert "3 runs, 0 violations" in result.output


def test_cli_sweep_json_is_in_task_order_and_replays(tmp_path: Path) -> None:
    """Two workers finish out of order; the file must not, and a seed's digest is its run's."""
    out = tmp_path / "sweep.jsonl"
    result = CliRunner().invoke(app, ["sim", "sweep", "--scenario", "leader-failure",
                                      "--seeds", "0:6", "--workers", "2", "--json", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["seed"] for row in rows] == list(range(6))
    assert "wall_s" not in rows[0]
    assert rows[3]["trace_digest"] == run_scenario("leader-failure", 3).trace_digest
    assert len({row["trace_digest"] for row in rows}) == 6


def test_cli_rejects_unknown_scenario() -> None:
    result = CliRunner().invoke(app, ["sim", "run", "--scenario", "nope", "--seed", "1"])
    assert result.exit_code != 0


def test_cli_sweep_reports_a_violation_with_its_replay_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broken = RunResult("leader-failure", 42, "SingleLeader: epoch 3 has leaders 1 and 2",
                       events=10, elections=2, simulated_ms=1000, wall_s=0.1)

    def fake_sweep(tasks: list[tuple[str, int]], workers: int) -> Iterator[RunResult]:
        yield broken

    monkeypatch.setattr(sim_runner, "sweep", fake_sweep)  # the command imports it late
    result = CliRunner().invoke(app, ["sim", "sweep", "--scenario", "leader-failure",
                                      "--seeds", "42:43"])
    assert result.exit_code == 1
    assert "SingleLeader" in result.output
    assert "pykraft sim run --scenario leader-failure --seed 42 --trace" in result.output
