"""A Spark sweep of a few hundred seeds gives the local sweep's results, timings and
commit counts included."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from pykraft.sim.runner import RunResult, sweep
from pykraft.sim.sweep_stats import timing_percentiles
from pykraft.spark.sweep import COLUMNS, run_result, spark_sweep

pytestmark = pytest.mark.spark
NAMES = ["initial-election", "all-killed"]
SEEDS = range(1000, 1150)


def test_spark_sweep_matches_local_sweep(spark: SparkSession, tmp_path: Path) -> None:
    out = str(tmp_path / "sweep.parquet")
    rows = spark_sweep(spark, NAMES, SEEDS, out, seeds_per_task=40)
    local = sorted(sweep([(n, s) for n in NAMES for s in SEEDS], workers=2),
                   key=lambda r: (NAMES.index(r.scenario), r.seed))
    assert len(rows) == len(local) == 300

    def facts(r: RunResult) -> RunResult:
        return dataclasses.replace(r, wall_s=0.0)  # the only fact that is not deterministic
    remote = [run_result(r) for r in rows]
    assert [facts(r) for r in remote] == [facts(r) for r in local]
    assert timing_percentiles(remote) == timing_percentiles(local)
    written = pq.read_table(out)
    assert written.num_rows == 300 and tuple(written.column_names) == COLUMNS
    assert all(r.first_leader_ms is not None and r.commit_count > 0 for r in local)
    killed = [r for r in local if r.scenario == "all-killed"]
    assert all(r.recovery_ms is not None for r in killed)
