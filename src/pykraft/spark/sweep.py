"""Simulation sweeps fanned out over Spark executors, one Parquet row per run.

Each Spark task runs a contiguous batch of (scenario, seed) pairs, because a task costs
tens of milliseconds of scheduling while a run costs about as much: batches keep Spark's
overhead small. Runs are pure functions of (scenario, seed), so Spark's task retries and
speculative copies cannot change the results.

The per-run facts RunResult does not carry (simulated time to the first leader and to
recovery, committed offsets) are observed from outside the simulator: the trace callback
sees every state transition and kill with its simulated time, and a wrapping client
factory sees every node's state machine. Neither touches the simulation's randomness.
"""

from __future__ import annotations

import functools
import math
import traceback
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pykraft.raft.client import RaftClient
from pykraft.sim.runner import RunResult, run_scenario
from pykraft.sim.state_machine import CounterMachine

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

SCHEMA_DDL = (
    "scenario STRING, seed BIGINT, outcome STRING, violated_invariant STRING, "
    "violation STRING, events BIGINT, elections BIGINT, simulated_ms BIGINT, wall_s DOUBLE, "
    "first_leader_ms BIGINT, recovery_ms BIGINT, commit_count BIGINT"
)
COLUMNS = tuple(part.split()[0] for part in SCHEMA_DDL.split(", "))
OK, VIOLATION, ERROR = "ok", "violation", "error"
DEFAULT_SEEDS_PER_TASK = 25
_CALM_STATES = ("Follower", "Leader")


class RunObserver:
    """Reads the trace: when the first leader appeared, when the first fault after it was
    seen (a kill, or a node leaving Follower/Leader), when a later epoch's leader arrived."""

    def __init__(self) -> None:
        self.first_leader_ms: int | None = None
        self.first_epoch = -1
        self.fault_ms: int | None = None
        self.recovered_ms: int | None = None

    def __call__(self, line: str) -> None:
        if "node" not in line:
            return  # the common case: a plain event label
        now_text, _, text = line.strip().partition(" ")
        if text.startswith("kill node"):
            self._fault(int(now_text))
        elif text.startswith("node ") and " -> " in text:
            state, _, epoch = text.rpartition(" -> ")[2].partition("@")
            self._transition(int(now_text), state, int(epoch))

    def _fault(self, now: int) -> None:
        if self.first_leader_ms is not None and self.fault_ms is None:
            self.fault_ms = now

    def _transition(self, now: int, state: str, epoch: int) -> None:
        if state == "Leader":
            if self.first_leader_ms is None:
                self.first_leader_ms, self.first_epoch = now, epoch
            elif self.recovered_ms is None and self.fault_ms is not None and \
                    epoch > self.first_epoch:
                self.recovered_ms = now
        elif state not in _CALM_STATES:
            self._fault(now)

    @property
    def recovery_ms(self) -> int | None:
        if self.recovered_ms is None or self.fault_ms is None:
            return None
        return self.recovered_ms - self.fault_ms


def observed_run(scenario: str, seed: int) -> dict[str, Any]:
    """One run as a row; an exception becomes an ``error`` row so one bad seed cannot abort
    a sweep of thousands."""
    observer = RunObserver()
    machines: list[CounterMachine] = []

    def client_factory(*args: Any, **kwargs: Any) -> RaftClient:
        machines.extend(a for a in args if isinstance(a, CounterMachine))
        return RaftClient(*args, **kwargs)

    try:
        result = run_scenario(scenario, seed, client_factory=client_factory, trace=observer)
    except Exception:
        return dict.fromkeys(COLUMNS) | {"scenario": scenario, "seed": seed, "outcome": ERROR,
                                         "violation": traceback.format_exc(limit=5)}
    invariant = result.violation.partition(":")[0] if result.violation else None
    return {
        "scenario": scenario, "seed": seed, "outcome": VIOLATION if invariant else OK,
        "violated_invariant": invariant, "violation": result.violation,
        "events": result.events, "elections": result.elections,
        "simulated_ms": result.simulated_ms, "wall_s": result.wall_s,
        "first_leader_ms": observer.first_leader_ms, "recovery_ms": observer.recovery_ms,
        "commit_count": max((m.next_offset for m in machines), default=0),
    }


def task_of(index: int, names: Sequence[str], seeds: range) -> tuple[str, int]:
    """The index-th (scenario, seed) pair, scenarios outermost as in the local sweep."""
    return names[index // len(seeds)], seeds[index % len(seeds)]


def _run_arrow_batches(batches: Iterator[pa.RecordBatch], names: Sequence[str],
                       seeds: range) -> Iterator[pa.RecordBatch]:
    """mapInArrow body, on executors: ids in, one row per run out."""
    import pyarrow as pa

    for batch in batches:
        out = [observed_run(*task_of(i, names, seeds)) for i in batch.column("id").to_pylist()]
        yield pa.RecordBatch.from_pylist(out, schema=_arrow_schema())


def _arrow_schema() -> pa.Schema:
    import pyarrow as pa

    types = {"STRING": pa.string(), "BIGINT": pa.int64(), "DOUBLE": pa.float64()}
    return pa.schema([(name, types[sql]) for name, sql in
                      (part.split() for part in SCHEMA_DDL.split(", "))])


def spark_sweep(spark: SparkSession, names: Sequence[str], seeds: range, out: str, *,
                seeds_per_task: int = DEFAULT_SEEDS_PER_TASK) -> list[dict[str, Any]]:
    """Run every (scenario, seed) pair on the executors, write ``out`` (Parquet, one file),
    and return the rows in task order. Works in classic mode and over Spark Connect."""
    total = len(names) * len(seeds)
    if total == 0:
        raise ValueError("nothing to sweep: no scenarios or an empty seed range")
    tasks = max(1, math.ceil(total / seeds_per_task))
    body = functools.partial(_run_arrow_batches, names=list(names), seeds=seeds)
    runs = spark.range(0, total, 1, numPartitions=tasks).mapInArrow(body, SCHEMA_DDL)
    # repartition, not coalesce: coalesce(1) would run the whole sweep in one task.
    runs.repartition(1).write.mode("overwrite").parquet(out)
    written = spark.read.parquet(out).collect()
    order = {task_of(i, names, seeds): i for i in range(total)}
    result = [row.asDict() for row in written]
    return sorted(result, key=lambda r: order[(r["scenario"], r["seed"])])


def run_result(row: dict[str, Any]) -> RunResult:
    """The local sweep's record of a row, so both sweeps share one summary."""
    violation = row["violation"] if row["outcome"] != OK else None
    return RunResult(row["scenario"], row["seed"], violation, row["events"] or 0,
                     row["elections"] or 0, row["simulated_ms"] or 0, row["wall_s"] or 0.0)


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Nearest-rank percentile (the value a fraction of runs did not exceed); None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def timing_percentiles(rows: Sequence[dict[str, Any]],
                       fractions: Sequence[float] = (0.5, 0.9, 0.99)) -> list[list[str]]:
    """Per scenario: runs measured and p50/p90/p99/max of time to first leader and to
    recovery, in simulated ms, as table cells ("-" where nothing was measured)."""
    table: list[list[str]] = []
    by_name: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_name.setdefault(row["scenario"], []).append(row)
    for name, runs in by_name.items():
        cells = [name]
        for column in ("first_leader_ms", "recovery_ms"):
            values = [r[column] for r in runs if r[column] is not None]
            cells.append(str(len(values)))
            cells += [_cell(percentile(values, f)) for f in (*fractions, 1.0)]
        table.append(cells)
    return table


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"
