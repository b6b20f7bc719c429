"""A Spark sweep of a few hundred seeds gives the local sweep's results."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from pykraft.sim.runner import sweep
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

    def facts(r: object) -> tuple[object, ...]:
        return tuple(getattr(r, f) for f in ("scenario", "seed", "violation", "events",
                                             "elections", "simulated_ms"))
    assert [facts(run_result(r)) for r in rows] == [facts(r) for r in local]
    written = pq.read_table(out)
    assert written.num_rows == 300 and tuple(written.column_names) == COLUMNS
    assert all(r["first_leader_ms"] is not None for r in rows)
    killed = [r for r in rows if r["scenario"] == "all-killed"]
    assert all(r["recovery_ms"] is not None for r in killed)
