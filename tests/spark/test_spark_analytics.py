"""The analytics job on a recorded cluster history (see cluster_history.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from cluster_history import EXPECTED
from pyspark.sql import SparkSession

from pykraft.spark import analytics, report

pytestmark = pytest.mark.spark


def test_tables_and_report(spark: SparkSession, history: Path, tmp_path: Path) -> None:
    inputs = analytics.cluster_inputs([str(history), str(history)])
    assert [i.name for i in inputs] == ["demo-cluster", "demo-cluster-2"]
    tables = analytics.build_tables(analytics.load_records(spark, inputs))
    analytics.write_tables(tables, tmp_path)
    data = report.collect(tables)
    html = report.render(data)
    (tmp_path / "report.html").write_text(html)

    def table(name: str) -> list[dict[str, Any]]:
        rows = pq.read_table(tmp_path / name).to_pylist()
        return [r for r in rows if r["cluster"] == "demo-cluster"]

    assert set(analytics.TABLES) <= {p.name for p in tmp_path.iterdir()}
    leaders = sorted((r["epoch"], r["leader"]) for r in table("controller_leaders"))
    assert tuple(leaders) == EXPECTED.controller_leaders
    topics = {r["topic_name"]: r for r in table("topics")}
    assert set(topics) == set(EXPECTED.topics)
    assert [n for n, r in topics.items() if r["removed_offset"] is not None] == list(
        EXPECTED.removed_topics)
    timeline = sorted(table("topic_timeline"), key=lambda r: r["offset"])
    assert max(r["partitions"] for r in timeline) == EXPECTED.partitions
    assert (timeline[-1]["topics"], timeline[-1]["partitions"]) == (1, 3)
    orders0 = sorted((r for r in table("partition_changes")
                      if r["topic_name"] == "orders" and r["partition_id"] == 0),
                     key=lambda r: r["offset"])
    leaders_0 = [r["leader"] for r in orders0]
    assert tuple(dict.fromkeys(leaders_0)) == (101, 102)  # distinct, in order
    assert [r["leader"] for r in orders0 if r["leader_changed"]] == [102, 101]
    assert orders0[0]["leader"] == EXPECTED.orders_0_leaders[0]
    fenced_after_start = {r["broker_id"] for r in table("fencing_periods")
                          if r["cause"] != "registered"}
    assert fenced_after_start == set(EXPECTED.fenced_brokers)
    assert all(r["until"] is not None for r in table("fencing_periods"))
    voter_sets = [tuple(r["voter_ids"]) for r in sorted(table("voter_changes"),
                                                        key=lambda r: r["offset"])]
    assert tuple(voter_sets) == EXPECTED.voter_sets
    # node 3 lags: the history tables must come from the longest replica
    assert {r["log_dirs"] for r in data["summary"]} == {3}
    assert html.count("<svg") == 2 * 5 and "Cluster demo-cluster-2" in html
