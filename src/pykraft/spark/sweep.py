"""Simulation sweeps fanned out over Spark executors, one Parquet row per run.

Each Spark task runs a contiguous batch of (scenario, seed) pairs, because a task costs
tens of milliseconds of scheduling while a run costs about as much: batches keep Spark's
overhead small. Runs are pure functions of (scenario, seed), so Spark's task retries and
speculative copies cannot change the results.

A row carries everything RunResult carries (times to the first leader and to recovery,
commit count included), so both sweeps print one summary from the same facts.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import traceback
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pykraft.sim.runner import RunResult, run_scenario

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

SCHEMA_DDL = (
    "scenario STRING, seed BIGINT, outcome STRING, violated_invariant STRING, "
    "violation STRING, events BIGINT, elections BIGINT, simulated_ms BIGINT, wall_s DOUBLE, "
    "first_leader_ms BIGINT, recovery_ms BIGINT, commit_count BIGINT, "
    "trace_digest STRING"
)
COLUMNS = tuple(part.split()[0] for part in SCHEMA_DDL.split(", "))
OK, VIOLATION, ERROR = "ok", "violation", "error"
DEFAULT_SEEDS_PER_TASK = 25


def observed_run(scenario: str, seed: int) -> dict[str, Any]:
    """One run as a row; an exception becomes an ``error`` row so one bad seed cannot abort
    a sweep of thousands."""
    try:
        result = run_scenario(scenario, seed)
    except Exception:
        return dict.fromkeys(COLUMNS) | {"scenario": scenario, "seed": seed, "outcome": ERROR,
                                         "violation": traceback.format_exc(limit=5)}
    invariant = result.violation.partition(":")[0] if result.violation else None
    return dataclasses.asdict(result) | {
        "outcome": VIOLATION if invariant else OK, "violated_invariant": invariant}


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
                     row["elections"] or 0, row["simulated_ms"] or 0, row["wall_s"] or 0.0,
                     row["first_leader_ms"], row["recovery_ms"], row["commit_count"] or 0,
                     row["trace_digest"] or "")
