"""Run one scenario for one seed and summarise it; used by the CLI, tests and sweeps."""

from __future__ import annotations

import multiprocessing
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pykraft.raft.client import RaftClient
from pykraft.sim.cluster import ClientFactory, Cluster
from pykraft.sim.scenarios import SCENARIOS
from pykraft.sim.state_machine import InvariantViolation


@dataclass(frozen=True, slots=True)
class RunResult:
    scenario: str
    seed: int
    violation: str | None  # "Invariant: detail"
    events: int
    elections: int
    simulated_ms: int
    wall_s: float

    @property
    def replay_command(self) -> str:
        return f"pykraft sim run --scenario {self.scenario} --seed {self.seed} --trace"


def run_scenario(
    name: str, seed: int, *, client_factory: ClientFactory = RaftClient,
    trace: Callable[[str], None] | None = None,
) -> RunResult:
    """Build the cluster the seed describes, drive the scenario, report what happened."""
    scenario = SCENARIOS[name]
    shape_rng = random.Random(f"{name}:{seed}")
    voters, observers = scenario.shape(shape_rng)
    kip853 = scenario.kip853 if scenario.kip853 is not None else shape_rng.random() < 0.5
    cluster = Cluster(seed, voters, observers, client_factory=client_factory,
                      lossy=scenario.lossy_network, trace=trace, kip853=kip853)
    cluster.invariants.extend(scenario.invariants())
    started = time.perf_counter()
    violation = None
    try:
        scenario.drive(cluster, shape_rng)
    except InvariantViolation as exc:
        violation = str(exc)
    return RunResult(name, seed, violation, cluster.events, cluster.elections,
                     cluster.queue.now_ms, time.perf_counter() - started)


def _run_task(task: tuple[str, int]) -> RunResult:
    return run_scenario(*task)


def sweep(tasks: list[tuple[str, int]], workers: int) -> Iterator[RunResult]:
    """Run (scenario, seed) pairs in ``workers`` processes; results arrive as they finish."""
    if workers <= 1:
        yield from map(_run_task, tasks)
        return
    with multiprocessing.Pool(workers) as pool:
        yield from pool.imap_unordered(_run_task, tasks, chunksize=4)
