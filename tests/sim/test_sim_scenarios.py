"""Every scenario over many seeds with zero violations (CI tunes the count).

``PYKRAFT_SIM_SEEDS`` (default 100) seeds per scenario, ``PYKRAFT_SIM_WORKERS`` (default 2)
processes.
"""

from __future__ import annotations

import os

import pytest

from pykraft.sim.runner import RunResult, sweep
from pykraft.sim.scenarios import SCENARIOS

SEEDS = int(os.environ.get("PYKRAFT_SIM_SEEDS", "100"))
# The whole sweep runs in the module fixture, inside the first test's time limit: give it room
# beyond the suite's 300 s default (every run is itself bounded in events and simulated time).
pytestmark = pytest.mark.timeout(2400)
WORKERS = int(os.environ.get("PYKRAFT_SIM_WORKERS", "2"))


@pytest.fixture(scope="module")
def results() -> list[RunResult]:
    tasks = [(name, seed) for name in SCENARIOS for seed in range(SEEDS)]
    return list(sweep(tasks, WORKERS))


@pytest.mark.slow
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_scenario_has_no_violation(results: list[RunResult], scenario: str) -> None:
    runs = [r for r in results if r.scenario == scenario]
    assert len(runs) == SEEDS
    failures = [f"seed {r.seed}: {r.violation} ({r.replay_command})"
                for r in runs if r.violation]
    assert failures == []
    assert all(r.elections >= 1 for r in runs)
